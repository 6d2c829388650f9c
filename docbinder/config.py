"""Configuration: where metadata and blobs live, which authorizer decides (SPEC C14).

Sources, strongest first: explicit arguments, environment variables
(``DOCBINDER_*``), a TOML file (``--config`` / ``DOCBINDER_CONFIG``, keys at top
level and/or under a ``[docbinder]`` table: both are merged, a key given in both with
different values is refused, as is any key that is no setting), then the embedded default: SQLite and
local-disk blobs under the home directory (``--home`` / ``DOCBINDER_HOME``,
else the user's data directory from platformdirs). Library code never reads
the environment by itself: :meth:`Settings.load` is called by the CLI or by a
host that wants environment configuration.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import attrs

from docbinder.domain.errors import ConfigurationError, InvalidInput
from docbinder.domain.reading import (
    DEFAULT_CALL_MAX_BYTES,
    DEFAULT_CALL_MAX_PARTS,
    DEFAULT_CALL_TIME_BUDGET,
    ReadLimits,
)

ENV_PREFIX = "DOCBINDER_"

EXTRACT_SETTINGS = (
    "extract_max_bytes",
    "extract_max_text_chars",
    "extract_max_pages",
    "extract_max_rows",
    "extract_max_decoded_bytes",
    "extract_time_budget",
    "extract_memory_bytes",
    "extract_max_processes",
    "extract_queue_seconds",
)
"""The content extractor's budgets per document (``extract_<name>`` is the extractor's ``<name>``)."""

CALL_SETTINGS = ("call_time_budget", "call_max_bytes", "call_max_parts")
"""The budget of one read call across its documents (:class:`~docbinder.domain.reading.ReadLimits`)."""

HTTP_SETTINGS = (
    "http_max_connections",
    "http_header_timeout",
    "http_read_timeout",
    "http_keep_alive_timeout",
    "http_sessions_per_principal",
    "http_session_idle_timeout",
    "http_allowed_hosts",
)
"""The limits of every HTTP face (:class:`docbinder.integrations.httpguard.HttpLimits`)."""

SERVE_SETTINGS = (
    "public_url",
    "link_keys",
    "link_keys_file",
    "link_max_expiry",
    "resolutions_per_workflow",
    "oidc_issuer",
    "oidc_audience",
    "oidc_jwks",
    "oidc_algorithms",
    "oidc_user_claim",
    "oidc_mandate_claim",
    "oidc_feature_instance_claim",
    "oidc_roles_claim",
    "oidc_signer_grace",
)
"""``docbinder serve``: its public address, the keys of signed links, OIDC sign-in."""

SETTING_NAMES = (
    "home",
    "database_url",
    "blob_url",
    "authorizer",
    "casbin_model",
    "casbin_policy",
    "s3_endpoint_url",
    "s3_region",
    "s3_checksums",
    "s3_content_md5",
    "max_file_size",
    "inline_blob_limit",
    "audit",
    "audit_retention",
    "s3_whole_bucket",
    "s3_connect_timeout",
    "s3_read_timeout",
    "s3_max_attempts",
    "provider_uploads_denied",
    *EXTRACT_SETTINGS,
    *CALL_SETTINGS,
    *HTTP_SETTINGS,
    *SERVE_SETTINGS,
)

COMPUTED_DEFAULTS = {
    "home": "the user data directory: `platformdirs.user_data_dir('docbinder')`",
    "database_url": "`sqlite:///<home>/docbinder.db`",
    "blob_url": "`file://<home>/blobs`",
    "extract_max_processes": "one per core, at most physical memory / `extract_memory_bytes`",
}
"""The defaults that are computed when the settings are loaded, as the reference shows them."""

S3_CHECKSUMS = ("auto", "when_required", "when_supported")
"""The values of ``s3_checksums``."""


def default_home() -> Path:
    """The per-user data directory (``platformdirs.user_data_dir('docbinder')``)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("docbinder", appauthor=False))


