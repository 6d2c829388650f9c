"""Runs the authorizer contract against every adapter, plus Casbin-specific checks (SPEC C11).

Adapters: the role table (default), Casbin with the shipped model and policy
files, Casbin with policies in SQL (a temporary SQLite file), and a host
application's own object that only satisfies the port's Protocol.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docbinder.adapters.rbac.casbin_authorizer import (
    POLICY_TOKENS,
    CasbinAuthorizer,
    CasbinObject,
    CasbinSubject,
    shipped_model_text,
    shipped_policy_text,
)
from docbinder.adapters.rbac.roletable import RoleTableAuthorizer
from docbinder.domain.access import Action, Resource, ResourceKind
from docbinder.domain.errors import ConfigurationError, MissingExtra, StorageError
from docbinder.domain.model import Principal
from docbinder.ports.authorizer import Authorizer
from docbinder.testing.authorizer_suite import (
    ALICE,
    BOB,
    FI1,
    AuthorizerContract,
    principal,
    resource,
)

RBAC_DIR = Path(__file__).resolve().parents[2] / "docbinder" / "adapters" / "rbac"
MODEL_FILE = RBAC_DIR / "model.conf"
POLICY_FILE = RBAC_DIR / "policy.csv"


class HostAuthorizer:
    """What a host application passes in: any object with ``name`` and ``is_allowed``.

    It inherits from nothing of docbinder; here it delegates to the role table
    and counts the questions it was asked.
    """

    def __init__(self) -> None:
        self._inner = RoleTableAuthorizer()
        self.questions = 0

    @property
    def name(self) -> str:
        return "host-policy"

    def is_allowed(self, principal: Principal, action: Action, resource: Resource) -> bool:
        self.questions += 1
        return self._inner.is_allowed(principal, action, resource)


_HOST_IS_AN_AUTHORIZER: Authorizer = HostAuthorizer()  # checked by mypy against the Protocol


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


class TestRoleTableAuthorizer(AuthorizerContract):
    @pytest.fixture
    def authorizer(self) -> Iterator[Authorizer]:
        yield RoleTableAuthorizer()


class TestCasbinAuthorizerFromFiles(AuthorizerContract):
    @pytest.fixture
    def authorizer(self) -> Iterator[Authorizer]:
        yield CasbinAuthorizer(MODEL_FILE, POLICY_FILE)


class TestCasbinAuthorizerShippedResources(AuthorizerContract):
    @pytest.fixture
    def authorizer(self) -> Iterator[Authorizer]:
        yield CasbinAuthorizer()


@pytest.fixture(scope="module")
def casbin_from_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authorizer]:
    """One SQLite policy database for the whole contract run (building one per test is slow)."""
    db = tmp_path_factory.mktemp("casbin") / "policies.db"
    authorizer = CasbinAuthorizer.from_database(sqlite_url(db))
    yield authorizer
    authorizer.close()


class TestCasbinAuthorizerFromDatabase(AuthorizerContract):
    @pytest.fixture
    def authorizer(self, casbin_from_database: Authorizer) -> Authorizer:
        return casbin_from_database


class TestHostAuthorizer(AuthorizerContract):
    @pytest.fixture
    def authorizer(self) -> Iterator[Authorizer]:
        yield HostAuthorizer()


class OwnerOnlyAuthorizer:
    """A host policy with rules of its own: a principal reads and writes only what it owns,
    in its own mandate and feature instance; roles play no part."""

    name = "owner-only"

    def is_allowed(self, principal: Principal, action: Action, resource: Resource) -> bool:
        scope = resource.scope
        return (
            principal.mandate_id == scope.mandate_id
            and scope.feature_instance_id in (None, principal.feature_instance_id)
            and (action is Action.CREATE or resource.owner_id == principal.user_id)
        )


class TestOwnerOnlyAuthorizer(AuthorizerContract):
    """Held to the guarantees only: its rules are not the role table's."""

    follows_role_table = False

    @pytest.fixture
    def authorizer(self) -> Iterator[Authorizer]:
        yield OwnerOnlyAuthorizer()

    def test_it_decides_by_ownership(self, authorizer: Authorizer) -> None:
        own = resource(ResourceKind.FILE, fi=FI1, owner=ALICE)
        assert authorizer.is_allowed(principal(fi=FI1), Action.DELETE, own)
        assert not authorizer.is_allowed(principal("admin", fi=FI1, user=BOB), Action.READ, own)


# -- Casbin adapter specifics ---------------------------------------------------------


def _rule_rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as connection:
        return connection.execute(
            "SELECT ptype, v0, v1, v2, v3, v4 FROM casbin_rule ORDER BY id"
        ).fetchall()


