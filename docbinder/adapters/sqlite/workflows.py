"""Workflows, ChatMessages and ChatDocuments on ``sqlite3``: the :class:`~docbinder.ports.metadata.WorkflowRepository`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from docbinder.adapters.sql.errors import integrity_error
from docbinder.adapters.sql.rows import to_row
from docbinder.adapters.sql.schema import (
    chat_documents,
    chat_messages,
    label_hash,
    sqlite_utc_text,
    workflows,
)
from docbinder.adapters.sqlite.files import (
    IN_CHUNK,
    check_limit,
    newest_first_sql,
    rows_by_id,
)
from docbinder.adapters.sqlite.rows import RowCodec, columns, loader, placeholders, select_sql
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.access import Resource, ResourceKind
from docbinder.domain.counters import MAX_COUNTER, CounterStep, WorkflowCounters
from docbinder.domain.errors import DocbinderError, StorageError, WorkflowNotFound
from docbinder.domain.model import ChatDocument, ChatMessage, ChatWorkflow, Scope

WORKFLOWS = RowCodec(workflows, ChatWorkflow)
MESSAGES = RowCodec(chat_messages, ChatMessage)
DOCUMENTS = RowCodec(chat_documents, ChatDocument)
load_workflow = loader(WORKFLOWS, ChatWorkflow)
load_message = loader(MESSAGES, ChatMessage)
load_document = loader(DOCUMENTS, ChatDocument)

COUNTERS = ("current_round", "current_task", "current_action")
# What numbering a message reads from the row it takes the number from: the number,
# the counters, and the owner the attach checks its rights on (ADR 0038).
_POSITION = ("last_sequence_nr", *COUNTERS, "mandate_id", "feature_instance_id", "created_by")
_BUMP = "UPDATE workflows SET last_sequence_nr = last_sequence_nr + 1 WHERE id = ?"
_BUMP_RETURNING = f"{_BUMP} RETURNING {', '.join(_POSITION)}"
_READ_POSITION = f"SELECT {', '.join(_POSITION)} FROM workflows WHERE id = ?"
_UNBUMP = (
    "UPDATE workflows SET last_sequence_nr = last_sequence_nr - 1 "
    "WHERE id = ? AND last_sequence_nr = ?"
)
_RETURNING = sqlite3.sqlite_version_info >= (3, 35)
"""Whether SQLite has ``UPDATE ... RETURNING`` (3.35, 2021)."""

_GET_WORKFLOW = select_sql(workflows, "WHERE id = ?")
_UPDATE_WORKFLOW = (
    "UPDATE workflows SET status = ?, current_round = ?, current_task = ?, current_action = ? "
    "WHERE id = ?"
)
_READ_COUNTERS = f"SELECT {', '.join(COUNTERS)} FROM workflows WHERE id = ?"
_DOCUMENT_COLUMNS = ", ".join(f"d.{name}" for name in columns(chat_documents))
_DOCUMENTS_OF_MESSAGES = (
    f"SELECT {_DOCUMENT_COLUMNS} FROM chat_documents AS d "
    "JOIN chat_messages AS m ON d.message_id = m.id"
)
_DOCUMENTS_BY_LABEL = (
    f"{_DOCUMENTS_OF_MESSAGES} WHERE m.workflow_id = ? AND m.label_hash = ? "
    "AND m.documents_label = ? ORDER BY d.position"
)
_DOCUMENTS_BY_FILE = select_sql(chat_documents, "WHERE workflow_id = ? AND file_id = ?")
_RECENT_DOCUMENTS = select_sql(
    chat_documents, "WHERE workflow_id = ? ORDER BY sequence_nr DESC, position DESC LIMIT ?"
)
_MESSAGES_OF = select_sql(chat_messages, "WHERE workflow_id = ? ORDER BY sequence_nr")
_DOCUMENTS_OF = select_sql(chat_documents, "WHERE workflow_id = ? ORDER BY sequence_nr, position")
_COUNT_FOR_FILE = "SELECT count(*) FROM chat_documents WHERE file_id = ?"
_DELETE_MESSAGE = "DELETE FROM chat_messages WHERE id = ?"
_DELETE_MESSAGE_DOCUMENTS = "DELETE FROM chat_documents WHERE message_id = ?"
_SEQUENCE_AT = columns(chat_documents).index("sequence_nr")
_POSITION_AT = columns(chat_documents).index("position")


def _stored_order(row: Sequence[Any]) -> tuple[int, int]:
    """A stored ChatDocument row's place in its workflow: (``sequence_nr``, ``position``)."""
    return row[_SEQUENCE_AT], row[_POSITION_AT]


