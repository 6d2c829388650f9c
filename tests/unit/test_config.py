"""Configuration precedence and wiring from configuration (SPEC C14)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from docbinder.adapters.inline import InlineTierBlobStore
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.config import Settings
from docbinder.container import Container, build_binder, build_container
from docbinder.domain.errors import ConfigurationError, MissingExtra
from docbinder.domain.model import Principal


def test_embedded_default_lives_under_home(tmp_path: Path) -> None:
    settings = Settings.load({"home": str(tmp_path)}, environ={})
    assert settings.database_url == f"sqlite:///{tmp_path / 'docbinder.db'}"
    assert settings.blob_url == (tmp_path / "blobs").as_uri()
    assert settings.blob_root == tmp_path / "blobs"
    assert settings.authorizer == "roletable"
    assert settings.sources["database_url"] == "default (embedded SQLite)"


@pytest.mark.parametrize("name", ["proj?a", "h%41", "with space", "x#y"])
def test_a_home_whose_path_looks_like_url_syntax_keeps_its_own_database(
    tmp_path: Path, name: str
) -> None:
    from sqlalchemy.engine import make_url

    home = tmp_path / name
    settings = Settings.load({"home": str(home)}, environ={})
    assert settings.sqlite_file == home / "docbinder.db"
    assert make_url(settings.database_url).database == str(home / "docbinder.db")
    assert settings.blob_root == home / "blobs"


def test_argument_beats_environment_beats_file(tmp_path: Path) -> None:
    config = tmp_path / "docbinder.toml"
    config.write_text(
        '[docbinder]\nblob_url = "memory://"\ndatabase_url = "memory://"\nmax_file_size = 10\n'
    )
    env = {"DOCBINDER_DATABASE_URL": "sqlite:///env.db", "DOCBINDER_HOME": str(tmp_path)}
    settings = Settings.load({"max_file_size": 99}, environ=env, config_file=config)
    assert settings.blob_url == "memory://"  # from the file
    assert settings.database_url == "sqlite:///env.db"  # environment beats the file
    assert settings.max_file_size == 99  # argument beats both
    assert settings.sources == {
        "blob_url": f"config file {config}",
        "database_url": "environment",
        "max_file_size": "argument",
        "home": "environment",
    }


def test_config_file_from_environment(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('authorizer = "casbin"\n')
    settings = Settings.load(
        environ={"DOCBINDER_CONFIG": str(config), "DOCBINDER_HOME": str(tmp_path)}
    )
    assert settings.authorizer == "casbin"


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"database_url": "not a url"}, "database_url"),
        ({"blob_url": "/no/scheme"}, "blob_url"),
        ({"max_file_size": "ten"}, "max_file_size"),
        ({"max_file_size": -1}, "max_file_size"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_settings_name_the_setting(
    tmp_path: Path, overrides: dict[str, object], needle: str
) -> None:
    with pytest.raises(ConfigurationError, match=needle):
        Settings.load({"home": str(tmp_path), **overrides}, environ={})


def test_bad_config_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("database_url = [")
    with pytest.raises(ConfigurationError, match="not valid TOML"):
        Settings.load(environ={}, config_file=bad)
    with pytest.raises(ConfigurationError, match="cannot read config file"):
        Settings.load(environ={}, config_file=tmp_path / "missing.toml")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('databse_url = "memory://"\n')
    with pytest.raises(ConfigurationError, match="databse_url"):
        Settings.load(environ={}, config_file=unknown)


def test_selector_picks_adapters_from_urls(tmp_path: Path) -> None:
    memory = build_container(
        Settings.load(
            {"database_url": "memory://", "blob_url": "memory://", "home": str(tmp_path)},
            environ={},
        )
    )
    assert isinstance(memory.metadata(), MemoryMetadataStore)
    tier = memory.blobs()
    assert isinstance(tier, InlineTierBlobStore)
    assert isinstance(tier.bulk, MemoryBlobStore)
    assert tier.inline_limit == 65536  # the default: small files in the metadata database
    assert isinstance(memory.authorizer(), RoleTableAuthorizer)
    disk = build_container(
        Settings.load(
            {"database_url": "memory://", "blob_url": (tmp_path / "b").as_uri()}, environ={}
        )
    )
    store = disk.blobs()
    assert isinstance(store, InlineTierBlobStore)
    assert isinstance(store.bulk, LocalDiskBlobStore)
    assert store.bulk.root == tmp_path / "b"
    off = build_container(
        Settings.load(
            {"database_url": "memory://", "blob_url": "memory://", "inline_blob_limit": "0"},
            environ={},
        )
    )
    assert off.blobs().inline_limit == 0


@pytest.mark.parametrize("raw", ["-1", "1048577", "64k", "1.5", True])
def test_inline_blob_limit_refuses_what_is_no_byte_count_up_to_1_mib(raw: object) -> None:
    with pytest.raises(ConfigurationError, match="inline_blob_limit must be a whole number"):
        Settings.load({"inline_blob_limit": raw}, environ={})


def test_inline_blob_limit_from_the_environment() -> None:
    settings = Settings.load(environ={"DOCBINDER_INLINE_BLOB_LIMIT": "1048576"})
    assert settings.inline_blob_limit == 1 << 20


def test_memory_binder_runs_the_bridge(tmp_path: Path) -> None:
    binder = build_binder(
        Settings.load({"database_url": "memory://", "blob_url": "memory://"}, environ={})
    )
    run = binder.start_new_run(Principal("u", "m"))
    produced = run.produce_file("a.txt", b"abc")
    assert [p.text for p in run.get_content(produced.reference).parts] == ["abc"]


def test_embedded_binder_creates_its_schema(tmp_path: Path) -> None:
    binder = build_binder(Settings.load({"home": str(tmp_path / "new")}, environ={}))
    run = binder.start_new_run(Principal("u", "m"))
    assert run.produce_file("a.txt", b"abc").document_id is not None
    assert (tmp_path / "new" / "docbinder.db").exists()


def test_missing_wiring_fails_at_start_up() -> None:
    with pytest.raises(Exception, match="settings"):
        Container().check_dependencies()


def test_unknown_plugin_names_the_entry_point_group(tmp_path: Path) -> None:
    settings = Settings.load(
        {"database_url": "memory://", "blob_url": "gcs://bucket/x"}, environ={}
    )
    with pytest.raises(ConfigurationError, match=r"docbinder\.blob_stores"):
        build_binder(settings)


def test_unknown_authorizer_is_a_configuration_error(tmp_path: Path) -> None:
    settings = Settings.load(
        {"database_url": "memory://", "blob_url": "memory://", "authorizer": "nobody"}, environ={}
    )
    with pytest.raises(ConfigurationError, match="nobody"):
        build_binder(settings)


def test_s3_without_boto3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    settings = Settings.load(
        {"database_url": "memory://", "blob_url": "s3://bucket/prefix"}, environ={}
    )
    with pytest.raises(MissingExtra, match=r"pip install -e '\.\[s3\]'"):
        build_binder(settings)


def test_postgres_without_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    settings = Settings.load(
        {"database_url": "postgresql+psycopg://u@127.0.0.1:1/x", "blob_url": "memory://"},
        environ={},
    )
    with pytest.raises(MissingExtra, match=r"pip install -e '\.\[postgres\]'"):
        build_binder(settings, prepare=False)


def test_casbin_is_selected_by_name(tmp_path: Path) -> None:
    from docbinder.adapters.rbac.casbin_authorizer import CasbinAuthorizer

    file_based = build_container(
        Settings.load(
            {"database_url": "memory://", "blob_url": "memory://", "authorizer": "casbin"},
            environ={},
        )
    ).authorizer()
    assert isinstance(file_based, CasbinAuthorizer)
    policy_url = f"sqlite:///{tmp_path / 'policy.db'}"
    sql_based = build_container(
        Settings.load(
            {
                "database_url": "memory://",
                "blob_url": "memory://",
                "authorizer": "casbin",
                "casbin_policy": policy_url,
            },
            environ={},
        )
    ).authorizer()
    assert isinstance(sql_based, CasbinAuthorizer)
    member = Principal("u", "m", None, roles=("member",))
    binder = build_binder(
        Settings.load(
            {"database_url": "memory://", "blob_url": "memory://", "authorizer": "casbin"},
            environ={},
        )
    )
    assert binder.start_new_run(member).produce_file("a.txt", b"a").document_id is not None


class _TicketAuthorizer:
    """A host's own rules: read and create in its mandate, and only for user 'alice'."""

    name = "tickets"

    def is_allowed(self, principal: Principal, action: object, resource: object) -> bool:
        from docbinder.domain.access import Action

        return principal.user_id == "alice" and action in (Action.READ, Action.CREATE)


