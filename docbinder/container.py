"""The composition root: dependency-injector providers that build docbinder (SPEC C14).

:class:`UseCaseContainer` builds every use case, the
:class:`~docbinder.application.binder.UseCases` bundle of them and the :class:`DocBinder` facade
from them, over a given set of ports; no use case builds another. Both
classes hold providers only (``dependency_injector.providers``); the library's
``containers`` module is not used, since it imports ``dependency_injector.wiring``
and, through it, FastAPI where installed (ADR 0053).
:class:`Container` builds the adapters from :class:`Settings` and feeds them to
:class:`UseCaseContainer`. :func:`build_binder` (from settings) and
:func:`compose_binder` (over ports a host built itself) are the two ways in;
the CLI's ``doctor`` uses them too.

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
The budgets of the content extractor come from the ``extract_*`` settings
(:meth:`Settings.extractor_budgets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dependency_injector import providers

from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
from docbinder.adapters.memory import (
    MemoryBlobStore,
    MemoryExtractionCache,
    MemoryMetadataStore,
)
from docbinder.adapters.memory.links import MemoryLinkLedger, MemoryResolutionLog
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.adapters.system import UtcClock, UuidIdFactory
from docbinder.application.binder import DocBinder, UseCases
from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.closing import UnitOfWorkGate
from docbinder.application.steps.content_switch import ContentSwitch
from docbinder.application.steps.expiry import ExpiryGate
from docbinder.application.steps.extraction_cache import CachingExtractor
from docbinder.application.steps.hashing import HashWorkers
from docbinder.application.steps.link_events import LinkEvents
from docbinder.application.steps.provider_copies import ProviderCopyCleaner, ProviderRegistry
from docbinder.application.steps.resolution_record import ResolutionRecorder
from docbinder.application.steps.store_registration import StoreRegistration
from docbinder.application.steps.storing import FileStorer
from docbinder.application.use_cases.advance_counters import AdvanceCounters
from docbinder.application.use_cases.append_file_content import AppendFileContent
from docbinder.application.use_cases.attach_file import AttachFile
from docbinder.application.use_cases.audit_log import AuditLog
from docbinder.application.use_cases.check_duplicate import CheckDuplicate
from docbinder.application.use_cases.collect_garbage import CollectGarbage
from docbinder.application.use_cases.count_file_references import CountFileReferences
from docbinder.application.use_cases.create_workflow import CreateWorkflow
from docbinder.application.use_cases.delete_file import DeleteFile
from docbinder.application.use_cases.delete_file_versions import DeleteFileVersions
from docbinder.application.use_cases.find_deleted_files import FindDeletedFiles
from docbinder.application.use_cases.get_content import GetContent
from docbinder.application.use_cases.get_file import GetFile
from docbinder.application.use_cases.get_file_for_update import GetFileForUpdate
from docbinder.application.use_cases.get_file_version import GetFileVersion
from docbinder.application.use_cases.get_latest_file_version import GetLatestFileVersion
from docbinder.application.use_cases.get_workflow import GetWorkflow
from docbinder.application.use_cases.list_file_versions import ListFileVersions
from docbinder.application.use_cases.list_files import ListFiles
from docbinder.application.use_cases.list_latest_file_versions import ListLatestFileVersions
from docbinder.application.use_cases.list_messages import ListMessages
from docbinder.application.use_cases.list_resolutions import ListResolutions
from docbinder.application.use_cases.list_workflows import ListWorkflows
from docbinder.application.use_cases.manage_quotas import ManageQuotas
from docbinder.application.use_cases.manage_retention import ManageRetention
from docbinder.application.use_cases.mint_link import MintLink
from docbinder.application.use_cases.open_file import OpenFile
from docbinder.application.use_cases.open_file_item import OpenFileItem
from docbinder.application.use_cases.open_file_version import OpenFileVersion
from docbinder.application.use_cases.persist_action_result import PersistActionResult
from docbinder.application.use_cases.produce_file import ProduceFile
from docbinder.application.use_cases.provide_file import ProvideFile
from docbinder.application.use_cases.prune_extraction_cache import PruneExtractionCache
from docbinder.application.use_cases.redeem_link import RedeemLink, RevokeLink
from docbinder.application.use_cases.replace_file_content import ReplaceFileContent
from docbinder.application.use_cases.resolve_document_list import ResolveDocumentList
from docbinder.application.use_cases.save_file_version import SaveFileVersion
from docbinder.application.use_cases.store_file import StoreFile
from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError
from docbinder.domain.links import MAX_EXPIRY_SECONDS, LinkKeys
from docbinder.domain.reading import ReadLimits
from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobStore
from docbinder.ports.extractor import ContentExtractor, ExtractionCache, MimeDetector
from docbinder.ports.links import LinkLedger
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.resolutions import ResolutionLog
from docbinder.ports.system import Clock, IdFactory


def _sql_metadata(url: str) -> Any:
    """The metadata adapter of a database URL: SQLite's own for ``sqlite:``, else SQLAlchemy's (ADR 0040)."""
    if url.startswith("sqlite"):
        from docbinder.adapters.sqlite import SqliteMetadata

        return SqliteMetadata.from_url(url)
    from docbinder.adapters.sql import SqlMetadata

    return SqlMetadata.from_url(url)


def _sql_extraction_cache(metadata: Any) -> Any:
    from docbinder.adapters.sql.extraction_cache import SqlExtractionCache

    return SqlExtractionCache(metadata.engine)


def _read_factory(metadata: Any) -> Any:
    """The metadata store's read-only unit-of-work factory (SQL), else its ``unit_of_work``."""
    return getattr(metadata, "read_unit_of_work", None) or metadata.unit_of_work


