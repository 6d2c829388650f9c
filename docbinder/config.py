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

import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import attrs

from docbinder.domain.errors import ConfigurationError

ENV_PREFIX = "DOCBINDER_"

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
    "max_file_size",
    "s3_whole_bucket",
    "s3_connect_timeout",
    "s3_read_timeout",
    "s3_max_attempts",
    "http_max_connections",
    "http_header_timeout",
    "http_read_timeout",
    "http_keep_alive_timeout",
    "http_sessions_per_principal",
    "http_session_idle_timeout",
    "http_allowed_hosts",
)

_HTTP_NUMBERS: dict[str, type[int] | type[float]] = {
    "http_max_connections": int,
    "http_header_timeout": float,
    "http_read_timeout": float,
    "http_keep_alive_timeout": float,
    "http_sessions_per_principal": int,
    "http_session_idle_timeout": float,
}
"""The HTTP faces' limits (:class:`docbinder.integrations.httpguard.HttpLimits`): counts and seconds."""

_NON_TEXT = frozenset(
    {"max_file_size", "s3_whole_bucket", "s3_connect_timeout", "s3_read_timeout", "s3_max_attempts"}
    | set(_HTTP_NUMBERS)
    | {"http_allowed_hosts"}
)
_HOST_ENTRY = re.compile(r"^[A-Za-z0-9._:\[\]-]{1,255}$")