def test_build_binder_takes_a_host_authorizer_object(tmp_path: Path) -> None:
    from docbinder.domain.errors import AccessDenied

    binder = build_binder(
        database_url="memory://",
        blob_url="memory://",
        home=str(tmp_path),
        authorizer=_TicketAuthorizer(),
    )
    assert binder.authorizer.name == "tickets"
    alice = Principal("alice", "m1", None, roles=())
    stored = binder.start_run(alice).store_file("a.txt", b"a")
    assert binder.get_file(alice, stored.item.id) == stored.item
    with pytest.raises(AccessDenied):
        binder.start_run(Principal("bob", "m1", None, roles=("admin",))).store_file("b.txt", b"b")


def test_build_binder_rejects_an_authorizer_without_is_allowed(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="is_allowed"):
        build_binder(database_url="memory://", blob_url="memory://", authorizer=object())


def test_build_binder_takes_an_authorizer_name(tmp_path: Path) -> None:
    binder = build_binder(
        database_url="memory://", blob_url="memory://", home=str(tmp_path), authorizer="roletable"
    )
    assert isinstance(binder.authorizer, RoleTableAuthorizer)


# -- issue 17 kind 10: explicit arguments win, the environment only where asked


def _memory_settings(tmp_path: Path) -> Settings:
    return Settings.load(
        {"database_url": "memory://", "blob_url": "memory://", "home": str(tmp_path)}, environ={}
    )