def _inline_tier(bulk: BlobStore, metadata: Any, settings: Settings) -> BlobStore:
    """``bulk`` under the inline tier of the metadata store (ADR 0110); ``bulk`` itself for a plug-in metadata store.

    The tier is there also with ``inline_blob_limit = 0``: blobs kept inline
    before stay readable and removable.
    """
    if settings.metadata_kind == "plugin":
        return bulk  # a plug-in's units of work need not have inline_blobs
    from docbinder.adapters.inline import InlineTierBlobStore

    return InlineTierBlobStore(
        bulk, metadata.unit_of_work, _read_factory(metadata), limit=settings.inline_blob_limit
    )


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
        content_md5=settings.s3_content_md5,
    )


def _casbin(settings: Settings) -> Authorizer:
    """Casbin with the shipped or configured model; policies from a CSV file or a SQL URL."""
    from docbinder.adapters.rbac.casbin_authorizer import CasbinAuthorizer

    policy = settings.casbin_policy
    if policy is not None and "://" in policy:
        return CasbinAuthorizer.from_database(policy, model_path=settings.casbin_model)
    return CasbinAuthorizer(model_path=settings.casbin_model, policy_path=policy)


def _plugin(group: str, name: str) -> Any:
    from importlib.metadata import entry_points

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


def _extractor_for(extractor: ContentExtractor, cache: ExtractionCache | None) -> ContentExtractor:
    """The extractor the use cases see: wrapped in the cache when there is one."""
    return extractor if cache is None else CachingExtractor(extractor, cache)


def _pruner(
    read_uow_factory: UnitOfWorkFactory, cache: ExtractionCache | None
) -> PruneExtractionCache | None:
    return None if cache is None else PruneExtractionCache(read_uow_factory, cache)


def _recorder(resolutions: ResolutionLog | None, clock: Clock) -> ResolutionRecorder | None:
    return None if resolutions is None else ResolutionRecorder(resolutions, clock)


def _sql_link_ledger(metadata: Any) -> Any:
    """The link ledger on the metadata store's own path: ``sqlite3`` for SQLite (ADR 0122)."""
    from docbinder.adapters.sqlite import SqliteMetadata

    if isinstance(metadata, SqliteMetadata):
        from docbinder.adapters.sqlite.links import SqliteLinkLedger

        return SqliteLinkLedger(metadata.session, metadata.engine)
    from docbinder.adapters.sql.links import SqlLinkLedger

    return SqlLinkLedger(metadata.engine)


def _sql_resolution_log(metadata: Any, settings: Settings) -> Any:
    """The resolution log on the metadata store's own path: ``sqlite3`` for SQLite (ADR 0122)."""
    from docbinder.adapters.sqlite import SqliteMetadata

    if isinstance(metadata, SqliteMetadata):
        from docbinder.adapters.sqlite.resolutions import SqliteResolutionLog

        return SqliteResolutionLog(metadata.session, settings.resolutions_per_workflow)
    from docbinder.adapters.sql.links import SqlResolutionLog

    return SqlResolutionLog(metadata.engine, settings.resolutions_per_workflow)