@attrs.frozen
class Settings:
    """Resolved configuration: one attribute per setting, each documented below.

    A setting ``name`` is the TOML key ``name`` (top level or under ``[docbinder]``) and
    the environment variable ``DOCBINDER_<NAME>``. The extractor budgets
    (:data:`EXTRACT_SETTINGS`) are ``None`` unless set: the defaults of
    :class:`~docbinder.adapters.extract.extractor.DefaultContentExtractor` apply, the
    one place they are kept. The ``http_*`` settings bound every HTTP face, see
    :class:`docbinder.integrations.httpguard.HttpLimits`. ``sources`` names where each
    value came from (``argument``, ``environment``, the config file, ``default``).
    The configuration reference (``docs/reference/configuration.md``) is generated
    from these attributes, their docstrings and :data:`COMPUTED_DEFAULTS`.
    """

    home: Path
    """Data directory of the embedded default: ``docbinder.db`` and ``blobs/`` live here unless
    ``database_url`` / ``blob_url`` say otherwise. Also ``--home``.
    """
    database_url: str
    """Where the metadata lives: ``sqlite:///<path>``, ``postgresql+psycopg://...``,
    ``mysql+pymysql://...``, ``memory://`` or the scheme of a ``docbinder.metadata`` entry
    point. Also ``--database-url``.
    """
    blob_url: str
    """Where the bytes live: ``file:///<dir>``, ``s3://<bucket>/<prefix>``, ``memory://`` or
    the scheme of a ``docbinder.blob_stores`` entry point. Also ``--blob-url``.
    """
    authorizer: str = "roletable"
    """Who may do what: ``roletable``, ``casbin`` (the ``casbin`` extra) or the name of a
    ``docbinder.authorizers`` entry point. Also ``--authorizer``.
    """
    casbin_model: str | None = None
    """Path of the Casbin model file (``None``: the shipped ``model.conf``)."""
    casbin_policy: str | None = None
    """Path of the Casbin policy CSV, or a SQL URL to load the rules from a database (``None``:
    the shipped ``policy.csv``).
    """
    s3_endpoint_url: str | None = None
    """S3 endpoint for anything but AWS (MinIO, Ceph, R2, moto); ``None``: boto3's own."""
    s3_region: str | None = None
    """S3 region; ``None``: boto3's own (environment, profile)."""
    s3_checksums: str = "auto"
    """``auto`` (``when_required`` with a custom ``s3_endpoint_url``, else ``when_supported``),
    ``when_required`` or ``when_supported`` (botocore's checksum settings).
    """
    s3_content_md5: bool = False
    """Send ``Content-MD5`` on the S3 operations that require a checksum (``PutObjectTagging``,
    ``DeleteObjects``), for S3-compatible endpoints that refuse botocore's CRC32 there; without
    it such an endpoint refuses the committed-blob records (``doctor`` says so).
    """
    max_file_size: int | None = None
    """Largest file stored, in bytes (``None``: unlimited)."""
    inline_blob_limit: int = 65536
    """Largest file whose bytes are kept in the metadata database, in bytes (at most 1 MiB):
    stored in the transaction of its FileItem and ChatDocument, one commit, no blob-store
    write (docs/storage.md). ``0``: every new file goes to the blob store; files kept inline
    before stay readable.
    """
    audit: bool = False
    """Keep the audit log (B11): every store, attach, read, resolution, delete and refusal is
    an event of a hash chain in the metadata store (``docbinder audit ls | verify``).
    """
    audit_retention: float | None = None
    """How long ``docbinder audit prune`` keeps audit events, in seconds or as a duration
    (``90d``, ``12h``); ``None``: for ever.
    """
    s3_whole_bucket: bool = False
    """Allow an ``s3://bucket`` URL without prefix: everything in the bucket then belongs to
    docbinder.
    """
    s3_connect_timeout: float = 4.0
    """Seconds to connect to the S3 endpoint."""
    s3_read_timeout: float = 10.0
    """Seconds of silence while reading from S3."""
    s3_max_attempts: int = 2
    """Attempts per S3 request; with the timeouts, an attach against a hung endpoint fails
    within 30 s (:func:`docbinder.adapters.s3.blobs.worst_case_seconds`).
    """
    extract_max_bytes: int | None = None
    """Bytes read of each document a consuming tool reads."""
    extract_max_text_chars: int | None = None
    """Characters of text kept per document."""
    extract_max_pages: int | None = None
    """Pages, sheets or slides converted per document."""
    extract_max_rows: int | None = None
    """Workbook rows read per document, empty ones included."""
    extract_max_decoded_bytes: int | None = None
    """Bytes of decompressed content per document (a zip bomb is refused unopened)."""
    extract_time_budget: float | None = None
    """Seconds of conversion per document."""
    extract_memory_bytes: int | None = None
    """Address-space cap of the converter process, in bytes."""
    extract_max_processes: int | None = None
    """Converter processes running at once in one docbinder process; more documents wait."""
    extract_queue_seconds: float | None = None
    """Seconds a document waits for a free converter process before it is refused with a note
    naming ``extract_max_processes`` (``0``: refuse at once).
    """
    call_time_budget: float = DEFAULT_CALL_TIME_BUDGET
    """Seconds one ``get_content`` or consuming-tool call spends on all its documents; the rest
    is reported as not read.
    """
    call_max_bytes: int = DEFAULT_CALL_MAX_BYTES
    """Bytes of content one such call returns (text characters plus image and file bytes)."""
    call_max_parts: int = DEFAULT_CALL_MAX_PARTS
    """Content parts one such call returns."""
    http_max_connections: int = 512
    """Open connections of an HTTP face (``docbinder mcp --transport streamable-http``)."""
    http_header_timeout: float = 10.0
    """Seconds a client has to send a whole request head."""
    http_read_timeout: float = 30.0
    """Seconds of silence allowed inside a request body."""
    http_keep_alive_timeout: float = 5.0
    """Seconds an idle connection stays open between requests."""
    http_sessions_per_principal: int = 100
    """Open legacy MCP sessions per principal."""
    http_session_idle_timeout: float = 1800.0
    """Seconds before an unused MCP session ends."""
    http_allowed_hosts: tuple[str, ...] = ()
    """More names the ``Host`` and ``Origin`` headers may give (comma-separated in the
    environment, a list in TOML).
    """
    provider_uploads_denied: tuple[str, ...] = ()
    """Tenants whose files never go to a model provider's Files API (B22): mandate ids, or
    ``mandate/feature-instance`` for one feature instance (comma-separated in the
    environment, a list in TOML). ``run.provide_file`` refuses them with an error naming
    this setting.
    """
    public_url: str | None = None
    """Where ``docbinder serve`` is reached (``https://files.example.com``): the base of signed
    links minted outside a request (``run.link_for``, ``docbinder files link``) and of the
    ``download:`` line of tool results (``None``: no such line).
    """
    link_keys: str | None = None
    """HMAC keys of signed links, ``KEY_ID:BASE64_SECRET`` separated by commas; the first
    signs, all verify (rotation). Secrets of at least 32 bytes. ``None``: see
    ``link_keys_file``; with neither, minting a link is refused.
    """
    link_keys_file: str | None = None
    """A file of link keys, one ``KEY_ID:BASE64_SECRET`` per line (``#`` comments); only its
    owner may write it.
    """
    link_max_expiry: float = 604800.0
    """Longest lifetime of a signed link, in seconds (a week)."""
    resolutions_per_workflow: int = 20
    """Recent resolutions kept per workflow for the inspector page."""
    oidc_issuer: str | None = None
    """OIDC issuer whose JWT bearer tokens ``docbinder serve`` accepts (the ``iss`` claim)."""
    oidc_audience: str | None = None
    """The ``aud`` a JWT must carry (``None``: the audience is not checked)."""
    oidc_jwks: str | None = None
    """The issuer's signing keys: a JWKS file path or an ``https://`` URL."""
    oidc_algorithms: tuple[str, ...] = ("RS256", "ES256")
    """JWT algorithms accepted (never ``none``; comma-separated in the environment)."""
    oidc_user_claim: str = "sub"
    """The JWT claim that is the user id."""
    oidc_mandate_claim: str = "mandate"
    """The JWT claim that is the mandate (tenant); a token without it is refused."""
    oidc_feature_instance_claim: str = "feature_instance"
    """The JWT claim that is the feature instance (optional in a token)."""
    oidc_roles_claim: str = "roles"
    """The JWT claim with the roles (a list or a space-separated string); a token without it has no roles and may do nothing."""
    oidc_signer_grace: float = 0.0
    """Seconds a link minted under an OIDC sign-in keeps working after the signer's latest
    token with the same roles expired (0: only while the signer holds such a token)."""
    sources: Mapping[str, str] = attrs.field(factory=dict, eq=False)

    @classmethod
    def load(
        cls,
        overrides: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        config_file: str | Path | None = None,
    ) -> Settings:
        """Merge explicit ``overrides`` > ``environ`` > TOML file > defaults.

        ``environ`` defaults to ``os.environ``; pass ``{}`` to ignore it.
        Raises :class:`ConfigurationError` naming the setting for bad values
        or an unreadable config file.
        """
        env = os.environ if environ is None else environ
        explicit = _explicit(overrides or {})
        path = config_file or env.get(ENV_PREFIX + "CONFIG")
        from_file = _read_toml(Path(path)) if path else {}
        values, sources = _gather(explicit, env, from_file, f"config file {path}")
        _check_text(values, sources)
        _embedded_defaults(values, sources)
        for name, convert in _CONVERTERS.items():
            if name in values:
                values[name] = convert(name, values[name], sources.get(name))
        _check_strings(values, sources)
        settings = cls(**values, sources=sources)
        _ = (settings.metadata_kind, settings.blob_kind)  # raise for unusable URLs now
        return settings

    def with_overrides(self, overrides: Mapping[str, Any]) -> Settings:
        """These settings with ``overrides`` (setting name -> value, ``None`` ignored) applied.

        The values are checked as :meth:`load` checks them (no environment, no file);
        the other settings keep their values and sources. Raises
        :class:`ConfigurationError` for an unknown name or a bad value.
        """
        explicit = {k: v for k, v in overrides.items() if v is not None}
        if not explicit:
            return self
        merged: dict[str, Any] = {
            name: getattr(self, name) for name in SETTING_NAMES if getattr(self, name) is not None
        }
        merged["home"] = str(self.home)
        merged.update(explicit)
        loaded = Settings.load(merged, environ={})
        sources = {
            name: ("argument" if name in explicit else self.sources.get(name, "argument"))
            for name in SETTING_NAMES
        }
        return attrs.evolve(loaded, sources=sources)

    def extractor_budgets(self) -> dict[str, Any]:
        """The extractor budgets that are set, as keyword arguments of the extractor.

        ``{"max_pages": 20, "time_budget": 5.0}`` for ``extract_max_pages = 20`` and
        ``extract_time_budget = 5``; budgets not set are left out, so the
        extractor's own defaults apply.
        """
        budgets: dict[str, Any] = {}
        for name in EXTRACT_SETTINGS:
            value = getattr(self, name)
            if value is not None:
                budgets[name.removeprefix("extract_")] = value
        return budgets

    def read_limits(self) -> ReadLimits:
        """The budget of one read call: ``call_time_budget``, ``call_max_bytes``, ``call_max_parts``."""
        return ReadLimits(self.call_time_budget, self.call_max_bytes, self.call_max_parts)

    @property
    def metadata_kind(self) -> str:
        """``memory`` or ``sql`` (or ``plugin`` for an entry-point scheme)."""
        scheme = urlsplit(self.database_url).scheme.split("+")[0].lower()
        if scheme == "memory":
            return "memory"
        if scheme in {"sqlite", "postgresql", "postgres", "mysql", "mariadb"}:
            return "sql"
        if scheme:
            return "plugin"
        raise ConfigurationError(
            f"setting database_url ({ENV_PREFIX}DATABASE_URL) is not a URL: {self.database_url!r}"
        )

    @property
    def blob_kind(self) -> str:
        """``memory``, ``file``, ``s3`` (or ``plugin`` for an entry-point scheme)."""
        scheme = urlsplit(self.blob_url).scheme.lower()
        if scheme in {"memory", "file", "s3"}:
            return scheme
        if scheme:
            return "plugin"
        raise ConfigurationError(
            f"setting blob_url ({ENV_PREFIX}BLOB_URL) is not a URL: {self.blob_url!r}"
        )

    @property
    def blob_root(self) -> Path:
        """The directory of a ``file://`` blob URL."""
        parts = urlsplit(self.blob_url)
        if parts.netloc not in {"", "localhost"}:
            raise ConfigurationError(f"blob_url must be a local file:// URL, got {self.blob_url!r}")
        return Path(unquote(parts.path))

    @property
    def sqlite_file(self) -> Path | None:
        """The database file of an SQLite ``database_url``; ``None`` for other URLs and in-memory SQLite.

        Read as SQLAlchemy reads SQLite URLs (its "SQLite" dialect page:
        ``sqlite:///relative.db``, ``sqlite:////absolute.db``, a driver after
        ``+``, a query after ``?``, the path percent-decoded), without importing
        SQLAlchemy; a test compares the two. With ``uri=true`` the database is a
        ``file:`` URI (SQLite's "URI Filenames") and its path is the file. ``None``
        for ``sqlite://``, ``:memory:`` and an empty path.
        """
        scheme, sep, rest = self.database_url.partition("://")
        if not sep or scheme.split("+")[0].lower() != "sqlite":
            return None
        location, _, query = rest.partition("?")
        _host, slash, database = location.partition("/")
        database = unquote(database)
        if "uri=true" in query.lower().split("&"):
            # sqlite3 opens ``file:<path>`` URIs (SQLite's "URI Filenames"); the file is its path
            if not database.startswith("file:"):
                return None
            database = unquote(database[len("file:") :].partition("?")[0])
            if database.startswith("//"):  # file://host/path: SQLite takes only an empty host
                database = database[2:].partition("/")[2]
                database = "/" + database if database else ""
        if not slash or not database or database == ":memory:":
            return None
        return Path(database)

    @property
    def is_embedded(self) -> bool:
        """True for the no-server setup: SQLite (or memory) metadata."""
        return self.database_url.startswith("sqlite") or self.metadata_kind == "memory"