def test_explicit_arguments_win_over_settings(tmp_path: Path) -> None:
    from docbinder.adapters.rbac.casbin_authorizer import CasbinAuthorizer
    from docbinder.domain.errors import SizeLimitExceeded

    settings = _memory_settings(tmp_path)
    binder = build_binder(settings, authorizer="casbin", max_file_size=10)
    assert isinstance(binder.authorizer, CasbinAuthorizer)
    assert binder.max_file_size == 10
    run = binder.start_new_run(Principal("u", "m", None, roles=("member",)))
    with pytest.raises(SizeLimitExceeded):
        run.produce_file("big.txt", b"x" * 11)
    assert run.produce_file("ok.txt", b"x" * 10).item.size == 10


def test_a_bad_explicit_argument_is_a_clear_error(tmp_path: Path) -> None:
    settings = _memory_settings(tmp_path)
    with pytest.raises(ConfigurationError, match="max_file_size"):
        build_binder(settings, max_file_size="ten")
    with pytest.raises(ConfigurationError, match="unknown setting"):
        build_binder(settings, max_size=10)
    with pytest.raises(ConfigurationError, match="environ and config_file"):
        build_binder(settings, environ={})


def test_library_call_never_reads_the_environment_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCBINDER_MAX_FILE_SIZE", "3")
    monkeypatch.setenv("DOCBINDER_AUTHORIZER", "nonexistent-authorizer")
    binder = build_binder(database_url="memory://", blob_url="memory://", home=str(tmp_path))
    assert binder.max_file_size is None
    assert isinstance(binder.authorizer, RoleTableAuthorizer)
    import os

    monkeypatch.delenv("DOCBINDER_AUTHORIZER")
    asked = build_binder(
        database_url="memory://", blob_url="memory://", home=str(tmp_path), environ=os.environ
    )
    assert asked.max_file_size == 3


def test_toml_top_level_and_table_are_merged(tmp_path: Path) -> None:
    config = tmp_path / "docbinder.toml"
    config.write_text(
        'max_file_size = 100\n[docbinder]\ndatabase_url = "memory://"\nblob_url = "memory://"\n',
        encoding="utf-8",
    )
    settings = Settings.load(config_file=config, environ={})
    assert (settings.max_file_size, settings.database_url) == (100, "memory://")