def load_link_keys(settings: Settings) -> LinkKeys | None:
    """The link keys of ``link_keys`` or ``link_keys_file`` (``None`` when neither is set).

    Both set is refused; a keys file that its group or others may write, or that
    belongs to another user than the one running docbinder (or root), is refused
    (:class:`ConfigurationError` naming the file and the fix).
    """
    if settings.link_keys and settings.link_keys_file:
        raise ConfigurationError("set link_keys or link_keys_file, not both")
    if settings.link_keys:
        return LinkKeys.parse(settings.link_keys)
    if not settings.link_keys_file:
        return None
    import os
    import stat

    path = Path(settings.link_keys_file).expanduser()
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            text = handle.read().decode("utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"link_keys_file: cannot read {path}: {exc.strerror or exc}"
        ) from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"link_keys_file: {path} is not UTF-8 text") from None
    mode = stat.S_IMODE(info.st_mode)
    if hasattr(os, "getuid") and (
        mode & (stat.S_IWGRP | stat.S_IWOTH) or info.st_uid not in (os.getuid(), 0)
    ):
        raise ConfigurationError(
            f"link_keys_file: refusing {path}: only its owner (the user running docbinder) "
            f"may write it (mode {mode:04o}, uid {info.st_uid}); run chmod 600 {path}"
        )
    return LinkKeys.parse(text)


def _guarded(gate: UnitOfWorkGate, factory: UnitOfWorkFactory) -> UnitOfWorkFactory:
    """``factory`` behind ``gate``: what the use cases get, so closing the binder stops them all."""
    return gate.guard(factory)


def _closing(
    owned: Any, hash_workers: HashWorkers, gate: UnitOfWorkGate, audit: AuditTrail
) -> tuple[object, ...]:
    """What the binder closes, in construction order: the owned adapters, the hash pool, the gate, the audit trail.

    Closed in reverse order: the audit trail appends the read events it still
    holds, then the gate shuts and no use case starts a unit of work on a
    store being closed.
    """
    return (*owned, hash_workers, gate, audit)


def _retention(settings: Settings) -> timedelta | None:
    """``audit_retention`` (seconds) as a :class:`timedelta`, or ``None``."""
    seconds = settings.audit_retention
    return None if seconds is None else timedelta(seconds=seconds)


def _audit_trail(
    units: Any, batch_units: Any, clock: Clock, ids: IdFactory, enabled: bool
) -> AuditTrail:
    """The binder's :class:`AuditTrail` (disabled unless ``enabled``); read batches in ``batch_units``."""
    if not enabled:
        return DISABLED
    return AuditTrail(units, clock, ids, enabled=True, batch_uow_factory=batch_units)


def _batch_factory(metadata: Any) -> Any:
    """The metadata store's unit factory whose commits need not wait for the disk, else its ``unit_of_work``.

    SQLite's ``unsynced_unit_of_work``, for the audit log's read batches (ADR 0127).
    """
    return getattr(metadata, "unsynced_unit_of_work", None) or metadata.unit_of_work