# ---------------------------------------------------------------- the steps of Settings.load


def _explicit(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides that are given (not ``None``); :class:`ConfigurationError` for unknown names."""
    explicit = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(explicit) - set(SETTING_NAMES)
    if unknown:
        raise ConfigurationError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    return explicit


def _gather(
    explicit: Mapping[str, Any],
    env: Mapping[str, str],
    from_file: Mapping[str, Any],
    file_source: str,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each setting's value from the strongest source that has it, and the name of that source.

    An empty environment variable counts as not set.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in SETTING_NAMES:
        variable = ENV_PREFIX + name.upper()
        if name in explicit:
            values[name], sources[name] = explicit[name], "argument"
        elif env.get(variable, "") != "":
            values[name], sources[name] = env[variable], "environment"
        elif name in from_file:
            values[name], sources[name] = from_file[name], file_source
    return values, sources


def _check_text(values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    """Every setting that is not a number or a flag must be text (a TOML ``home = 5`` is not)."""
    for name, value in values.items():
        if name not in _CONVERTERS and not isinstance(value, str):
            raise ConfigurationError(
                f"setting {name} must be text, got {type(value).__name__} ({sources[name]})"
            )


def _embedded_defaults(values: dict[str, Any], sources: dict[str, str]) -> None:
    """Resolve ``home`` and put the embedded default's URLs under it where none is given."""
    home = Path(values.get("home") or default_home()).expanduser().absolute()
    sources.setdefault("home", "default")
    if ("database_url" not in values or "blob_url" not in values) and (
        home.exists() and not home.is_dir()
    ):
        raise ConfigurationError(
            f"home {home} is not a directory ({sources['home']}): the embedded default keeps "
            "its database and blobs in a directory; give --home / DOCBINDER_HOME a directory"
        )
    if "database_url" not in values:
        # Quoted: a home whose path holds ``?`` or ``%`` names its own file, not a query.
        values["database_url"] = f"sqlite:///{quote(str(home / 'docbinder.db'))}"
        sources["database_url"] = "default (embedded SQLite)"
    if "blob_url" not in values:
        values["blob_url"] = (home / "blobs").as_uri()
        sources["blob_url"] = "default (local disk)"
    values["home"] = home


def _check_strings(values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    """``s3_checksums`` is one of :data:`S3_CHECKSUMS`; the URLs and the authorizer are not empty."""
    if values.get("s3_checksums", "auto") not in S3_CHECKSUMS:
        raise ConfigurationError(
            "s3_checksums must be auto, when_required or when_supported, "
            f"got {values['s3_checksums']!r} ({sources['s3_checksums']})"
        )
    for name in ("database_url", "blob_url", "authorizer"):
        if not isinstance(values.get(name, "x"), str) or not values.get(name, "x"):
            raise ConfigurationError(f"setting {name} must be a non-empty string")
    for name, value in values.items():
        # A command-line or environment value with bytes that are not UTF-8 reaches Python
        # with lone surrogates (PEP 383); no URL, driver or store can take it.
        text = str(value) if name == "home" else value
        if isinstance(text, str) and not text.isprintable() and _SURROGATE.search(text):
            raise ConfigurationError(
                f"setting {name} holds bytes that are not valid UTF-8 ({sources.get(name, '?')}): "
                f"{text!a}; give it as UTF-8 text"
            )


_SURROGATE = re.compile(r"[\ud800-\udfff]")
"""What a byte that is not UTF-8 becomes in an argument or environment variable (PEP 383)."""


# ---------------------------------------------------------------- settings that are not text

Converter = Callable[[str, Any, "str | None"], Any]
"""``(name, raw value, source) -> value``; raises :class:`ConfigurationError` naming the setting."""


def _file_size(name: str, raw: Any, source: str | None) -> int:
    """``max_file_size``: a positive whole number of bytes."""
    if isinstance(raw, bool | float):
        raise ConfigurationError(f"{name} must be a whole number of bytes, got {raw!r}")
    try:
        size = int(raw)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name} must be a whole number of bytes, got {raw!r}") from None
    if size <= 0:
        raise ConfigurationError(f"{name} must be positive")
    return size


MAX_INLINE_LIMIT = 1 << 20
"""Largest ``inline_blob_limit`` accepted, in bytes (1 MiB; the inline tier's own bound)."""


def _inline_limit(name: str, raw: Any, source: str | None) -> int:
    """``inline_blob_limit``: a whole number of bytes from 0 to 1 MiB (``0`` turns the tier off)."""
    try:
        size = int(raw) if not isinstance(raw, bool | float) else -1
    except (TypeError, ValueError):
        size = -1
    if not 0 <= size <= MAX_INLINE_LIMIT:
        raise ConfigurationError(
            f"{name} must be a whole number of bytes from 0 to {MAX_INLINE_LIMIT}, "
            f"got {raw!r} ({source})"
        )
    return size


def _duration(name: str, raw: Any, source: str | None) -> float:
    """A positive duration: seconds, or text such as ``2s``, ``12h``, ``30d`` (:func:`parse_duration`)."""
    from docbinder.domain.governance import parse_duration

    try:
        return parse_duration(raw).total_seconds()
    except InvalidInput as exc:
        raise ConfigurationError(f"{name}: {exc} ({source})") from None


def _flag(name: str, raw: Any, source: str | None) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, any case) or a TOML boolean."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in {"1", "0", "true", "false", "yes", "no"}:
        raise ConfigurationError(f"{name} must be true or false, got {raw!r} ({source})")
    return text in {"1", "true", "yes"}


