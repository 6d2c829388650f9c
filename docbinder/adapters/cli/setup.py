"""Storage preparation shared by the CLI commands: migrations, directories, temp files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError
from docbinder.ports.blobs import BlobStore


def _sqlite_file(settings: Settings) -> Path | None:
    from sqlalchemy.engine import make_url

    url = make_url(settings.database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database)


def prepare_storage(settings: Settings) -> None:
    """Make the embedded default ready to use; check that a server schema is migrated.

    For SQLite the database directory is created and the migrations run (cheap
    when already at head). For PostgreSQL/MariaDB the schema must already be at
    head: otherwise :class:`ConfigurationError` asks for ``docbinder migrate``.
    """
    if settings.metadata_kind != "sql":
        return
    sqlite_file = _sqlite_file(settings)
    if sqlite_file is not None:
        sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        run_migrations(settings)
        return
    from docbinder.adapters.sql import migration_status

    status = migration_status(settings.database_url)
    if not status.up_to_date:
        raise ConfigurationError(
            f"the metadata schema is at revision {status.current or 'none'}, "
            f"this docbinder needs {status.head}: run `docbinder migrate`"
        )


def run_migrations(settings: Settings) -> str:
    """Upgrade the metadata schema to head; returns the revision now current."""
    if settings.metadata_kind != "sql":
        return "none (no SQL metadata store configured)"
    from docbinder.adapters.sql import migrate

    sqlite_file = _sqlite_file(settings)
    if sqlite_file is not None:
        sqlite_file.parent.mkdir(parents=True, exist_ok=True)
    return str(migrate(settings.database_url))


def remove_stale_temp_files(blobs: BlobStore, older_than: float, *, dry_run: bool) -> list[str]:
    """Temp files a killed writer left in a local-disk store (removed unless ``dry_run``)."""
    stale_fn: Any = getattr(blobs, "stale_temp_files", None)
    if stale_fn is None:
        return []
    stale = [str(p) for p in stale_fn(older_than)]
    if not dry_run and stale:
        blobs.remove_stale_temp_files(older_than)  # type: ignore[attr-defined]
    return stale