class TestCasbinAuthorizerDetails:
    def test_name_is_casbin(self) -> None:
        assert CasbinAuthorizer().name == "casbin"

    def test_shipped_resources_are_the_files_beside_the_module(self) -> None:
        assert shipped_model_text() == MODEL_FILE.read_text(encoding="utf-8")
        assert shipped_policy_text() == POLICY_FILE.read_text(encoding="utf-8")

    def test_shipped_policy_rows_follow_the_policy_definition(self) -> None:
        rows = CasbinAuthorizer().enforcer.get_policy()  # type: ignore[attr-defined]
        assert len(rows) == 18
        assert all(len(row) == len(POLICY_TOKENS) for row in rows)
        assert ["member", "file", "update", "own", "instance"] in rows

    def test_request_objects_carry_the_documented_attributes(self) -> None:
        who = Principal("u", "m", None, ("viewer", "member"))
        assert CasbinSubject.of(who) == CasbinSubject("u", "m", "", ("viewer", "member"))
        what = resource(ResourceKind.WORKFLOW, fi=FI1, mandate="m", owner="o")
        assert CasbinObject.of(what) == CasbinObject("workflow", "m", FI1, "o")

    def test_from_enforcer_uses_the_given_enforcer(self) -> None:
        import casbin

        enforcer = casbin.Enforcer(str(MODEL_FILE), str(POLICY_FILE))
        enforcer.remove_policy("viewer", "file", "read", "any", "instance")
        authorizer = CasbinAuthorizer.from_enforcer(enforcer)
        assert authorizer.enforcer is enforcer
        viewer = principal("viewer", fi=FI1)
        assert authorizer.is_allowed(viewer, Action.READ, resource(ResourceKind.FILE)) is False
        assert authorizer.is_allowed(viewer, Action.READ, resource(ResourceKind.WORKFLOW)) is True

    def test_custom_policy_file_is_used(self, tmp_path: Path) -> None:
        policy = tmp_path / "policy.csv"
        policy.write_text("# only auditors read files\np, auditor, file, read, any, mandate\n")
        authorizer = CasbinAuthorizer(policy_path=policy)
        auditor = principal("auditor")
        assert authorizer.is_allowed(auditor, Action.READ, resource(ResourceKind.FILE, fi=FI1))
        assert not authorizer.is_allowed(auditor, Action.READ, resource(ResourceKind.WORKFLOW))
        assert not authorizer.is_allowed(
            principal("admin"), Action.READ, resource(ResourceKind.FILE)
        )

    def test_reload_policy_rereads_the_file(self, tmp_path: Path) -> None:
        policy = tmp_path / "policy.csv"
        shutil.copy(POLICY_FILE, policy)
        authorizer = CasbinAuthorizer(policy_path=policy)
        viewer = principal("viewer")
        assert authorizer.is_allowed(viewer, Action.READ, resource(ResourceKind.FILE))
        policy.write_text("p, viewer, workflow, read, any, instance\n")
        authorizer.reload_policy()
        assert not authorizer.is_allowed(viewer, Action.READ, resource(ResourceKind.FILE))
        assert authorizer.is_allowed(viewer, Action.READ, resource(ResourceKind.WORKFLOW))

    @pytest.mark.parametrize(
        ("row", "message"),
        [
            ("p, member, file, update, onw, instance", "ownership"),
            ("p, member, file, update, own, tenant", "reach"),
            ("p, member, folder, read, any, instance", "kind"),
            ("p, member, file, write, any, instance", "action"),
            ("p, member, file, read, any", "fields"),
        ],
    )
    def test_malformed_policy_row_fails_at_start(
        self, tmp_path: Path, row: str, message: str
    ) -> None:
        policy = tmp_path / "policy.csv"
        policy.write_text(row + "\n")
        with pytest.raises(ConfigurationError, match=message):
            CasbinAuthorizer(policy_path=policy)

    def test_missing_files_raise_configuration_error(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigurationError, match="model file not found"):
            CasbinAuthorizer(model_path=tmp_path / "nope.conf")
        with pytest.raises(ConfigurationError, match="policy file not found"):
            CasbinAuthorizer(policy_path=tmp_path / "nope.csv")

    def test_model_that_cannot_take_the_request_fails_at_start(self, tmp_path: Path) -> None:
        model = tmp_path / "model.conf"
        model.write_text(
            "[request_definition]\nr = sub, obj, act\n"
            "[policy_definition]\np = sub, obj, act\n"
            "[policy_effect]\ne = some(where (p.eft == allow))\n"
            "[matchers]\nm = r.sub.department == p.sub && r.obj == p.obj && r.act == p.act\n"
        )
        policy = tmp_path / "policy.csv"
        policy.write_text("p, sales, data1, read\n")
        with pytest.raises(ConfigurationError, match="does not accept"):
            CasbinAuthorizer(model, policy)

    @pytest.mark.parametrize("module", ["casbin", "casbin_sqlalchemy_adapter"])
    def test_missing_dependency_names_the_extra(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str
    ) -> None:
        monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
        with pytest.raises(MissingExtra, match=r"pip install -e '\.\[casbin\]'") as caught:
            if module == "casbin":
                CasbinAuthorizer()
            CasbinAuthorizer.from_database(sqlite_url(tmp_path / "p.db"))
        assert caught.value.extra == "casbin"
        assert caught.value.module == module
        assert isinstance(caught.value, ImportError)