def _seconds(name: str, raw: Any, source: str | None) -> float:
    """A positive, finite number of seconds."""
    try:
        seconds = float(raw) if not isinstance(raw, bool) else float("nan")
    except (TypeError, ValueError):
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise ConfigurationError(
            f"{name} must be a positive number of seconds, got {raw!r} ({source})"
        )
    return seconds


def _wait_seconds(name: str, raw: Any, source: str | None) -> float:
    """A finite number of seconds >= 0."""
    try:
        seconds = float(raw) if not isinstance(raw, bool) else float("nan")
    except (TypeError, ValueError):
        seconds = float("nan")
    if not 0 <= seconds < float("inf"):
        raise ConfigurationError(f"{name} must be a number of seconds >= 0, got {raw!r} ({source})")
    return seconds


def _whole(unit: str) -> Converter:
    """A converter to a whole number >= 1 (of ``unit``, e.g. ``" of bytes"``; ``""`` for a count)."""

    def convert(name: str, raw: Any, source: str | None) -> int:
        try:
            number = int(raw) if not isinstance(raw, bool | float) else 0
        except (TypeError, ValueError):
            number = 0
        if number < 1:
            raise ConfigurationError(
                f"{name} must be a whole number{unit} >= 1, got {raw!r} ({source})"
            )
        return number

    return convert