def default_home() -> Path:
    """The per-user data directory (``platformdirs.user_data_dir('docbinder')``)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("docbinder", appauthor=False))


@attrs.frozen
class Settings:
    """Resolved configuration.

    ``database_url``: ``sqlite:///path``, ``postgresql+psycopg://...``,
    ``mysql+pymysql://...`` or ``memory://``. ``blob_url``: ``file:///dir``,
    ``s3://bucket/prefix`` or ``memory://``. ``authorizer``: ``roletable``,
    ``casbin`` or the name of an entry point in group ``docbinder.authorizers``.
    ``max_file_size`` is in bytes (``None``: unlimited). ``s3_whole_bucket``
    allows an ``s3://bucket`` URL without prefix (everything in the bucket
    then belongs to docbinder). ``s3_connect_timeout`` and ``s3_read_timeout``
    are seconds, ``s3_max_attempts`` counts attempts per S3 request; their
    defaults (4 s, 10 s, 2) fail an attach against a hung endpoint within 30 s
    (:func:`docbinder.adapters.s3.blobs.worst_case_seconds`). ``s3_checksums``: ``auto``
    (``when_required`` for a custom ``s3_endpoint_url``, else ``when_supported``),
    ``when_required`` or ``when_supported`` (botocore's checksum settings).

    The ``http_*`` settings bound every HTTP face (``docbinder mcp --transport
    streamable-http``), see :class:`docbinder.integrations.httpguard.HttpLimits`:
    ``http_max_connections`` (512 open connections), ``http_header_timeout`` (10 s to
    send a whole request head), ``http_read_timeout`` (30 s of silence inside a request
    body), ``http_keep_alive_timeout`` (5 s idle between requests),
    ``http_sessions_per_principal`` (100 open legacy MCP sessions per principal),
    ``http_session_idle_timeout`` (1800 s before an unused session ends) and
    ``http_allowed_hosts`` (more names the ``Host`` and ``Origin`` headers may give;
    comma-separated in the environment, a list in TOML).
    """

    home: Path
    database_url: str
    blob_url: str
    authorizer: str = "roletable"
    casbin_model: str | None = None
    casbin_policy: str | None = None
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    s3_checksums: str = "auto"
    max_file_size: int | None = None
    s3_whole_bucket: bool = False
    s3_connect_timeout: float = 4.0
    s3_read_timeout: float = 10.0
    s3_max_attempts: int = 2
    http_max_connections: int = 512
    http_header_timeout: float = 10.0
    http_read_timeout: float = 30.0
    http_keep_alive_timeout: float = 5.0
    http_sessions_per_principal: int = 100
    http_session_idle_timeout: float = 1800.0
    http_allowed_hosts: tuple[str, ...] = ()
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
        explicit = {k: v for k, v in (overrides or {}).items() if v is not None}
        unknown = set(explicit) - set(SETTING_NAMES)
        if unknown:
            raise ConfigurationError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        path = config_file or explicit.pop("config", None) or env.get(ENV_PREFIX + "CONFIG")
        from_file = _read_toml(Path(path)) if path else {}
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name in SETTING_NAMES:
            if name in explicit:
                values[name], sources[name] = explicit[name], "argument"
            elif ENV_PREFIX + name.upper() in env and env[ENV_PREFIX + name.upper()] != "":
                values[name], sources[name] = env[ENV_PREFIX + name.upper()], "environment"
            elif name in from_file:
                values[name], sources[name] = from_file[name], f"config file {path}"
        for name, value in values.items():
            if name not in _NON_TEXT and not isinstance(value, str):
                raise ConfigurationError(
                    f"setting {name} must be text, got {type(value).__name__} ({sources[name]})"
                )
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
            values["database_url"] = f"sqlite:///{home / 'docbinder.db'}"
            sources["database_url"] = "default (embedded SQLite)"
        if "blob_url" not in values:
            values["blob_url"] = (home / "blobs").as_uri()
            sources["blob_url"] = "default (local disk)"
        values["home"] = home
        size = values.get("max_file_size")
        if isinstance(size, bool | float):
            raise ConfigurationError(f"max_file_size must be a whole number of bytes, got {size!r}")
        if size is not None:
            try:
                values["max_file_size"] = int(size)
            except (TypeError, ValueError):
                raise ConfigurationError(
                    f"max_file_size must be a whole number of bytes, got {size!r}"
                ) from None
            if values["max_file_size"] <= 0:
                raise ConfigurationError("max_file_size must be positive")
        _s3_settings(values, sources)
        _http_settings(values, sources)
        if values.get("s3_checksums", "auto") not in ("auto", "when_required", "when_supported"):
            raise ConfigurationError(
                "s3_checksums must be auto, when_required or when_supported, "
                f"got {values['s3_checksums']!r} ({sources['s3_checksums']})"
            )
        for name in ("database_url", "blob_url", "authorizer"):
            if not isinstance(values.get(name, "x"), str) or not values.get(name, "x"):
                raise ConfigurationError(f"setting {name} must be a non-empty string")
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
    def is_embedded(self) -> bool:
        """True for the no-server setup: SQLite (or memory) metadata."""
        return self.database_url.startswith("sqlite") or self.metadata_kind == "memory"


def _s3_settings(values: dict[str, Any], sources: Mapping[str, str]) -> None:
    """Convert the S3 settings in ``values`` in place; :class:`ConfigurationError` naming the bad one."""
    flag = values.get("s3_whole_bucket")
    if flag is not None and not isinstance(flag, bool):
        text = str(flag).strip().lower()
        if text not in {"1", "0", "true", "false", "yes", "no"}:
            raise ConfigurationError(
                f"s3_whole_bucket must be true or false, got {flag!r} ({sources.get('s3_whole_bucket')})"
            )
        values["s3_whole_bucket"] = text in {"1", "true", "yes"}
    for name in ("s3_connect_timeout", "s3_read_timeout"):
        if name not in values:
            continue
        raw = values[name]
        try:
            seconds = float(raw) if not isinstance(raw, bool) else float("nan")
        except (TypeError, ValueError):
            seconds = float("nan")
        if not 0 < seconds < float("inf"):
            raise ConfigurationError(
                f"{name} must be a positive number of seconds, got {raw!r} ({sources.get(name)})"
            )
        values[name] = seconds
    if "s3_max_attempts" in values:
        raw = values["s3_max_attempts"]
        try:
            attempts = int(raw) if not isinstance(raw, bool | float) else 0
        except (TypeError, ValueError):
            attempts = 0
        if attempts < 1:
            raise ConfigurationError(
                f"s3_max_attempts must be a whole number >= 1, got {raw!r} ({sources.get('s3_max_attempts')})"
            )
        values["s3_max_attempts"] = attempts


def _http_settings(values: dict[str, Any], sources: Mapping[str, str]) -> None:
    """Convert the ``http_*`` settings in ``values`` in place; :class:`ConfigurationError` naming the bad one."""
    for name, kind in _HTTP_NUMBERS.items():
        if name not in values:
            continue
        raw = values[name]
        try:
            number = kind(raw) if not isinstance(raw, bool) else 0
        except (TypeError, ValueError):
            number = 0
        if kind is int and isinstance(raw, float) and not raw.is_integer():
            number = 0
        if not (number > 0 and math.isfinite(number)):
            unit = "whole number" if kind is int else "number of seconds"
            raise ConfigurationError(
                f"{name} must be a positive {unit}, got {raw!r} ({sources.get(name)})"
            )
        values[name] = number
    if "http_allowed_hosts" in values:
        raw = values["http_allowed_hosts"]
        entries = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(entries, list | tuple) or not all(isinstance(e, str) for e in entries):
            raise ConfigurationError(
                "http_allowed_hosts must be host names separated by commas (a list in TOML), "
                f"got {raw!r} ({sources.get('http_allowed_hosts')})"
            )
        hosts = tuple(e.strip() for e in entries if e.strip())
        bad = [h for h in hosts if not _HOST_ENTRY.match(h)]
        if bad:
            raise ConfigurationError(
                f"http_allowed_hosts: {bad[0]!r} is no host name or address "
                f"({sources.get('http_allowed_hosts')})"
            )
        values["http_allowed_hosts"] = hosts


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