class _AdmitRaised(DocbinderError):
    """What ``add_message``'s ``admit`` raised, if not a docbinder error, carried out of its block.

    ``admit`` runs no statement, so whatever it raises is a refusal the block
    can undo (:meth:`SqliteSession.undoable` undoes a block only for
    docbinder and driver errors, and refuses further work of the unit after
    any other exception). ``add_message`` raises :attr:`error` again once the
    block is undone, so the unit stays usable: a ``produce_file`` still
    stores its file when a custom authorizer fails.
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _admit(admit: Callable[[Resource], None], owner: Resource) -> None:
    """Call ``admit`` on ``owner``; an exception other than a docbinder error comes as :class:`_AdmitRaised`."""
    try:
        admit(owner)
    except DocbinderError:
        raise
    except Exception as exc:
        raise _AdmitRaised(exc) from exc


def _not_ahead(names: Sequence[str], values: Sequence[int]) -> tuple[str, tuple[int, ...]]:
    """``(names) <= (values)`` compared left to right, as SQL text and its parameters."""
    if not names:
        return "1", ()
    rest, rest_params = _not_ahead(names[1:], values[1:])
    first, value = names[0], values[0]
    return (
        f"({first} < ? OR ({first} = ? AND {rest}))",
        (value, value, *rest_params),
    )


class SqliteWorkflowRepository:
    """Workflows, messages and documents in their tables; see the port for the contract."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def add_workflow(self, workflow: ChatWorkflow) -> None:
        row = to_row(workflow)
        row["last_sequence_nr"] = 0
        with translating():
            try:
                with self._session.one_statement():
                    self._session.rowcount(WORKFLOWS.insert_sql, WORKFLOWS.values(row))
            except sqlite3.IntegrityError as err:
                raise integrity_error(err, workflows) from err

    def get_workflow(self, workflow_id: str) -> ChatWorkflow | None:
        with translating():
            row = self._session.one(_GET_WORKFLOW, (workflow_id,))
        return None if row is None else load_workflow(row)

    def update_workflow(self, workflow: ChatWorkflow) -> None:
        row = to_row(workflow)
        params = (*(row[name] for name in ("status", *COUNTERS)), workflow.id)
        with translating():
            changed = self._session.rowcount(_UPDATE_WORKFLOW, params)
        if changed == 0:
            raise WorkflowNotFound(f"no workflow {workflow.id}")

    def advance_counters(self, workflow_id: str, step: CounterStep) -> WorkflowCounters:
        """One conditional ``UPDATE`` of the counters, then a read of the row.

        An increment is ``SET level = level + 1`` (below ``MAX_COUNTER``); an
        absolute step sets the values only ``WHERE`` the stored counters are
        not ahead of them, compared left to right. The writing unit holds
        SQLite's write lock, so no other unit's advance comes in between. When
        no row changed, the stored counters say why (:class:`WorkflowNotFound`,
        :class:`CountersWouldGoBack`, :class:`InvalidInput` at the maximum).
        """
        names = COUNTERS[step.index :]
        top = names[0]
        assignments = [f"{name} = ?" for name in names[1:]]
        params: tuple[Any, ...] = tuple(step.below)
        if step.value is None:
            assignments.insert(0, f"{top} = {top} + 1")
            condition = f"{top} < ?"
            condition_params: tuple[int, ...] = (MAX_COUNTER,)
        else:
            assignments.insert(0, f"{top} = ?")
            params = (step.value, *params)
            condition, condition_params = _not_ahead(names, (step.value, *step.below))
        sql = f"UPDATE workflows SET {', '.join(assignments)} WHERE id = ? AND {condition}"
        with translating():
            changed = self._session.rowcount(sql, (*params, workflow_id, *condition_params))
            row = self._session.one(_READ_COUNTERS, (workflow_id,))
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        stored = WorkflowCounters(*row)
        if changed == 0:
            step.apply(stored)  # raises the reason: behind, or at the maximum
            raise StorageError(
                f"the counters of workflow {workflow_id} could not be advanced; try again"
            )
        return stored

    def add_message(
        self, message: ChatMessage, admit: Callable[[Resource], None] | None = None
    ) -> ChatMessage:
        """Insert the message and its documents; return it with its number and position.

        The number comes from incrementing ``workflows.last_sequence_nr``; the
        writing unit holds SQLite's write lock from its first write, so units
        adding to one workflow never share a number. The same statement
        returns the counters (ADR 0026) and the workflow's scope and creator,
        which ``admit`` gets before the message is inserted (ADR 0038). The
        block is undoable (:meth:`SqliteSession.undoable`): on
        ``DuplicateLabel``, ``Conflict`` (taken message or document id),
        ``WorkflowNotFound`` or anything ``admit`` raises (an exception other
        than a docbinder error is carried through the block by
        :class:`_AdmitRaised`) the block's own statements take back what it
        did, the number is not used up and the unit stays usable.
        """
        wf = message.workflow_id
        session = self._session
        table = chat_messages
        done: list[int] = []  # the number taken, then 1 once the message row is in

        def undo() -> None:
            # The unit holds the write lock: the rows and the counter are as this block left them.
            if len(done) == 2:
                session.rowcount(_DELETE_MESSAGE_DOCUMENTS, (message.id,))
                session.rowcount(_DELETE_MESSAGE, (message.id,))
            if done and session.rowcount(_UNBUMP, (wf, done[0])) != 1:
                raise StorageError(f"the message number of workflow {wf} could not be given back")

        with translating():
            try:
                with session.undoable(undo):
                    seq, counters, owner = self._take_position(wf)
                    done.append(seq)
                    if admit is not None:
                        _admit(admit, owner)
                    stored = message.placed(seq, counters)
                    row = to_row(stored)
                    row["label_hash"] = label_hash(stored.documents_label)
                    session.rowcount(MESSAGES.insert_sql, MESSAGES.values(row))
                    done.append(1)
                    if stored.documents:
                        table = chat_documents
                        doc_rows = [
                            DOCUMENTS.values(
                                {**to_row(doc), "sequence_nr": seq, "position": position}
                            )
                            for position, doc in enumerate(stored.documents)
                        ]
                        if len(doc_rows) == 1:
                            session.rowcount(DOCUMENTS.insert_sql, doc_rows[0])
                        else:
                            session.executemany(DOCUMENTS.insert_sql, doc_rows).close()
            except sqlite3.IntegrityError as err:
                raise integrity_error(err, table) from err
            except _AdmitRaised as carried:
                error = carried.error
                raise error from error.__cause__
        return stored

    def _take_position(self, workflow_id: str) -> tuple[int, WorkflowCounters, Resource]:
        """The next ``sequence_nr``, the counters and the owner; :class:`WorkflowNotFound` if absent.

        One ``UPDATE ... RETURNING`` (SQLite 3.35 and later); before, the
        ``UPDATE`` and a read of the row it changed.
        """
        session = self._session
        if _RETURNING:
            row = session.one(_BUMP_RETURNING, (workflow_id,))
        elif session.rowcount(_BUMP, (workflow_id,)) == 0:
            row = None
        else:
            row = session.one(_READ_POSITION, (workflow_id,))
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        sequence_nr, current_round, current_task, current_action, mandate, feature, owner = row
        return (
            int(sequence_nr),
            WorkflowCounters(current_round, current_task, current_action),
            Resource(ResourceKind.WORKFLOW, Scope(mandate, feature), owner, workflow_id),
        )

    def get_documents(
        self, workflow_id: str, document_ids: Sequence[str]
    ) -> dict[str, ChatDocument]:
        wanted = list(dict.fromkeys(document_ids))
        found: dict[str, ChatDocument] = {}
        # Primary-key lookup only; other workflows' rows are dropped here.
        for row in rows_by_id(self._session, select_sql(chat_documents), wanted):
            doc = load_document(row)
            if doc.workflow_id == workflow_id:
                found[doc.id] = doc
        return {doc_id: found[doc_id] for doc_id in wanted if doc_id in found}

    def documents_by_label(self, workflow_id: str, label: str) -> list[ChatDocument]:
        with translating():
            rows = self._session.all(_DOCUMENTS_BY_LABEL, (workflow_id, label_hash(label), label))
        return [load_document(row) for row in rows]

    def documents_by_file(self, workflow_id: str, file_id: str) -> list[ChatDocument]:
        # No ORDER BY in SQL: it would tempt the planner into the workflow's
        # ordering index (a walk over every document); the few rows of one
        # file are put in order here instead.
        with translating():
            rows = self._session.all(_DOCUMENTS_BY_FILE, (workflow_id, file_id))
        rows.sort(key=_stored_order)
        return [load_document(row) for row in rows]

    def documents_by_labels(
        self, workflow_id: str, labels: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` labels on the ``(workflow_id, label_hash)`` index.

        The label itself is compared in Python against the one asked for, as
        :meth:`documents_by_label` compares it in SQL.
        """
        wanted = {label_hash(label): label for label in dict.fromkeys(labels)}
        hashes = list(wanted)
        found: dict[str, list[tuple[int, ChatDocument]]] = {}
        for start in range(0, len(hashes), IN_CHUNK):
            chunk = hashes[start : start + IN_CHUNK]
            sql = (
                f"SELECT {_DOCUMENT_COLUMNS}, m.label_hash, m.documents_label "
                "FROM chat_documents AS d JOIN chat_messages AS m ON d.message_id = m.id "
                f"WHERE m.workflow_id = ? AND m.label_hash IN ({placeholders(len(chunk))})"
            )
            with translating():
                rows = self._session.all(sql, (workflow_id, *chunk))
            for row in rows:
                *document, hashed, label = row
                if wanted.get(hashed) == label:
                    position = document[_POSITION_AT]
                    found.setdefault(label, []).append((position, load_document(document)))
        return {
            label: [doc for _, doc in sorted(found[label], key=lambda pair: pair[0])]
            for label in wanted.values()
            if label in found
        }

    def documents_by_files(
        self, workflow_id: str, file_ids: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` ids on the ``(workflow_id, file_id)`` index."""
        return self._documents_by("file_id", workflow_id, file_ids)

    def documents_by_file_names(
        self, workflow_id: str, names: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` names over the workflow's documents."""
        return self._documents_by("file_name", workflow_id, names)

    def _documents_by(
        self, column: str, workflow_id: str, values: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """The workflow's documents whose ``column`` is one of ``values``, by value, in stored order."""
        wanted = list(dict.fromkeys(values))
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(wanted), IN_CHUNK):
            chunk = wanted[start : start + IN_CHUNK]
            sql = select_sql(
                chat_documents,
                f"WHERE workflow_id = ? AND {column} IN ({placeholders(len(chunk))})",
            )
            with translating():
                rows.extend(self._session.all(sql, (workflow_id, *chunk)))
        rows.sort(key=_stored_order)
        found: dict[str, list[ChatDocument]] = {}
        for row in rows:
            doc = load_document(row)
            found.setdefault(getattr(doc, column), []).append(doc)
        return {value: found[value] for value in wanted if value in found}

    def recent_documents(self, workflow_id: str, limit: int) -> list[ChatDocument]:
        check_limit(limit)
        if limit == 0:
            return []
        with translating():
            rows = self._session.all(_RECENT_DOCUMENTS, (workflow_id, limit))
        return [load_document(row) for row in rows]

    def list_messages(self, workflow_id: str) -> list[ChatMessage]:
        with translating():
            message_rows = self._session.all(_MESSAGES_OF, (workflow_id,))
            document_rows = self._session.all(_DOCUMENTS_OF, (workflow_id,))
        documents: dict[str, list[ChatDocument]] = {}
        for row in document_rows:
            doc = load_document(row)
            documents.setdefault(doc.message_id, []).append(doc)
        messages = []
        for row in message_rows:
            message = load_message(row)
            messages.append(attrs.evolve(message, documents=tuple(documents.get(message.id, ()))))
        return messages

    def list_workflows(
        self, mandate_id: str, *, limit: int | None = None, after: ChatWorkflow | None = None
    ) -> list[ChatWorkflow]:
        check_limit(limit)
        sql = newest_first_sql(select_sql(workflows), after is not None, limit)
        params: tuple[Any, ...] = (mandate_id,)
        if after is not None:
            created = sqlite_utc_text(after.created_at)
            params += (created, created, after.id)
        with translating():
            rows = self._session.all(sql, params)
        return [load_workflow(row) for row in rows]

    def count_documents_for_file(self, file_id: str) -> int:
        with translating():
            row = self._session.one(_COUNT_FOR_FILE, (file_id,))
        return 0 if row is None else int(row[0])
