"""Wiring: a dependency-injector container that builds docbinder from :class:`Settings` (SPEC C14).

Adapters are chosen with ``providers.Selector`` keyed by the configuration
(metadata URL scheme, blob URL scheme, authorizer name). Third-party adapters
plug in through entry points:

* ``docbinder.metadata`` — name = URL scheme, value = callable ``(url) -> object``
  with a ``unit_of_work()`` method and, optionally, a ``read_unit_of_work()``
  method for read-only use cases;
* ``docbinder.blob_stores`` — name = URL scheme, value = callable ``(url) -> BlobStore``;
* ``docbinder.authorizers`` — name = authorizer setting, value = callable ``(settings) -> Authorizer``.

Nothing connects when this module is imported or the container is built;
connections open on first use. Tests override providers with ``override()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dependency_injector import containers, providers

from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
from docbinder.adapters.memory import (
    MemoryBlobStore,
    MemoryExtractionCache,
    MemoryMetadataStore,
)
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.adapters.system import UtcClock, UuidIdFactory
from docbinder.application import DocBinder
from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError
from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobStore


def _sql_metadata(url: str) -> Any:
    from docbinder.adapters.sql import SqlMetadata

    return SqlMetadata.from_url(url)


def _sql_extraction_cache(metadata: Any) -> Any:
    from docbinder.adapters.sql.extraction_cache import SqlExtractionCache

    return SqlExtractionCache(metadata.engine)


def _read_factory(metadata: Any) -> Any:
    """The metadata store's read-only unit-of-work factory, if it has one (SQL), else ``None``.

    ``None`` makes the use cases read through ``unit_of_work`` as well.
    """
    return getattr(metadata, "read_unit_of_work", None)


def _localdisk(settings: Settings) -> BlobStore:
    from docbinder.adapters.localdisk import LocalDiskBlobStore

    return LocalDiskBlobStore(settings.blob_root)


def _s3(settings: Settings) -> BlobStore:
    from docbinder.adapters.s3 import S3BlobStore

    return S3BlobStore.from_url(
        settings.blob_url,
        endpoint_url=settings.s3_endpoint_url,
        region_name=settings.s3_region,
        whole_bucket=settings.s3_whole_bucket,
        connect_timeout=settings.s3_connect_timeout,
        read_timeout=settings.s3_read_timeout,
        max_attempts=settings.s3_max_attempts,
        checksums=settings.s3_checksums,
    )


def _casbin(settings: Settings) -> Authorizer:
    """Casbin with the shipped or configured model; policies from a CSV file or a SQL URL."""
    from docbinder.adapters.rbac.casbin_authorizer import CasbinAuthorizer

    policy = settings.casbin_policy
    if policy is not None and "://" in policy:
        return CasbinAuthorizer.from_database(policy, model_path=settings.casbin_model)
    return CasbinAuthorizer(model_path=settings.casbin_model, policy_path=policy)


def _plugin(group: str, name: str) -> Any:
    found = [ep for ep in entry_points(group=group) if ep.name == name]
    if not found:
        raise ConfigurationError(
            f"no adapter for {name!r}: not built in and no entry point {name!r} in group {group!r}"
        )
    return found[0].load()


def _plugin_metadata(url: str) -> Any:
    return _plugin("docbinder.metadata", urlsplit(url).scheme)(url)


def _plugin_blobs(settings: Settings) -> BlobStore:
    factory = _plugin("docbinder.blob_stores", urlsplit(settings.blob_url).scheme)
    store: BlobStore = factory(settings.blob_url)
    return store


def _plugin_authorizer(settings: Settings) -> Authorizer:
    authorizer: Authorizer = _plugin("docbinder.authorizers", settings.authorizer)(settings)
    return authorizer


class Container(containers.DeclarativeContainer):
    """Builds every adapter and the :class:`DocBinder` facade from ``settings``."""

    settings = providers.Dependency(instance_of=Settings)

    clock = providers.Singleton(UtcClock)
    ids = providers.Singleton(UuidIdFactory)

    metadata = providers.Selector(
        providers.Callable(lambda s: s.metadata_kind, settings),
        memory=providers.Singleton(MemoryMetadataStore),
        sql=providers.Singleton(
            _sql_metadata, providers.Callable(lambda s: s.database_url, settings)
        ),
        plugin=providers.Singleton(
            _plugin_metadata, providers.Callable(lambda s: s.database_url, settings)
        ),
    )

    blobs = providers.Selector(
        providers.Callable(lambda s: s.blob_kind, settings),
        memory=providers.Singleton(MemoryBlobStore),
        file=providers.Singleton(_localdisk, settings),
        s3=providers.Singleton(_s3, settings),
        plugin=providers.Singleton(_plugin_blobs, settings),
    )

    authorizer = providers.Selector(
        providers.Callable(
            lambda s: s.authorizer if s.authorizer in {"roletable", "casbin"} else "plugin",
            settings,
        ),
        roletable=providers.Singleton(RoleTableAuthorizer),
        casbin=providers.Singleton(_casbin, settings),
        plugin=providers.Singleton(_plugin_authorizer, settings),
    )

    extractor = providers.Singleton(DefaultContentExtractor)
    extraction_cache = providers.Selector(
        providers.Callable(lambda s: s.metadata_kind, settings),
        memory=providers.Singleton(MemoryExtractionCache),
        sql=providers.Singleton(_sql_extraction_cache, metadata),
        plugin=providers.Object(None),
    )
    mime = providers.Singleton(SniffingMimeDetector)

    binder = providers.Singleton(
        DocBinder,
        uow_factory=metadata.provided.unit_of_work,
        read_uow_factory=providers.Callable(_read_factory, metadata),
        blobs=blobs,
        authorizer=authorizer,
        clock=clock,
        ids=ids,
        extractor=extractor,
        extraction_cache=extraction_cache,
        mime=mime,
        max_file_size=providers.Callable(lambda s: s.max_file_size, settings),
    )


def build_container(settings: Settings) -> Container:
    """A container for ``settings``; fails at once if required wiring is missing."""
    container = Container(settings=settings)
    container.check_dependencies()
    return container


def build_binder(
    settings: Settings | None = None,
    *,
    prepare: bool = True,
    authorizer: Authorizer | str | None = None,
    environ: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
    **overrides: Any,
) -> DocBinder:
    """Build a :class:`DocBinder` from ``settings`` and/or keyword settings.

    Explicit arguments always win: keyword settings (``database_url=...``,
    ``max_file_size=...``, any name of :data:`~docbinder.config.SETTING_NAMES`) and a
    string ``authorizer`` are applied on top of ``settings``
    (:meth:`Settings.with_overrides`). Without ``settings`` they are loaded with
    :meth:`Settings.load`, which reads the process environment only when asked:
    pass ``environ=os.environ`` (and/or ``config_file``) for ``DOCBINDER_*`` and a TOML
    file; by default neither is read. ``environ`` and ``config_file`` together with
    ``settings`` are refused (the settings were loaded already).

    ``authorizer`` is either a setting (``"roletable"``, ``"casbin"``, an entry-point
    name) or a host's own object with ``name`` and ``is_allowed(principal, action,
    resource)`` (the :class:`~docbinder.ports.authorizer.Authorizer` port), used as is.
    With ``prepare`` the storage is made ready first (:func:`prepare_storage`: SQLite is
    migrated, a server schema is checked). Raises :class:`ConfigurationError` (naming
    the setting or the command to run, an unknown setting, or an ``authorizer`` object
    without ``is_allowed``) or :class:`MissingExtra` (naming the pip extra).
    """
    own: Authorizer | None = None
    if isinstance(authorizer, str):
        overrides["authorizer"] = authorizer
    elif authorizer is not None:
        if not callable(getattr(authorizer, "is_allowed", None)):
            raise ConfigurationError(
                "authorizer must be a setting name or an object with "
                f"is_allowed(principal, action, resource), got {type(authorizer).__name__}"
            )
        own = authorizer
    if settings is not None:
        if environ is not None or config_file is not None:
            raise ConfigurationError(
                "build_binder: environ and config_file are read only without settings; "
                "pass them to Settings.load instead"
            )
        resolved = settings.with_overrides(overrides)
    else:
        resolved = Settings.load(
            overrides, environ={} if environ is None else environ, config_file=config_file
        )
    if prepare:
        prepare_storage(resolved)
    container = build_container(resolved)
    if own is not None:
        container.authorizer.override(providers.Object(own))
    binder: DocBinder = container.binder()
    return binder


def _sqlite_file(settings: Settings) -> Path | None:
    from sqlalchemy.engine import make_url

    try:
        url = make_url(settings.database_url)
    except Exception:
        return None
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database)


def migration_status(settings: Settings) -> tuple[str | None, str]:
    """``(current revision, head revision)`` of the SQL metadata store; connects once."""
    from docbinder.adapters.sql import current_revision, head_revision

    return current_revision(settings.database_url), head_revision()


def half_applied_migration(settings: Settings) -> str | None:
    """One line when a migration of the SQL metadata store stopped midway, else ``None``."""
    from docbinder.adapters.sql import half_applied

    return half_applied(settings.database_url)


def prepare_storage(settings: Settings) -> None:
    """Make the embedded default ready; check that a server schema is migrated.

    For SQLite the database directory is created and the migrations run (cheap
    when already at head). For PostgreSQL/MariaDB the schema must already be at
    head; otherwise :class:`ConfigurationError` asks for ``docbinder migrate``.
    """
    if settings.metadata_kind != "sql":
        return
    if _sqlite_file(settings) is not None:
        run_migrations(settings)
        return
    current, head = migration_status(settings)
    if current != head:
        raise ConfigurationError(
            f"the metadata schema is at revision {current or 'none'}, "
            f"this docbinder needs {head}: run `docbinder migrate`"
        )


def run_migrations(settings: Settings) -> str:
    """Upgrade the SQL metadata schema to head; return the revision now current."""
    if settings.metadata_kind != "sql":
        return "none (no SQL metadata store configured)"
    from docbinder.adapters.sql import migrate

    sqlite_file = _sqlite_file(settings)
    if sqlite_file is not None:
        sqlite_file.parent.mkdir(parents=True, exist_ok=True)
    return str(migrate(settings.database_url))