class UseCaseContainer:
    """Builds every use case, their :class:`UseCases` bundle and the :class:`DocBinder`.

    Every dependency must be given (``None`` where optional), as a value or as a
    dependency-injector provider: ``uow_factory`` and ``read_uow_factory``
    (:data:`~docbinder.ports.metadata.UnitOfWorkFactory`), optionally
    ``batch_uow_factory`` (the units of the audit log's read batches, whose
    commits need not wait for the disk; default ``uow_factory``), ``blobs``,
    ``authorizer``, ``clock``, ``ids``, ``raw_extractor``, ``mime``,
    ``max_file_size`` (bytes or ``None``), ``extraction_cache`` and ``owned``
    (the adapters the binder closes, in construction order). Use cases that
    share a rule share one instance: one duplicate check (which the file
    storer asks), one attach (which produce and the action result compose),
    one store registration, one file storer, one hash worker pool. A new use
    case is a provider here and a name in ``_BINDER_USE_CASES`` (ADR 0048).
    Each attribute is a provider; ``use_cases.binder()`` builds the binder.
    """

    def __init__(
        self,
        *,
        uow_factory: Any,
        read_uow_factory: Any,
        blobs: Any,
        authorizer: Any,
        clock: Any,
        ids: Any,
        raw_extractor: Any,
        mime: Any,
        max_file_size: Any,
        extraction_cache: Any,
        owned: Any,
        read_limits: Any = None,
        link_keys: Any = None,
        link_ledger: Any = None,
        resolution_log: Any = None,
        public_url: Any = None,
        link_max_expiry: Any = MAX_EXPIRY_SECONDS,
        audit: Any = False,
        audit_retention: Any = None,
        provider_uploads_denied: Any = (),
        batch_uow_factory: Any = None,
    ) -> None:
        self.provider_uploads_denied = _provider(provider_uploads_denied)
        self.batch_uow_factory = _provider(
            uow_factory if batch_uow_factory is None else batch_uow_factory
        )
        self.audit_enabled = _provider(audit)
        self.audit_retention = _provider(audit_retention)
        self.uow_factory = _provider(uow_factory)
        self.read_uow_factory = _provider(read_uow_factory)
        self.blobs = blobs = _provider(blobs)
        self.authorizer = authorizer = _provider(authorizer)
        self.clock = clock = _provider(clock)
        self.ids = ids = _provider(ids)
        self.raw_extractor = _provider(raw_extractor)
        self.mime = mime = _provider(mime)
        self.max_file_size = max_file_size = _provider(max_file_size)
        self.extraction_cache = extraction_cache = _provider(extraction_cache)
        self.owned = _provider(owned)
        self.read_limits = _provider(read_limits)
        self.link_keys = _provider(link_keys)
        self.link_ledger = (
            providers.Singleton(MemoryLinkLedger) if link_ledger is None else _provider(link_ledger)
        )
        self.resolution_log = _provider(resolution_log)
        self.public_url = _provider(public_url)
        self.link_max_expiry = _provider(link_max_expiry)
        self._build_shared_steps()
        self._build_file_use_cases()
        self._build_workflow_use_cases()
        self._build_update_use_cases()
        self._build_version_use_cases()
        self._build_link_use_cases()
        self.binder = self._binder_provider()

    def _build_shared_steps(self) -> None:
        # Every use case's units of work pass the gate; the binder closes it first
        # (BinderClosed after).
        self.gate = providers.Singleton(UnitOfWorkGate)
        self.units = providers.Singleton(_guarded, self.gate, self.uow_factory)
        self.read_units = providers.Singleton(_guarded, self.gate, self.read_uow_factory)
        self.batch_units = providers.Singleton(_guarded, self.gate, self.batch_uow_factory)
        self.audit = providers.Singleton(
            _audit_trail, self.units, self.batch_units, self.clock, self.ids, self.audit_enabled
        )
        self.access = providers.Singleton(AccessPolicy, self.authorizer)
        self.extractor = providers.Singleton(
            _extractor_for, self.raw_extractor, self.extraction_cache
        )
        self.hash_workers = providers.Singleton(HashWorkers)
        self.registration = providers.Singleton(
            StoreRegistration, self.units, self.read_units, self.blobs
        )
        self.check_duplicate = providers.Singleton(
            CheckDuplicate, self.read_units, self.access, self.blobs, clock=self.clock
        )
        self.storer = providers.Singleton(
            FileStorer,
            self.units,
            self.blobs,
            self.access,
            self.clock,
            self.ids,
            self.mime,
            self.max_file_size,
            registration=self.registration,
            duplicates=self.check_duplicate,
            hash_workers=self.hash_workers,
            audit=self.audit,
        )
        self.attach_file = providers.Singleton(
            AttachFile, self.units, self.access, self.clock, self.ids, audit=self.audit
        )

    def _build_file_use_cases(self) -> None:
        units, read_units, blobs, access = self.units, self.read_units, self.blobs, self.access
        self.store_file = providers.Singleton(StoreFile, self.storer)
        self.get_file = providers.Singleton(GetFile, read_units, access)
        self.expiry = providers.Singleton(ExpiryGate, read_units, self.clock)
        self.open_file_item = providers.Singleton(
            OpenFileItem, self.get_file, blobs, audit=self.audit, units=read_units, clock=self.clock
        )
        self.open_file = providers.Singleton(OpenFile, self.open_file_item)
        self.list_files = providers.Singleton(ListFiles, read_units, access)
        self.provider_registry = providers.Singleton(ProviderRegistry)
        self.provider_cleaner = providers.Singleton(
            ProviderCopyCleaner, units, self.provider_registry, self.clock, self.ids
        )
        self.provide_file = providers.Singleton(
            ProvideFile,
            units,
            blobs,
            self.get_file,
            self.provider_registry,
            self.provider_cleaner,
            self.clock,
            self.ids,
            denied=self.provider_uploads_denied,
            expiry=self.expiry,
            audit=self.audit,
        )
        self.delete_file = providers.Singleton(
            DeleteFile,
            units,
            blobs,
            access,
            self.get_file,
            audit=self.audit,
            provider_copies=self.provider_cleaner,
        )
        self.count_file_references = providers.Singleton(CountFileReferences, units, self.get_file)
        self.persist_action_result = providers.Singleton(PersistActionResult, self.attach_file)
        self.produce_file = providers.Singleton(ProduceFile, self.storer, self.attach_file)
        self.retention = providers.Singleton(
            ManageRetention, units, read_units, self.clock, self.audit
        )
        self.collect_garbage = providers.Singleton(
            CollectGarbage,
            units,
            blobs,
            self.clock,
            self.retention,
            audit=self.audit,
            provider_copies=self.provider_cleaner,
        )
        self.quotas = providers.Singleton(ManageQuotas, units, read_units)
        self.audit_log = providers.Singleton(
            AuditLog, units, read_units, self.audit, self.clock, self.audit_retention
        )
        self.prune_extraction_cache = providers.Singleton(
            _pruner, read_units, self.extraction_cache
        )

    def _build_workflow_use_cases(self) -> None:
        units, read_units, access = self.units, self.read_units, self.access
        self.create_workflow = providers.Singleton(
            CreateWorkflow, units, access, self.clock, self.ids
        )
        self.get_workflow = providers.Singleton(GetWorkflow, read_units, access)
        self.list_workflows = providers.Singleton(ListWorkflows, read_units, access)
        self.list_messages = providers.Singleton(ListMessages, read_units, self.get_workflow)
        self.find_deleted_files = providers.Singleton(FindDeletedFiles, read_units)
        self.advance_counters = providers.Singleton(AdvanceCounters, units, access)
        self.recorder = providers.Singleton(_recorder, self.resolution_log, self.clock)
        self.resolve = providers.Singleton(
            ResolveDocumentList,
            read_units,
            access,
            recorder=self.recorder,
            audit=self.audit,
            clock=self.clock,
        )
        self.get_content = providers.Singleton(
            GetContent, self.resolve, self.blobs, self.extractor, self.read_limits, audit=self.audit
        )

    def _build_update_use_cases(self) -> None:
        self.content_switch = providers.Singleton(
            ContentSwitch,
            self.units,
            self.blobs,
            self.ids,
            self.max_file_size,
            self.registration,
            hash_workers=self.hash_workers,
            provider_copies=self.provider_cleaner,
        )
        self.get_file_for_update = providers.Singleton(GetFileForUpdate, self.units, self.access)
        self.append_file_content = providers.Singleton(
            AppendFileContent, self.get_file_for_update, self.content_switch, self.blobs
        )
        self.replace_file_content = providers.Singleton(
            ReplaceFileContent, self.get_file_for_update, self.content_switch
        )

    def _build_version_use_cases(self) -> None:
        units, read_units, blobs, access = self.units, self.read_units, self.blobs, self.access
        self.save_file_version = providers.Singleton(SaveFileVersion, units, self.storer)
        self.get_latest_file_version = providers.Singleton(GetLatestFileVersion, read_units, access)
        self.get_file_version = providers.Singleton(GetFileVersion, read_units, access)
        self.list_file_versions = providers.Singleton(ListFileVersions, read_units, access)
        self.list_latest_file_versions = providers.Singleton(
            ListLatestFileVersions, read_units, access
        )
        self.open_file_version = providers.Singleton(
            OpenFileVersion,
            blobs,
            access,
            self.gate,
            audit=self.audit,
            units=self.read_units,
            clock=self.clock,
        )
        self.delete_file_versions = providers.Singleton(
            DeleteFileVersions,
            units,
            blobs,
            access,
            self.list_file_versions,
            provider_copies=self.provider_cleaner,
        )

    def _build_link_use_cases(self) -> None:
        self.link_events = providers.Singleton(LinkEvents, self.audit)
        self.mint_link = providers.Singleton(
            MintLink,
            self.get_file,
            self.resolve,
            self.clock,
            self.ids,
            self.link_keys,
            self.public_url,
            providers.Callable(int, self.link_max_expiry),
            gate=self.gate,
            events=self.link_events,
            expiry=self.expiry,
        )
        self.redeem_link = providers.Singleton(
            RedeemLink,
            self.read_units,
            self.access,
            self.blobs,
            self.link_ledger,
            self.clock,
            self.link_keys,
            gate=self.gate,
            events=self.link_events,
        )
        self.revoke_link = providers.Singleton(
            RevokeLink,
            self.link_ledger,
            self.clock,
            self.link_keys,
            self.access,
            gate=self.gate,
            events=self.link_events,
        )
        self.list_resolutions = providers.Singleton(
            ListResolutions, self.get_workflow, self.resolution_log
        )

    def _binder_provider(self) -> providers.Singleton[DocBinder]:
        self.bundle = providers.Singleton(
            UseCases, **{name: getattr(self, name) for name in _BINDER_USE_CASES}
        )
        return providers.Singleton(
            DocBinder,
            self.bundle,
            uow_factory=self.uow_factory,
            read_uow_factory=self.read_uow_factory,
            blobs=self.blobs,
            authorizer=self.authorizer,
            clock=self.clock,
            ids=self.ids,
            extractor=self.extractor,
            access=self.access,
            extraction_cache=self.extraction_cache,
            max_file_size=self.max_file_size,
            resources=providers.Callable(
                _closing, self.owned, self.hash_workers, self.gate, self.audit
            ),
            quotas=self.quotas,
            audit_log=self.audit_log,
            retention=self.retention,
            providers=self.provider_registry,
        )


