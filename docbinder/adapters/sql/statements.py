"""Statements built once, and :class:`PreparedStatement` for the few the producer path sends.

Core statements built at import time let SQLAlchemy reuse their compiled
form and cache key instead of coercing a new statement on every call. The
inserts and the numbering ``UPDATE`` of every produced file are
:class:`PreparedStatement`\\ s: compiled once per dialect, then sent with
``Connection.exec_driver_sql`` (ADR 0040).
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

from docbinder.adapters.sql.schema import (
    chat_documents,
    chat_messages,
    file_items,
    file_versions,
    workflows,
)
from docbinder.adapters.sql.session import SqlSession

INSERT_FILE = sa.insert(file_items)
GET_FILE = sa.select(file_items).where(file_items.c.id == sa.bindparam("id"))
LOCK_FILE = GET_FILE.with_for_update()
SHARE_FILES = (
    sa.select(file_items)
    .where(file_items.c.id.in_(sa.bindparam("ids", expanding=True)))
    .with_for_update(read=True)
)
INSERT_WORKFLOW = sa.insert(workflows)
GET_WORKFLOW = sa.select(workflows).where(workflows.c.id == sa.bindparam("id"))
INSERT_MESSAGE = sa.insert(chat_messages)
INSERT_DOCUMENTS = sa.insert(chat_documents)
BUMP_SEQUENCE = (
    sa.update(workflows)
    .where(workflows.c.id == sa.bindparam("wf"))
    .values(last_sequence_nr=workflows.c.last_sequence_nr + 1)
)
COUNTERS = (workflows.c.current_round, workflows.c.current_task, workflows.c.current_action)
# What numbering a message reads from the row it locks: the number and the counters.
POSITION = (workflows.c.last_sequence_nr, *COUNTERS)
# The owner the attach checks its rights on, read before the row is locked (ADR 0038).
READ_OWNER = sa.select(
    workflows.c.mandate_id, workflows.c.feature_instance_id, workflows.c.created_by
).where(workflows.c.id == sa.bindparam("wf"))
BUMP_SEQUENCE_RETURNING = BUMP_SEQUENCE.returning(*POSITION)
READ_POSITION = sa.select(*POSITION).where(workflows.c.id == sa.bindparam("wf"))
READ_COUNTERS = sa.select(*COUNTERS).where(workflows.c.id == sa.bindparam("wf"))
DOCUMENTS_BY_LABELS = (
    sa.select(
        chat_documents,
        chat_messages.c.label_hash.label("message_label_hash"),
        chat_messages.c.documents_label.label("message_label"),
    )
    .join(chat_messages, chat_documents.c.message_id == chat_messages.c.id)
    .where(
        chat_messages.c.workflow_id == sa.bindparam("wf"),
        chat_messages.c.label_hash.in_(sa.bindparam("hashes", expanding=True)),
    )
)
# No ORDER BY (see ``documents_by_file``): the rows are put in order in Python.
DOCUMENTS_BY_FILES = sa.select(chat_documents).where(
    chat_documents.c.workflow_id == sa.bindparam("wf"),
    chat_documents.c.file_id.in_(sa.bindparam("values", expanding=True)),
)
DOCUMENTS_BY_FILE_NAMES = sa.select(chat_documents).where(
    chat_documents.c.workflow_id == sa.bindparam("wf"),
    chat_documents.c.file_name.in_(sa.bindparam("values", expanding=True)),
)

INSERT_VERSION = sa.insert(file_versions)
LATEST_VERSION = (
    sa.select(file_versions)
    .where(file_versions.c.series_key == sa.bindparam("key"))
    .order_by(file_versions.c.version.desc())
    .limit(1)
)
GET_VERSION = sa.select(file_versions).where(
    file_versions.c.series_key == sa.bindparam("key"),
    file_versions.c.version == sa.bindparam("version"),
)
LIST_VERSIONS = (
    sa.select(file_versions)
    .where(file_versions.c.series_key == sa.bindparam("key"))
    .order_by(file_versions.c.version)
)
VERSION_OF = sa.select(file_versions).where(file_versions.c.file_id == sa.bindparam("id"))
DELETE_VERSION_OF = sa.delete(file_versions).where(file_versions.c.file_id == sa.bindparam("id"))
SERIES_NAMES = (
    sa.select(file_versions.c.series_name)
    .where(file_versions.c.space_key == sa.bindparam("space"))
    .distinct()
)


def _find_duplicates_statement(with_feature: bool) -> sa.Select[Any]:
    # The unique index on dedup_key finds the row; the other comparisons
    # make the match exact by definition rather than by hash.
    fi = file_items.c
    return sa.select(file_items).where(
        fi.dedup_key == sa.bindparam("key"),
        fi.sha256 == sa.bindparam("sha256"),
        fi.file_name == sa.bindparam("file_name"),
        fi.created_by == sa.bindparam("created_by"),
        fi.mandate_id == sa.bindparam("mandate_id"),
        fi.feature_instance_id == sa.bindparam("feature_instance_id")
        if with_feature
        else fi.feature_instance_id.is_(None),
    )


FIND_DUPLICATES = {
    True: _find_duplicates_statement(True),
    False: _find_duplicates_statement(False),
}
"""The duplicate lookup, keyed by whether the scope names a feature instance."""


class PreparedStatement:
    """A Core ``INSERT``/``UPDATE``/``DELETE`` compiled once per dialect, sent as driver SQL.

    ``Connection.execute`` of a Core statement spends most of its CPU
    looking the compiled form up by cache key, building the execution
    context for a compiled statement and processing parameters (about
    20-30 µs per statement on SQLite, against 5-10 µs through
    ``Connection.exec_driver_sql``). For the statements every produced file
    sends, this class keeps, per dialect and set of parameter names, what
    SQLAlchemy's compiler made of the statement (``Compiled.string``, the
    parameter order, each bind type's ``bind_processor`` for that dialect)
    and sends it with ``Connection.exec_driver_sql``: the SQL text is the
    one ``Connection.execute`` would send (PostgreSQL's bind casts
    included), and events, transactions and the wrapping of driver errors
    (``IntegrityError``, disconnects) stay SQLAlchemy's, the same for every
    backend. Result rows get no type processing: use it for statements
    whose result is a row count or plain values.

    Parameters are one dict, or a list of dicts with the same keys
    (executemany). Thread-safe: the per-dialect entries are built once and
    only replaced by an equal one if two threads race.
    """

    __slots__ = ("_prepared", "_statement")

    def __init__(self, statement: sa.Insert | sa.Update | sa.Delete) -> None:
        self._statement = statement
        self._prepared: weakref.WeakKeyDictionary[Dialect, dict[tuple[str, ...], _Prepared]] = (
            weakref.WeakKeyDictionary()
        )

    def execute(
        self, session: SqlSession, parameters: dict[str, Any] | list[dict[str, Any]]
    ) -> sa.CursorResult[*tuple[Any, ...]]:
        """Run with ``parameters``; raises what ``Connection.exec_driver_sql`` raises."""
        if isinstance(parameters, list):
            prepared = self._prepare(session.dialect, tuple(parameters[0]))
            bind = prepared.bind
            return session.execute_driver_sql(prepared.sql, [bind(row) for row in parameters])
        prepared = self._prepare(session.dialect, tuple(parameters))
        return session.execute_driver_sql(prepared.sql, prepared.bind(parameters))

    def rowcount(self, session: SqlSession, parameters: dict[str, Any]) -> int:
        """Run with ``parameters``; the number of rows the driver says it matched."""
        count = self.execute(session, parameters).rowcount
        return int(count) if isinstance(count, int) else 0

    def first(self, session: SqlSession, parameters: dict[str, Any]) -> tuple[Any, ...] | None:
        """Run with ``parameters``; the first returned row as a plain tuple, or ``None``."""
        rows = self.execute(session, parameters).fetchall()
        return tuple(rows[0]) if rows else None

    def _prepare(self, dialect: Dialect, keys: tuple[str, ...]) -> _Prepared:
        per_dialect = self._prepared.get(dialect)
        if per_dialect is None:
            per_dialect = self._prepared.setdefault(dialect, {})
        prepared = per_dialect.get(keys)
        if prepared is None:
            compiled = self._statement.compile(dialect=dialect, column_keys=list(keys))
            if not isinstance(compiled, SQLCompiler):  # pragma: no cover - DML always is
                raise TypeError(f"expected an SQL compiler, got {type(compiled).__name__}")
            prepared = _Prepared(compiled, dialect, keys)
            per_dialect[keys] = prepared
        return prepared


class _Prepared:
    """One compiled form of a :class:`PreparedStatement`: SQL text, parameter order, processors.

    ``keys`` are the names of the parameters a caller passes. Which driver
    parameter takes which of them, and the value of every other bind (the
    ``1`` of ``last_sequence_nr + 1``), is worked out once from what
    ``Compiled.construct_params`` gives for marker values; :meth:`bind` then
    only picks and processes values, which is what ``construct_params`` plus
    the processors would give.
    """

    __slots__ = ("_names", "_pick", "_plan", "_positional", "_processed", "sql")

    def __init__(self, compiled: SQLCompiler, dialect: Dialect, keys: Sequence[str]) -> None:
        self.sql = compiled.string
        processors: dict[str, Callable[[Any], Any]] = {}
        for bind, name in compiled.bind_names.items():
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                processors[name] = process
        markers = {key: object() for key in keys}
        by_marker = {id(marker): key for key, marker in markers.items()}
        values = compiled.construct_params(markers)
        self._positional = bool(compiled.positional)
        names = tuple(compiled.positiontup or ()) if self._positional else tuple(values)
        plan: list[tuple[str, str | None, Any, Callable[[Any], Any] | None]] = []
        for name in names:
            value = values[name]
            processor = processors.get(name)
            key = by_marker.get(id(value))
            if key is not None:
                plan.append((name, key, None, processor))
            else:  # a value the statement itself holds: processed once, here
                plan.append((name, None, value if processor is None else processor(value), None))
        self._plan = tuple(plan)
        self._names = tuple(name for name, *_rest in plan)
        # The usual statement (an insert) takes every value from the caller: one
        # itemgetter picks them all, and only the few typed columns are processed.
        picked = [key for _name, key, _fixed, _process in plan]
        self._pick = (
            operator.itemgetter(*picked)
            if len(picked) > 1 and all(key is not None for key in picked)
            else None
        )
        self._processed = tuple(
            (index, process)
            for index, (_name, _key, _fixed, process) in enumerate(plan)
            if process is not None
        )

    def bind(self, parameters: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        """The driver parameters for ``parameters`` (literal binds of the statement included)."""
        values: list[Any] | tuple[Any, ...]
        if self._pick is not None:
            values = self._pick(parameters)
            if self._processed:
                values = list(values)
                for index, process in self._processed:
                    values[index] = process(values[index])
        else:
            values = [
                fixed
                if key is None
                else (parameters[key] if process is None else process(parameters[key]))
                for _name, key, fixed, process in self._plan
            ]
        if self._positional:
            return tuple(values)
        return dict(zip(self._names, values, strict=True))


PREPARED_INSERT_FILE = PreparedStatement(INSERT_FILE)
PREPARED_INSERT_MESSAGE = PreparedStatement(INSERT_MESSAGE)
PREPARED_INSERT_DOCUMENTS = PreparedStatement(INSERT_DOCUMENTS)
PREPARED_BUMP_SEQUENCE = PreparedStatement(BUMP_SEQUENCE)
PREPARED_BUMP_SEQUENCE_RETURNING = PreparedStatement(BUMP_SEQUENCE_RETURNING)