def test_toml_with_the_same_key_twice_or_a_foreign_key_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "docbinder.toml"
    config.write_text(
        'database_url = "memory://"\n[docbinder]\ndatabase_url = "sqlite:///x.db"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigurationError, match="database_url set both"):
        Settings.load(config_file=config, environ={})
    config.write_text(
        'max_file_size = 5\n[docbinder]\nmax_file_size = 5\nblob_url = "memory://"\n',
        encoding="utf-8",
    )
    assert Settings.load(config_file=config, environ={}).max_file_size == 5
    config.write_text('[tool]\nx = 1\n[docbinder]\nblob_url = "memory://"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="unknown setting"):
        Settings.load(config_file=config, environ={})


def test_a_home_that_is_a_file_is_refused_with_the_setting_named(tmp_path: Path) -> None:
    taken = tmp_path / "notes.txt"
    taken.write_text("not a directory")
    with pytest.raises(ConfigurationError, match=r"is not a directory.*DOCBINDER_HOME"):
        Settings.load({"home": str(taken)}, environ={})
    # With both URLs given the home is not used, and nothing is refused.
    explicit = {"home": str(taken), "database_url": "memory://", "blob_url": "memory://"}
    assert Settings.load(explicit, environ={}).database_url == "memory://"


# -- the content extractor's budgets are settings like the others

_BUDGETS = {
    "extract_max_bytes": ("4096", 4096),
    "extract_max_text_chars": ("1000", 1000),
    "extract_max_pages": ("20", 20),
    "extract_max_rows": ("5000", 5000),
    "extract_max_decoded_bytes": ("1048576", 1048576),
    "extract_time_budget": ("2.5", 2.5),
    "extract_memory_bytes": ("536870912", 536870912),
}


def test_extractor_budgets_come_from_the_environment_and_reach_the_extractor(
    tmp_path: Path,
) -> None:
    env = {f"DOCBINDER_{name.upper()}": raw for name, (raw, _) in _BUDGETS.items()}
    settings = Settings.load(
        {"database_url": "memory://", "blob_url": "memory://", "home": str(tmp_path)}, environ=env
    )
    for name, (_, value) in _BUDGETS.items():
        assert getattr(settings, name) == value, name
        assert settings.sources[name] == "environment"
    extractor = build_container(settings).extractor()
    for name, (_, value) in _BUDGETS.items():
        attribute = name.removeprefix("extract_")
        assert getattr(extractor, attribute) == value, attribute


def test_extractor_budgets_from_a_config_file_and_arguments(tmp_path: Path) -> None:
    config = tmp_path / "docbinder.toml"
    config.write_text(
        "[docbinder]\nextract_max_pages = 7\nextract_time_budget = 4\nextract_max_rows = 9\n",
        encoding="utf-8",
    )
    settings = Settings.load(
        {"extract_max_rows": 11, "database_url": "memory://", "blob_url": "memory://"},
        environ={},
        config_file=config,
    )
    assert (settings.extract_max_pages, settings.extract_time_budget) == (7, 4.0)
    assert settings.extract_max_rows == 11  # the argument beats the file
    assert settings.extractor_budgets() == {"max_pages": 7, "time_budget": 4.0, "max_rows": 11}


def test_unset_budgets_leave_the_extractor_defaults(tmp_path: Path) -> None:
    from docbinder.adapters.extract import DefaultContentExtractor

    settings = _memory_settings(tmp_path)
    assert settings.extractor_budgets() == {}
    built = build_container(settings).extractor()
    default = DefaultContentExtractor()
    for name in _BUDGETS:
        attribute = name.removeprefix("extract_")
        assert getattr(built, attribute) == getattr(default, attribute), attribute


@pytest.mark.parametrize("name", sorted(_BUDGETS))
@pytest.mark.parametrize("raw", ["0", "-3", "ten", "", "1.5e", "inf", "nan"])
def test_a_bad_budget_is_refused_naming_the_setting(name: str, raw: str, tmp_path: Path) -> None:
    if raw == "":
        # An empty variable counts as not set: the default stays.
        settings = Settings.load({"home": str(tmp_path)}, environ={f"DOCBINDER_{name.upper()}": ""})
        assert getattr(settings, name) is None
        return
    with pytest.raises(ConfigurationError, match=rf"{name} must be .*environment"):
        Settings.load({"home": str(tmp_path)}, environ={f"DOCBINDER_{name.upper()}": raw})


@pytest.mark.parametrize("toml_value", ["true", "2.5", "[1]"])
def test_a_budget_of_the_wrong_type_in_a_file_is_refused(toml_value: str, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f"extract_max_pages = {toml_value}\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"extract_max_pages must be a whole number >= 1"):
        Settings.load({"home": str(tmp_path)}, environ={}, config_file=config)


def test_budgets_set_through_build_binder_cut_the_content(tmp_path: Path) -> None:
    binder = build_binder(
        database_url="memory://",
        blob_url="memory://",
        home=str(tmp_path),
        extract_max_text_chars=5,
    )
    run = binder.start_new_run(Principal("u", "m"))
    produced = run.produce_file("notes.txt", b"abcdefghij")
    [part] = run.get_content(produced.reference).parts
    assert (part.text, part.truncated) == ("abcde", True)
    assert part.truncated_reason == "text is longer than 5 characters"


def test_the_row_budget_cuts_a_workbook(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    from tests import documents

    binder = build_binder(
        database_url="memory://", blob_url="memory://", home=str(tmp_path), extract_max_rows=2
    )
    run = binder.start_new_run(Principal("u", "m"))
    produced = run.produce_file("t.xlsx", documents.xlsx_bytes(sheets=2, rows=3))
    parts = run.get_content(produced.reference).parts
    assert parts[-1].truncated_reason == "the workbook has more than 2 rows"


def test_audit_settings_read_flags_and_durations() -> None:
    """``audit`` is a flag; ``audit_retention`` a duration in seconds or with a unit (B11)."""
    from docbinder.config import Settings
    from docbinder.domain.errors import ConfigurationError

    loaded = Settings.load(environ={"DOCBINDER_AUDIT": "yes", "DOCBINDER_AUDIT_RETENTION": "30d"})
    assert loaded.audit is True and loaded.audit_retention == 30 * 86400
    assert Settings.load(environ={"DOCBINDER_AUDIT_RETENTION": "90"}).audit_retention == 90
    assert Settings.load(environ={}).audit is False
    with pytest.raises(ConfigurationError, match="audit_retention"):
        Settings.load(environ={"DOCBINDER_AUDIT_RETENTION": "soon"})


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///relative.db",
        "sqlite:////abs/dir/file.db",
        "sqlite:///a%20b.db",
        "sqlite+pysqlite:///rel/x.db?timeout=5",
        "sqlite:////tmp/x.db?mode=ro",
        "sqlite://",
        "sqlite:///",
        "sqlite:///:memory:",
        "postgresql+psycopg://u@127.0.0.1/db",
        "mysql+pymysql://root@127.0.0.1/test",
    ],
)
def test_sqlite_file_reads_a_url_as_sqlalchemy_does(url: str) -> None:
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    expected = (
        Path(parsed.database)
        if parsed.get_backend_name() == "sqlite"
        and parsed.database
        and parsed.database != ":memory:"
        else None
    )
    assert Settings.load({"database_url": url}).sqlite_file == expected


@pytest.mark.parametrize(
    ("url", "file"),
    [
        ("sqlite:///file:x.db?uri=true", "x.db"),
        ("sqlite:///file:/tmp/d/x.db?mode=rwc&uri=true", "/tmp/d/x.db"),
        ("sqlite:///file:a%20b.db?uri=true", "a b.db"),
        ("sqlite:///file::memory:?uri=true", None),
    ],
)
def test_sqlite_file_of_a_file_uri_is_its_path(url: str, file: str | None) -> None:
    expected = None if file is None else Path(file)
    assert Settings.load({"database_url": url}).sqlite_file == expected


@pytest.mark.parametrize("raw", ["acme;globex/legal", "acme|globex", "acme globex"])
def test_a_deny_list_with_another_separator_is_refused(raw: str) -> None:
    with pytest.raises(ConfigurationError, match="separate tenants with commas"):
        Settings.load({"provider_uploads_denied": raw})