_BINDER_USE_CASES = (
    "store_file",
    "check_duplicate",
    "get_file",
    "open_file",
    "open_file_item",
    "list_files",
    "delete_file",
    "count_file_references",
    "attach_file",
    "persist_action_result",
    "produce_file",
    "create_workflow",
    "get_workflow",
    "list_workflows",
    "list_messages",
    "find_deleted_files",
    "advance_counters",
    "resolve",
    "get_content",
    "collect_garbage",
    "get_file_for_update",
    "append_file_content",
    "replace_file_content",
    "save_file_version",
    "get_latest_file_version",
    "get_file_version",
    "list_file_versions",
    "list_latest_file_versions",
    "open_file_version",
    "delete_file_versions",
    "prune_extraction_cache",
    "mint_link",
    "redeem_link",
    "revoke_link",
    "list_resolutions",
    "provide_file",
)
"""The fields of the :class:`UseCases` bundle the :class:`DocBinder` is built over."""


def _provider(value: Any) -> Any:
    """``value`` itself if it is a provider, else a provider of ``value`` as it is."""
    return value if providers.is_provider(value) else providers.Object(value)


def compose_binder(
    *,
    uow_factory: UnitOfWorkFactory,
    blobs: BlobStore,
    authorizer: Authorizer,
    clock: Clock,
    ids: IdFactory,
    extractor: ContentExtractor,
    mime: MimeDetector | None = None,
    max_file_size: int | None = None,
    read_uow_factory: UnitOfWorkFactory | None = None,
    extraction_cache: ExtractionCache | None = None,
    owned: tuple[object, ...] = (),
    read_limits: ReadLimits | None = None,
    link_keys: LinkKeys | None = None,
    link_ledger: LinkLedger | None = None,
    resolution_log: ResolutionLog | None = None,
    public_url: str | None = None,
    audit: bool = False,
    provider_uploads_denied: Sequence[str] = (),
    batch_uow_factory: UnitOfWorkFactory | None = None,
) -> DocBinder:
    """A :class:`DocBinder` over ports a host (or a test) built itself, wired by :class:`UseCaseContainer`.

    ``uow_factory`` makes the units of work that write; ``read_uow_factory``
    (default: the same) those of the read-only use cases (with SQLite metadata pass
    ``SqliteMetadata.read_unit_of_work`` so reads do not wait for the write
    lock). ``max_file_size`` is in bytes (``None``: no limit). With an
    ``extraction_cache`` the extractor is wrapped in
    :class:`~docbinder.application.steps.extraction_cache.CachingExtractor` and
    ``binder.prune_extraction_cache`` is set. ``read_limits`` bound each
    ``get_content`` and consuming-tool call (default :class:`ReadLimits`'s). The binder's :meth:`~DocBinder.close`
    closes its own hash worker threads and the objects in ``owned`` (anything
    with ``close()``), not the ports passed in otherwise: the caller owns those.
    Signed links need ``link_keys`` (:class:`~docbinder.domain.links.LinkKeys`);
    their revocations live in ``link_ledger`` (default: one in memory);
    ``resolution_log`` keeps recent resolutions for the inspector page (``None``:
    none kept); ``public_url`` is the base of links minted outside a request.
    With ``audit`` every write, read, resolution and refusal is recorded in the
    metadata store's audit log (B11, ``binder.audit``); its batches of read events
    commit in units of ``batch_uow_factory`` (default ``uow_factory``; with SQLite
    ``SqliteMetadata.unsynced_unit_of_work``, ADR 0127). ``provider_uploads_denied``
    lists the tenants (``mandate`` or ``mandate/feature-instance``) whose files
    ``provide_file`` refuses to hand to model providers (B22).
    """
    use_cases = UseCaseContainer(
        uow_factory=uow_factory,
        read_uow_factory=read_uow_factory or uow_factory,
        blobs=blobs,
        authorizer=authorizer,
        clock=clock,
        ids=ids,
        raw_extractor=extractor,
        mime=mime,
        max_file_size=max_file_size,
        extraction_cache=extraction_cache,
        owned=owned,
        read_limits=read_limits,
        link_keys=link_keys,
        link_ledger=link_ledger,
        resolution_log=resolution_log,
        public_url=public_url,
        audit=audit,
        provider_uploads_denied=tuple(provider_uploads_denied),
        batch_uow_factory=batch_uow_factory,
    )
    binder: DocBinder = use_cases.binder()
    return binder


