"""Translation of SQLAlchemy/driver errors into docbinder's error tree.

Nothing above the SQL adapter sees a SQLAlchemy or DB-API exception:

* an ``IntegrityError`` from a unique index or primary key becomes the
  :class:`~docbinder.domain.errors.Conflict` subclass registered for that
  constraint (``uq_file_items_dedup_key`` -> ``DuplicateFileItem``,
  ``uq_chat_messages_label`` -> ``DuplicateLabel``,
  ``uq_file_versions_series`` -> ``VersionTaken``, primary keys -> ``Conflict``);
  a foreign-key failure on a workflow id becomes ``WorkflowNotFound``;
* every other SQLAlchemy error (``OperationalError``, ``ProgrammingError``,
  a lost connection, ...) becomes :class:`~docbinder.domain.errors.StorageError`.

The original exception is always chained as ``__cause__``.

Which constraint failed is read from what each driver reports:
PostgreSQL (psycopg) gives ``diag.constraint_name``; MariaDB/MySQL (PyMySQL)
gives error 1062 ``Duplicate entry '...' for key '<index>'`` (MySQL 8 prefixes
the table: ``'<table>.<index>'``; the primary key is ``PRIMARY``) and 1452 for
foreign keys; SQLite gives ``UNIQUE constraint failed: <table>.<col>, ...``
(matched against the table's primary key and unique indexes by columns).
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.domain.errors import (
    Conflict,
    DocbinderError,
    DuplicateFileItem,
    DuplicateLabel,
    StorageError,
    TransactionAborted,
    VersionTaken,
    WorkflowNotFound,
)

CONSTRAINT_ERRORS: dict[str, type[DocbinderError]] = {
    "pk_file_items": Conflict,
    "uq_file_items_dedup_key": DuplicateFileItem,
    "pk_workflows": Conflict,
    "pk_chat_messages": Conflict,
    "uq_chat_messages_label": DuplicateLabel,
    "pk_chat_documents": Conflict,
    "fk_chat_messages_workflow_id_workflows": WorkflowNotFound,
    "fk_chat_documents_workflow_id_workflows": WorkflowNotFound,
    "pk_file_versions": Conflict,
    "uq_file_versions_series": VersionTaken,
}
"""Which docbinder error a violated constraint (by name) becomes."""

_MESSAGES: dict[type[DocbinderError], str] = {
    Conflict: "an entity with that id already exists",
    DuplicateFileItem: "a FileItem with the same bytes, name, creator and scope exists",
    DuplicateLabel: "that documents_label is already used in the workflow",
    WorkflowNotFound: "the workflow does not exist",
    VersionTaken: "that version of the file name was saved by another writer first",
}

_MYSQL_DUPLICATE = 1062
_MYSQL_FOREIGN_KEY = (1216, 1452)
_MYSQL_KEY_RE = re.compile(r"for key '(?:[^'.]*\.)?([^']+)'")
_MYSQL_FK_RE = re.compile(r"CONSTRAINT [`\"]?([^`\"\s]+)[`\"]? FOREIGN KEY")
_SQLITE_UNIQUE_RE = re.compile(r"UNIQUE constraint failed: (.+)$")
_PG_UNIQUE = "23505"

_MISSING_SCHEMA_HINTS = ("no such table", "undefinedtable", "doesn't exist", "does not exist")


def _unique_constraint_by_columns(table: sa.Table, columns: list[str]) -> str | None:
    wanted = set(columns)
    if {c.name for c in table.primary_key.columns} == wanted:
        return table.primary_key.name if isinstance(table.primary_key.name, str) else None
    for index in table.indexes:
        if (
            index.unique
            and {c.name for c in index.columns} == wanted
            and isinstance(index.name, str)
        ):
            return index.name
    return None


def violated_constraint(error: BaseException, table: sa.Table) -> tuple[str | None, bool]:
    """``(constraint name or None, is_unique_violation)`` of an integrity error raised on ``table``.

    ``error`` is SQLAlchemy's ``IntegrityError`` or the driver's own (the
    ``sqlite3`` adapter's). ``table`` is the table the failing statement
    wrote to; it resolves MariaDB's ``PRIMARY`` and SQLite's column lists
    into constraint names.
    """
    orig = getattr(error, "orig", error)
    # PostgreSQL through psycopg 3: SQLSTATE and the diagnostic constraint name.
    diag = getattr(orig, "diag", None)
    if diag is not None:
        name = getattr(diag, "constraint_name", None)
        sqlstate = getattr(orig, "sqlstate", None)
        return (name if isinstance(name, str) else None), sqlstate == _PG_UNIQUE
    args: tuple[Any, ...] = getattr(orig, "args", ())
    # MariaDB/MySQL through PyMySQL: (errno, message).
    if len(args) >= 2 and isinstance(args[0], int):
        code, message = args[0], str(args[1])
        if code == _MYSQL_DUPLICATE:
            match = _MYSQL_KEY_RE.search(message)
            if match is None:
                return None, True
            key = match.group(1)
            if key == "PRIMARY":
                return _unique_constraint_by_columns(
                    table, [c.name for c in table.primary_key]
                ), True
            return key, True
        if code in _MYSQL_FOREIGN_KEY:
            fk = _MYSQL_FK_RE.search(message)
            return (fk.group(1) if fk else None), False
        return None, False
    # SQLite: "UNIQUE constraint failed: t.a, t.b" / "FOREIGN KEY constraint failed".
    message = str(orig)
    match = _SQLITE_UNIQUE_RE.search(message)
    if match is not None:
        columns = [part.strip().rsplit(".", 1)[-1] for part in match.group(1).split(",")]
        return _unique_constraint_by_columns(table, columns), True
    return None, False


def integrity_error(error: BaseException, table: sa.Table) -> DocbinderError:
    """The docbinder error for an integrity error raised while writing ``table``.

    A known constraint maps through :data:`CONSTRAINT_ERRORS`; an unknown
    uniqueness violation is a plain :class:`Conflict`; anything else (a
    missing parent row, a NOT NULL or CHECK failure) is a
    :class:`StorageError`. ``error`` is SQLAlchemy's ``IntegrityError`` or
    the driver's own. The caller raises the result ``from error``.
    """
    name, unique = violated_constraint(error, table)
    cls = CONSTRAINT_ERRORS.get(name) if name is not None else None
    if cls is None:
        if unique:
            return Conflict(
                f"a uniqueness rule of table {table.name} was violated ({name or 'unknown'})"
            )
        detail = getattr(error, "orig", error)
        return StorageError(f"the metadata store rejected a write to {table.name}: {detail}")
    return cls(f"{_MESSAGES.get(cls, 'constraint violated')} ({name})")


_PG_TRANSIENT = ("40P01", "40001")
"""PostgreSQL SQLSTATEs of a transaction aborted to end a deadlock or a serialization failure."""

_MYSQL_DEADLOCK = 1213
"""MariaDB/MySQL ``ER_LOCK_DEADLOCK``: the server rolled the whole transaction back."""


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` (SQLAlchemy's or the driver's) is a deadlock or serialization failure.

    PostgreSQL (psycopg): SQLSTATE in :data:`_PG_TRANSIENT`; MariaDB/MySQL
    (PyMySQL): error :data:`_MYSQL_DEADLOCK`. A lock wait timeout (MariaDB
    1205) is not: the server rolls back only the statement there, so the
    unit is not known to have ended.
    """
    orig = getattr(error, "orig", error)
    if getattr(orig, "sqlstate", None) in _PG_TRANSIENT:
        return True
    args: tuple[Any, ...] = getattr(orig, "args", ())
    return bool(args) and args[0] == _MYSQL_DEADLOCK


def storage_error(error: BaseException) -> StorageError:
    """A :class:`StorageError` describing a database fault; the caller raises it ``from error``.

    A deadlock or serialization failure (:func:`is_transient`) is a
    :class:`~docbinder.domain.errors.TransactionAborted`, which the writing
    use cases retry.
    """
    detail = str(getattr(error, "orig", None) or error).strip().splitlines()
    text = detail[0] if detail else type(error).__name__
    if is_transient(error):
        return TransactionAborted(
            f"metadata store aborted the transaction: {text}; nothing of it was committed"
        )
    hint = ""
    lowered = f"{type(getattr(error, 'orig', None)).__name__} {text}".lower()
    if any(marker in lowered for marker in _MISSING_SCHEMA_HINTS):
        hint = " (is the schema migrated? run `docbinder migrate`)"
    return StorageError(f"metadata store failed: {text}{hint}")


class _Translating:
    """The context manager :func:`translating` returns (one object, shared: it keeps no state)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(exc, sa_exc.SQLAlchemyError):
            raise storage_error(exc) from exc


_TRANSLATING = _Translating()


def translating() -> AbstractContextManager[None]:
    """Re-raise any SQLAlchemy error inside the block as :class:`StorageError` (chained).

    docbinder errors raised inside pass through unchanged. A plain object
    with ``__enter__``/``__exit__`` rather than a generator: every statement
    of the producer path runs inside one, and a generator context manager
    costs a frame and a generator per use.
    """
    return _TRANSLATING