class TestCasbinAuthorizerDatabase:
    def test_empty_table_is_seeded_once_from_the_shipped_policy(self, tmp_path: Path) -> None:
        db = tmp_path / "policies.db"
        CasbinAuthorizer.from_database(sqlite_url(db)).close()
        rows = _rule_rows(db)
        assert len(rows) == 18
        assert ("p", "member", "workflow", "update", "own", "instance") in rows
        CasbinAuthorizer.from_database(sqlite_url(db)).close()
        assert _rule_rows(db) == rows  # a second start adds nothing

    def test_existing_rows_are_kept_and_used(self, tmp_path: Path) -> None:
        db = tmp_path / "policies.db"
        first = CasbinAuthorizer.from_database(sqlite_url(db))
        enforcer: Any = first.enforcer
        enforcer.remove_filtered_policy(0, "member")  # auto-saved to the table
        first.close()
        second = CasbinAuthorizer.from_database(sqlite_url(db))
        try:
            member = principal("member", user=ALICE)
            mine = resource(ResourceKind.FILE, owner=ALICE)
            assert second.is_allowed(member, Action.READ, mine) is False
            assert second.is_allowed(principal("viewer"), Action.READ, mine) is True
        finally:
            second.close()
        assert len(_rule_rows(db)) == 10

    def test_reload_policy_sees_rows_written_by_another_process(self, tmp_path: Path) -> None:
        db = tmp_path / "policies.db"
        authorizer = CasbinAuthorizer.from_database(sqlite_url(db))
        try:
            auditor = principal("auditor")
            what = resource(ResourceKind.FILE, owner=BOB)
            assert authorizer.is_allowed(auditor, Action.READ, what) is False
            with sqlite3.connect(db) as connection:
                connection.execute(
                    "INSERT INTO casbin_rule (ptype, v0, v1, v2, v3, v4) "
                    "VALUES ('p', 'auditor', 'file', 'read', 'any', 'mandate')"
                )
            authorizer.reload_policy()
            assert authorizer.is_allowed(auditor, Action.READ, what) is True
        finally:
            authorizer.close()

    def test_malformed_row_in_the_table_fails_at_start(self, tmp_path: Path) -> None:
        db = tmp_path / "policies.db"
        CasbinAuthorizer.from_database(sqlite_url(db)).close()
        with sqlite3.connect(db) as connection:
            connection.execute(
                "UPDATE casbin_rule SET v3 = 'anyone' WHERE v0 = 'viewer' AND v1 = 'file'"
            )
        with pytest.raises(ConfigurationError, match="ownership"):
            CasbinAuthorizer.from_database(sqlite_url(db))

    def test_custom_model_table_is_not_seeded(self, tmp_path: Path) -> None:
        model = tmp_path / "model.conf"
        model.write_text(
            shipped_model_text()
            .replace("p = role, kind, act, ownership, reach", "p = role, kind, act, ownership")
            .replace('(p.reach == "mandate" || ', "(")
        )
        db = tmp_path / "policies.db"
        authorizer = CasbinAuthorizer.from_database(sqlite_url(db), model_path=model)
        try:
            assert _rule_rows(db) == []
            admin = principal("admin")
            assert authorizer.is_allowed(admin, Action.READ, resource(ResourceKind.FILE)) is False
        finally:
            authorizer.close()

    def test_malformed_url_is_a_configuration_error(self) -> None:
        with pytest.raises(ConfigurationError, match="URL"):
            CasbinAuthorizer.from_database("not a url")

    def test_unreachable_database_is_a_storage_error(self, tmp_path: Path) -> None:
        with pytest.raises(StorageError):
            CasbinAuthorizer.from_database(sqlite_url(tmp_path / "missing-dir" / "p.db"))

    def test_close_is_idempotent(self, tmp_path: Path) -> None:
        authorizer = CasbinAuthorizer.from_database(sqlite_url(tmp_path / "p.db"))
        assert authorizer.close() is None
        assert authorizer.close() is None
        assert CasbinAuthorizer().close() is None  # a file-based authorizer has nothing to release