class Container:
    """Builds every adapter from ``settings`` and the :class:`DocBinder` through :class:`UseCaseContainer`.

    Each attribute is a dependency-injector provider: ``container.metadata()``
    builds (once) the metadata store the settings select, ``container.binder()``
    the binder; ``container.authorizer.override(providers.Object(obj))`` puts
    another object in (tests, a host's own authorizer). Built without
    ``settings``, :meth:`check_dependencies` refuses it.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = providers.Dependency(instance_of=Settings)
        if settings is not None:
            self.settings.override(providers.Object(settings))
        self.clock = providers.Singleton(UtcClock)
        self.ids = providers.Singleton(UuidIdFactory)
        self.metadata = _metadata_selector(self.settings)
        self.bulk_blobs = _blob_selector(self.settings)
        """The store the ``blob_url`` names; :attr:`blobs` adds the inline tier over it (ADR 0110)."""
        self.blobs = providers.Singleton(
            _inline_tier, self.bulk_blobs, self.metadata, self.settings
        )
        self.authorizer = _authorizer_selector(self.settings)
        self.extractor = providers.Singleton(_extractor_from, self.settings)
        self.extraction_cache = providers.Selector(
            providers.Callable(lambda s: s.metadata_kind, self.settings),
            memory=providers.Singleton(MemoryExtractionCache),
            sql=providers.Singleton(_sql_extraction_cache, self.metadata),
            plugin=providers.Object(None),
        )
        self.mime = providers.Singleton(SniffingMimeDetector)
        kind = providers.Callable(lambda s: s.metadata_kind, self.settings)
        self.link_ledger = providers.Selector(
            kind,
            memory=providers.Singleton(MemoryLinkLedger),
            sql=providers.Singleton(_sql_link_ledger, self.metadata),
            plugin=providers.Singleton(MemoryLinkLedger),
        )
        self.resolution_log = providers.Selector(
            kind,
            memory=providers.Singleton(
                MemoryResolutionLog,
                providers.Callable(lambda s: s.resolutions_per_workflow, self.settings),
            ),
            sql=providers.Singleton(_sql_resolution_log, self.metadata, self.settings),
            plugin=providers.Object(None),
        )
        self.link_keys = providers.Singleton(load_link_keys, self.settings)
        self.owned = providers.Callable(
            lambda *adapters: adapters,
            self.metadata,
            self.blobs,
            self.authorizer,
            self.extractor,
            self.extraction_cache,
        )
        """The adapters this container built, which the binder closes (in reverse order)."""
        self.use_cases = UseCaseContainer(
            uow_factory=self.metadata.provided.unit_of_work,
            read_uow_factory=providers.Callable(_read_factory, self.metadata),
            batch_uow_factory=providers.Callable(_batch_factory, self.metadata),
            blobs=self.blobs,
            authorizer=self.authorizer,
            clock=self.clock,
            ids=self.ids,
            raw_extractor=self.extractor,
            mime=self.mime,
            max_file_size=providers.Callable(lambda s: s.max_file_size, self.settings),
            extraction_cache=self.extraction_cache,
            owned=self.owned,
            read_limits=providers.Callable(lambda s: s.read_limits(), self.settings),
            link_keys=self.link_keys,
            link_ledger=self.link_ledger,
            resolution_log=self.resolution_log,
            public_url=providers.Callable(lambda s: s.public_url, self.settings),
            link_max_expiry=providers.Callable(lambda s: s.link_max_expiry, self.settings),
            audit=providers.Callable(lambda s: s.audit, self.settings),
            audit_retention=providers.Callable(_retention, self.settings),
            provider_uploads_denied=providers.Callable(
                lambda s: s.provider_uploads_denied, self.settings
            ),
        )
        self.binder = self.use_cases.binder

    def check_dependencies(self) -> None:
        """Raise :class:`ConfigurationError` naming each dependency that was not given (``settings``)."""
        missing = [
            name
            for name, provider in vars(self).items()
            if isinstance(provider, providers.Dependency) and not provider.is_defined
        ]
        if missing:
            raise ConfigurationError(
                f"the container has undefined dependencies: {', '.join(missing)} "
                "(build it with Container(settings=...))"
            )


def _metadata_selector(settings: Any) -> Any:
    """The metadata store by the URL scheme of ``database_url``."""
    url = providers.Callable(lambda s: s.database_url, settings)
    return providers.Selector(
        providers.Callable(lambda s: s.metadata_kind, settings),
        memory=providers.Singleton(MemoryMetadataStore),
        sql=providers.Singleton(_sql_metadata, url),
        plugin=providers.Singleton(_plugin_metadata, url),
    )


def _blob_selector(settings: Any) -> Any:
    """The blob store by the URL scheme of ``blob_url``."""
    return providers.Selector(
        providers.Callable(lambda s: s.blob_kind, settings),
        memory=providers.Singleton(MemoryBlobStore),
        file=providers.Singleton(_localdisk, settings),
        s3=providers.Singleton(_s3, settings),
        plugin=providers.Singleton(_plugin_blobs, settings),
    )


def _authorizer_selector(settings: Any) -> Any:
    """The authorizer by the ``authorizer`` setting (an entry point for names not built in)."""
    return providers.Selector(
        providers.Callable(
            lambda s: s.authorizer if s.authorizer in {"roletable", "casbin"} else "plugin",
            settings,
        ),
        roletable=providers.Singleton(RoleTableAuthorizer),
        casbin=providers.Singleton(_casbin, settings),
        plugin=providers.Singleton(_plugin_authorizer, settings),
    )


def _extractor_from(settings: Settings) -> DefaultContentExtractor:
    """The content extractor with the budgets the settings give (the extractor's defaults else)."""
    return DefaultContentExtractor(**settings.extractor_budgets())


def build_container(settings: Settings) -> Container:
    """A container for ``settings``; fails at once if required wiring is missing."""
    container = Container(settings)
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

    The binder owns what was built for it: ``binder.close()`` (or ``with
    build_binder(...) as binder:``) disposes the SQL connection pools, closes an
    S3 client it made and stops the hash worker threads; an ``authorizer``
    object handed in is left to the host.
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
        # The host's own authorizer is the host's to close.
        container.owned.override(
            providers.Callable(
                lambda *adapters: adapters,
                container.metadata,
                container.blobs,
                container.extractor,
                container.extraction_cache,
            )
        )
    binder: DocBinder = container.binder()
    return binder


def sqlite_file(settings: Settings) -> Path | None:
    """The database file of an SQLite ``database_url``; ``None`` for other URLs and in-memory SQLite.

    :attr:`Settings.sqlite_file <docbinder.config.Settings.sqlite_file>`.
    """
    return settings.sqlite_file


def migration_status(settings: Settings) -> tuple[str | None, str]:
    """``(current revision, head revision)`` of the SQL metadata store; connects once (Alembic)."""
    from docbinder.adapters.sql import current_revision, head_revision

    return current_revision(settings.database_url), head_revision()


def half_applied_migration(settings: Settings) -> str | None:
    """One line when a migration of the SQL metadata store stopped midway, else ``None``."""
    from docbinder.adapters.sql import half_applied

    return half_applied(settings.database_url)


def schema_at_head(settings: Settings) -> bool:
    """Whether the SQL metadata store records the head revision, read without Alembic.

    ``False`` for a missing SQLite file (it is not created), and for any state
    the Alembic way has to look at (behind, ahead, half-applied, unreachable).
    """
    from docbinder.adapters.sql.engine import create_engine_from_url
    from docbinder.adapters.sql.revision import at_head

    path = sqlite_file(settings)
    if path is not None and not path.is_file():
        return False
    engine = create_engine_from_url(settings.database_url)
    try:
        return at_head(engine)
    finally:
        engine.dispose()


def prepare_storage(settings: Settings) -> None:
    """Make the embedded default ready; check that a server schema is migrated.

    For SQLite the database directory is created and the migrations run. For
    PostgreSQL/MariaDB the schema must already be at head; otherwise
    :class:`ConfigurationError` asks for ``docbinder migrate``. A database
    already at head is seen without importing Alembic (:func:`schema_at_head`);
    Alembic is loaded only to migrate or to say what is wrong.
    """
    if settings.metadata_kind != "sql" or schema_at_head(settings):
        return
    if sqlite_file(settings) is not None:
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

    path = sqlite_file(settings)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    return str(migrate(settings.database_url))
