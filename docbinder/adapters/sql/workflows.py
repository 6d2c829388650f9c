"""Workflows, ChatMessages and ChatDocuments: the SQL :class:`~docbinder.ports.metadata.WorkflowRepository`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql.errors import integrity_error, translating
from docbinder.adapters.sql.queries import (
    IN_CHUNK,
    check_limit,
    load,
    newest_first_page,
    rowcount,
    rows_by_id,
)
from docbinder.adapters.sql.rows import to_row
from docbinder.adapters.sql.schema import chat_documents, chat_messages, label_hash, workflows
from docbinder.adapters.sql.session import SqlSession
from docbinder.adapters.sql.statements import (
    COUNTERS,
    DOCUMENTS_BY_FILE_NAMES,
    DOCUMENTS_BY_FILES,
    DOCUMENTS_BY_LABELS,
    GET_WORKFLOW,
    INSERT_WORKFLOW,
    PREPARED_BUMP_SEQUENCE,
    PREPARED_BUMP_SEQUENCE_RETURNING,
    PREPARED_INSERT_DOCUMENTS,
    PREPARED_INSERT_MESSAGE,
    READ_COUNTERS,
    READ_OWNER,
    READ_POSITION,
)
from docbinder.domain.access import Resource, ResourceKind
from docbinder.domain.counters import MAX_COUNTER, CounterStep, WorkflowCounters
from docbinder.domain.errors import StorageError, WorkflowNotFound
from docbinder.domain.model import ChatDocument, ChatMessage, ChatWorkflow, Scope


class SqlWorkflowRepository:
    """Workflows, messages and documents in their tables; see the port for the contract."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def add_workflow(self, workflow: ChatWorkflow) -> None:
        row = to_row(workflow)
        row["last_sequence_nr"] = 0
        with translating():
            try:
                with self._session.begin_nested():
                    self._session.execute(INSERT_WORKFLOW, row)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, workflows) from err

    def get_workflow(self, workflow_id: str) -> ChatWorkflow | None:
        with translating():
            row = self._session.execute(GET_WORKFLOW, {"id": workflow_id}).first()
        return None if row is None else load(row, ChatWorkflow)

    def update_workflow(self, workflow: ChatWorkflow) -> None:
        row = to_row(workflow)
        values = {
            name: row[name]
            for name in ("status", "current_round", "current_task", "current_action")
        }
        stmt = sa.update(workflows).where(workflows.c.id == workflow.id).values(values)
        with translating():
            result = self._session.execute(stmt)
        if rowcount(result) == 0:
            raise WorkflowNotFound(f"no workflow {workflow.id}")

    def advance_counters(self, workflow_id: str, step: CounterStep) -> WorkflowCounters:
        """One conditional ``UPDATE`` of the counters, then a read of the row it locked.

        An increment is ``SET level = level + 1`` (below ``MAX_COUNTER``); an
        absolute step sets the values only ``WHERE`` the stored counters are
        not ahead of them, compared left to right. Either way the database
        decides on the row as it is when the ``UPDATE`` gets its lock, so
        concurrent units never lose an advance. When no row changed, the
        stored counters say why (:class:`WorkflowNotFound`,
        :class:`CountersWouldGoBack`, :class:`InvalidInput` at the maximum).
        """
        columns = COUNTERS[step.index :]
        top = columns[0]
        values: dict[str, Any] = {c.name: v for c, v in zip(columns[1:], step.below, strict=True)}
        if step.value is None:
            values[top.name] = top + 1
            condition = top < MAX_COUNTER
        else:
            values[top.name] = step.value
            condition = _not_ahead(columns, (step.value, *step.below))
        stmt = sa.update(workflows).where(workflows.c.id == workflow_id, condition).values(values)
        with translating():
            changed = rowcount(self._session.execute(stmt))
            row = self._session.execute(READ_COUNTERS, {"wf": workflow_id}).first()
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        stored = WorkflowCounters(row.current_round, row.current_task, row.current_action)
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

        The number comes from incrementing ``workflows.last_sequence_nr``; that
        ``UPDATE`` locks the workflow row until the unit ends, so concurrent
        units adding to one workflow queue there and never share a number. The
        round/task/action numbers are read from the same locked row by the same
        statement (``RETURNING``; MariaDB reads the row it locked), so they
        never fall behind those of a message numbered earlier (ADR 0026). The
        owner ``admit`` checks is read first, without a lock, and ``admit``
        runs before the numbering statement, so a caller it refuses never
        waits for a row lock of that workflow, nor holds one (ADR 0038).
        Numbering and inserts run in one savepoint: on ``DuplicateLabel``,
        ``Conflict`` (taken message or document id) or ``WorkflowNotFound``
        nothing of the message is kept, the number is not used up and the
        unit stays usable.
        """
        wf = message.workflow_id
        table = chat_messages
        if admit is not None:
            admit(self._owner(wf))  # nothing written yet: whatever it raises leaves nothing
        with translating():
            try:
                with self._session.begin_nested():
                    seq, counters = self._take_position(wf)
                    stored = message.placed(seq, counters)
                    row = to_row(stored)
                    row["label_hash"] = label_hash(stored.documents_label)
                    PREPARED_INSERT_MESSAGE.execute(self._session, row)
                    if stored.documents:
                        table = chat_documents
                        doc_rows = [
                            {**to_row(doc), "sequence_nr": seq, "position": position}
                            for position, doc in enumerate(stored.documents)
                        ]
                        PREPARED_INSERT_DOCUMENTS.execute(self._session, doc_rows)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, table) from err
        return stored

    def _owner(self, workflow_id: str) -> Resource:
        """The stored workflow's owner, read without a lock; :class:`WorkflowNotFound` if absent."""
        with translating():
            row: tuple[Any, ...] | None = self._session.execute(
                READ_OWNER, {"wf": workflow_id}
            ).first()
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        mandate_id, feature_instance_id, created_by = tuple(row)
        return _owner_resource(workflow_id, mandate_id, feature_instance_id, created_by)

    def _take_position(self, workflow_id: str) -> tuple[int, WorkflowCounters]:
        """The next ``sequence_nr`` and the counters, from the row the increment locks.

        One ``UPDATE … RETURNING`` where the dialect has it (PostgreSQL);
        ``UPDATE`` then ``SELECT`` of the row it locked elsewhere (MariaDB: a
        unit reads its own change, made on the latest committed row).
        :class:`WorkflowNotFound` if the workflow is absent.
        """
        params = {"wf": workflow_id}
        row: tuple[Any, ...] | None
        if self._session.dialect.update_returning:
            row = PREPARED_BUMP_SEQUENCE_RETURNING.first(self._session, params)
        elif PREPARED_BUMP_SEQUENCE.rowcount(self._session, params) == 0:
            row = None
        else:
            found = self._session.execute(READ_POSITION, params).first()
            row = None if found is None else tuple(found)
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        # Both statements return the POSITION columns, in that order.
        sequence_nr, current_round, current_task, current_action = row
        return int(sequence_nr), WorkflowCounters(current_round, current_task, current_action)

    def get_documents(
        self, workflow_id: str, document_ids: Sequence[str]
    ) -> dict[str, ChatDocument]:
        wanted = list(dict.fromkeys(document_ids))
        found: dict[str, ChatDocument] = {}
        # Primary-key lookup only: with a workflow condition in the query,
        # planners may walk the workflow's index instead, which grows with the
        # workflow. Other workflows' rows are dropped here.
        for row in rows_by_id(self._session, chat_documents, wanted):
            if row.workflow_id == workflow_id:
                doc = load(row, ChatDocument)
                found[doc.id] = doc
        return {doc_id: found[doc_id] for doc_id in wanted if doc_id in found}

    def documents_by_label(self, workflow_id: str, label: str) -> list[ChatDocument]:
        d, m = chat_documents.c, chat_messages.c
        stmt = (
            sa.select(chat_documents)
            .join(chat_messages, d.message_id == m.id)
            .where(
                m.workflow_id == workflow_id,
                m.label_hash == label_hash(label),
                m.documents_label == label,
            )
            .order_by(d.position)
        )
        return self._documents(stmt)

    def documents_by_file(self, workflow_id: str, file_id: str) -> list[ChatDocument]:
        d = chat_documents.c
        # No ORDER BY in SQL: it would tempt the planner into the workflow's
        # ordering index (a walk over every document); the few rows of one
        # file are put in order here instead.
        stmt = sa.select(chat_documents).where(d.workflow_id == workflow_id, d.file_id == file_id)
        with translating():
            rows = list(self._session.execute(stmt).all())
        rows.sort(key=lambda row: (row.sequence_nr, row.position))
        return [load(row, ChatDocument) for row in rows]

    def documents_by_labels(
        self, workflow_id: str, labels: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` labels on the ``(workflow_id, label_hash)`` index.

        The label itself is compared in Python against the one asked for, as
        :meth:`documents_by_label` compares it in SQL.
        """
        wanted = {label_hash(label): label for label in dict.fromkeys(labels)}
        hashes = list(wanted)
        rows: list[sa.Row[Any]] = []
        for start in range(0, len(hashes), IN_CHUNK):
            params = {"wf": workflow_id, "hashes": hashes[start : start + IN_CHUNK]}
            with translating():
                rows.extend(self._session.execute(DOCUMENTS_BY_LABELS, params).all())
        found: dict[str, list[tuple[int, ChatDocument]]] = {}
        for row in rows:
            label = row.message_label
            if wanted.get(row.message_label_hash) == label:
                found.setdefault(label, []).append((row.position, load(row, ChatDocument)))
        return {
            label: [doc for _, doc in sorted(found[label], key=lambda pair: pair[0])]
            for label in wanted.values()
            if label in found
        }

    def documents_by_files(
        self, workflow_id: str, file_ids: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` ids on the ``(workflow_id, file_id)`` index."""
        return self._documents_by(DOCUMENTS_BY_FILES, "file_id", workflow_id, file_ids)

    def documents_by_file_names(
        self, workflow_id: str, names: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` names over the workflow's documents.

        MariaDB compares names without regard to case: only the exact ones are kept.
        """
        return self._documents_by(DOCUMENTS_BY_FILE_NAMES, "file_name", workflow_id, names)

    def _documents_by(
        self, statement: Any, column: str, workflow_id: str, values: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """The workflow's documents whose ``column`` is exactly one of ``values`` (``statement``
        selects them by ``:wf`` and ``:values``), by value, in stored order."""
        wanted = list(dict.fromkeys(values))
        rows: list[sa.Row[Any]] = []
        for start in range(0, len(wanted), IN_CHUNK):
            params = {"wf": workflow_id, "values": wanted[start : start + IN_CHUNK]}
            with translating():
                rows.extend(self._session.execute(statement, params).all())
        rows.sort(key=lambda row: (row.sequence_nr, row.position))
        found: dict[str, list[ChatDocument]] = {}
        for row in rows:
            found.setdefault(getattr(row, column), []).append(load(row, ChatDocument))
        return {value: found[value] for value in wanted if value in found}

    def recent_documents(self, workflow_id: str, limit: int) -> list[ChatDocument]:
        check_limit(limit)
        if limit == 0:
            return []
        d = chat_documents.c
        stmt = (
            sa.select(chat_documents)
            .where(d.workflow_id == workflow_id)
            .order_by(d.sequence_nr.desc(), d.position.desc())
            .limit(limit)
        )
        return self._documents(stmt)

    def list_messages(self, workflow_id: str) -> list[ChatMessage]:
        m, d = chat_messages.c, chat_documents.c
        with translating():
            message_rows = self._session.execute(
                sa.select(chat_messages).where(m.workflow_id == workflow_id).order_by(m.sequence_nr)
            ).all()
            document_rows = self._session.execute(
                sa.select(chat_documents)
                .where(d.workflow_id == workflow_id)
                .order_by(d.sequence_nr, d.position)
            ).all()
        documents: dict[str, list[ChatDocument]] = {}
        for row in document_rows:
            doc = load(row, ChatDocument)
            documents.setdefault(doc.message_id, []).append(doc)
        messages = []
        for row in message_rows:
            message = load(row, ChatMessage)
            messages.append(attrs.evolve(message, documents=tuple(documents.get(message.id, ()))))
        return messages

    def list_workflows(
        self, mandate_id: str, *, limit: int | None = None, after: ChatWorkflow | None = None
    ) -> list[ChatWorkflow]:
        rows = newest_first_page(self._session, workflows, mandate_id, limit, after)
        return [load(row, ChatWorkflow) for row in rows]

    def count_documents_for_file(self, file_id: str) -> int:
        stmt = (
            sa.select(sa.func.count())
            .select_from(chat_documents)
            .where(chat_documents.c.file_id == file_id)
        )
        with translating():
            return int(self._session.execute(stmt).scalar_one())

    def _documents(self, stmt: sa.Select[Any]) -> list[ChatDocument]:
        with translating():
            rows = self._session.execute(stmt).all()
        return [load(row, ChatDocument) for row in rows]


def _owner_resource(
    workflow_id: str, mandate_id: str, feature_instance_id: str | None, created_by: str
) -> Resource:
    """The access-control resource of a stored workflow, from its columns."""
    return Resource(
        ResourceKind.WORKFLOW, Scope(mandate_id, feature_instance_id), created_by, workflow_id
    )


def _not_ahead(
    columns: Sequence[sa.ColumnElement[int]], values: Sequence[int]
) -> sa.ColumnElement[bool]:
    """``(columns) <= (values)`` compared left to right, written out (portable to every backend)."""
    if not columns:
        return sa.true()
    first, value = columns[0], values[0]
    return sa.or_(first < value, sa.and_(first == value, _not_ahead(columns[1:], values[1:])))