_HOST_ENTRY = re.compile(r"^[A-Za-z0-9._:\[\]-]{1,255}$")


def _hosts(name: str, raw: Any, source: str | None) -> tuple[str, ...]:
    """Host names or addresses: comma-separated text (environment) or a list (TOML)."""
    entries = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(entries, list | tuple) or not all(isinstance(e, str) for e in entries):
        raise ConfigurationError(
            f"{name} must be host names separated by commas (a list in TOML), got {raw!r} ({source})"
        )
    hosts = tuple(e.strip() for e in entries if e.strip())
    bad = [h for h in hosts if not _HOST_ENTRY.match(h)]
    if bad:
        raise ConfigurationError(f"{name}: {bad[0]!r} is no host name or address ({source})")
    return hosts


_TENANT_ENTRY = re.compile(r"^[^\s/,;|]{1,128}(/[^\s/,;|]{1,128})?$")
"""One tenant of a list setting: ``;`` and ``|`` are refused as the separators they
usually are (a deny list that names no tenant by a typo would deny nothing)."""


def _tenants(name: str, raw: Any, source: str | None) -> tuple[str, ...]:
    """Tenants: ``mandate`` or ``mandate/feature-instance``, comma-separated text or a list."""
    entries = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(entries, list | tuple) or not all(isinstance(e, str) for e in entries):
        raise ConfigurationError(
            f"{name} must be mandate ids or mandate/feature-instance pairs, got {raw!r} ({source})"
        )
    tenants = tuple(e.strip() for e in entries if e.strip())
    bad = [t for t in tenants if not _TENANT_ENTRY.match(t)]
    if bad:
        raise ConfigurationError(
            f"{name}: {bad[0]!r} is no mandate id or mandate/feature-instance pair; "
            f"separate tenants with commas ({source})"
        )
    return tenants


def _algorithms(name: str, raw: Any, source: str | None) -> tuple[str, ...]:
    """JWT algorithm names (RFC 7518): comma-separated text or a list; ``none`` is refused."""
    entries = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(entries, list | tuple) or not all(isinstance(e, str) for e in entries):
        raise ConfigurationError(f"{name} must be algorithm names, got {raw!r} ({source})")
    names = tuple(e.strip() for e in entries if e.strip())
    if not names or any(n.lower() == "none" or not n.isalnum() for n in names):
        raise ConfigurationError(
            f"{name} must name signing algorithms such as RS256 (never none), got {raw!r} ({source})"
        )
    return names


_BYTES = _whole(" of bytes")
_COUNT = _whole("")

_CONVERTERS: dict[str, Converter] = {
    "max_file_size": _file_size,
    "inline_blob_limit": _inline_limit,
    "audit": _flag,
    "audit_retention": _duration,
    "s3_whole_bucket": _flag,
    "s3_content_md5": _flag,
    "s3_connect_timeout": _seconds,
    "s3_read_timeout": _seconds,
    "s3_max_attempts": _COUNT,
    "extract_max_bytes": _BYTES,
    "extract_max_text_chars": _COUNT,
    "extract_max_pages": _COUNT,
    "extract_max_rows": _COUNT,
    "extract_max_decoded_bytes": _BYTES,
    "extract_time_budget": _seconds,
    "extract_memory_bytes": _BYTES,
    "extract_max_processes": _COUNT,
    "extract_queue_seconds": _wait_seconds,
    "call_time_budget": _seconds,
    "call_max_bytes": _BYTES,
    "call_max_parts": _COUNT,
    "http_max_connections": _COUNT,
    "http_header_timeout": _seconds,
    "http_read_timeout": _seconds,
    "http_keep_alive_timeout": _seconds,
    "http_sessions_per_principal": _COUNT,
    "http_session_idle_timeout": _seconds,
    "http_allowed_hosts": _hosts,
    "link_max_expiry": _seconds,
    "resolutions_per_workflow": _COUNT,
    "oidc_algorithms": _algorithms,
    "oidc_signer_grace": _wait_seconds,
    "provider_uploads_denied": _tenants,
}
"""The settings that are numbers or flags, in the order they are checked, with their converter."""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigurationError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"config file {path} is not UTF-8 text: {exc.reason}") from None
    table = data.get("docbinder", {})
    if not isinstance(table, dict):
        raise ConfigurationError(f"config file {path}: [docbinder] must be a table")
    top = {key: value for key, value in data.items() if key != "docbinder"}
    clashing = sorted(key for key in set(top) & set(table) if top[key] != table[key])
    if clashing:
        raise ConfigurationError(
            f"config file {path}: {', '.join(clashing)} set both at top level and in "
            "[docbinder] with different values; keep one"
        )
    table = {**top, **table}
    unknown = set(table) - set(SETTING_NAMES)
    if unknown:
        raise ConfigurationError(
            f"config file {path}: unknown setting(s) {', '.join(sorted(unknown))}"
        )
    return dict(table)
