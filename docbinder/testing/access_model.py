"""A model-based test of access control through the whole binder (SPEC C2, C7, C11).

:class:`AccessModel` is a Hypothesis state machine. Random principals in three
mandates (each with the feature instances ``fi-1`` and ``fi-2``; the same names
in every mandate on purpose, so that only the mandate keeps them apart) and at
mandate level, with the roles ``viewer``, ``member`` and ``admin``, store files,
store copies of bytes and names that exist anywhere, produce files into their
runs, attach any file they have seen to their bound workflow, bind their run to
any workflow, and delete any file. A plain reference model (dicts of the files,
workflows and documents that exist, with scope and owner) and :func:`may`, the
role table's rules written out again, predict every answer.

After every step the invariants check, for every principal:

* ``list_files`` shows exactly the live files it may read, and ``get_file`` /
  ``open_file`` give each of them (with the stored bytes) and refuse every
  other one (deleted, other feature instance, other mandate);
* a refusal looks exactly like the answer for a random id that never existed:
  same exception type and same message apart from the id (no existence oracle);
* ``Run.resolve`` with references to everything that exists anywhere (every
  ``docItem:``, every ``file:``, every ``docList:`` label, plus random ids)
  returns only documents of the bound workflow whose file it may read, every
  such document, and for everything else the reason the model predicts; a
  reference to something outside the workflow gets the same reason and message
  as a random one.

Store steps check that a duplicate is only ever a file the caller may read, in
its own scope and by its own user (no ghost duplicate, SPEC C2), and that a
readable duplicate is always found.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from docbinder.application import DocBinder
from docbinder.application.binder import Run
from docbinder.application.use_cases.resolve_document_list import Resolution, UnresolvedReason
from docbinder.domain.access import Action
from docbinder.domain.errors import (
    AccessDenied,
    FileItemNotFound,
    NoActiveWorkflow,
    NotFound,
    WorkflowNotFound,
)
from docbinder.domain.model import FileItem, Principal, Scope

MANDATES = ("mandate-1", "mandate-2", "mandate-3")
FEATURE_INSTANCES: tuple[str | None, ...] = (None, "fi-1", "fi-2")
"""``None`` is a mandate-level principal; the two names repeat in every mandate."""
USERS = ("ann", "ben", "cid")
ROLES = ("viewer", "member", "admin")
FILE_NAMES = ("notes.txt", "report.md", "data.csv")
CONTENTS = (b"", b"alpha", b"beta\n" * 3)
LABELS = ("agent_tool_output", "writeFile:notes.txt", "lbl")
MAX_ACTORS = 7

principal_specs = st.builds(
    Principal,
    user_id=st.sampled_from(USERS),
    mandate_id=st.sampled_from(MANDATES),
    feature_instance_id=st.sampled_from(FEATURE_INSTANCES),
    roles=st.sampled_from(ROLES).map(lambda role: (role,)),
)


def may(principal: Principal, action: Action, scope: Scope, owner: str) -> bool:
    """The role table's rules, written out independently of every adapter.

    Never across mandates; ``admin`` everything in its mandate; a
    feature-instance resource only inside that feature instance; mandate-level
    resources mandate-wide; ``viewer`` reads; ``member`` reads and creates, and
    updates or deletes what it owns.
    """
    if principal.mandate_id != scope.mandate_id:
        return False
    if "admin" in principal.roles:
        return True
    if scope.feature_instance_id is not None and (
        scope.feature_instance_id != principal.feature_instance_id
    ):
        return False
    if action is Action.READ:
        return "viewer" in principal.roles or "member" in principal.roles
    if action is Action.CREATE:
        return "member" in principal.roles
    return "member" in principal.roles and owner == principal.user_id


def without_id(message: str, ident: str) -> str:
    """``message`` with ``ident`` replaced, so answers for two ids can be compared."""
    return message.replace(ident, "<id>")


def random_id() -> str:
    """An id that no entity has (the binder's ids are random version-4 UUIDs too)."""
    return str(uuid.uuid4())


@attrs.define
class FileRecord:
    """A FileItem the model knows of: as the binder returned it, with its bytes."""

    item: FileItem
    data: bytes
    deleted: bool = False

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def scope(self) -> Scope:
        return self.item.scope

    @property
    def owner(self) -> str:
        return self.item.created_by


@attrs.frozen
class WorkflowRecord:
    """A workflow the model knows of."""

    id: str
    scope: Scope
    owner: str


@attrs.frozen
class DocumentRecord:
    """A ChatDocument the model knows of, with the label of its message."""

    id: str
    workflow_id: str
    file_id: str
    label: str


@attrs.define
class Actor:
    """A principal and its current run (bound to a workflow or not)."""

    principal: Principal
    run: Run


Pair = tuple[Actor, Any]
"""An actor and what it acts on (a FileRecord, a workflow id or ``None``)."""


@attrs.define
class MachineStats:
    """What the runs of one test covered: invariant checks made, and the most files they checked."""

    checks: int = 0
    most_files: int = 0
    most_documents: int = 0


class AccessModel(RuleBasedStateMachine):
    """The state machine; build it with a fresh, empty :class:`DocBinder` per example."""

    def __init__(
        self,
        binder: DocBinder,
        teardown: Callable[[], None] | None = None,
        stats: MachineStats | None = None,
    ) -> None:
        super().__init__()
        self.binder = binder
        self._teardown = teardown
        self.stats = stats if stats is not None else MachineStats()
        self.actors: list[Actor] = []
        self.files: dict[str, FileRecord] = {}
        self.workflows: dict[str, WorkflowRecord] = {}
        self.documents: dict[str, DocumentRecord] = {}

    def teardown(self) -> None:
        if self._teardown is not None:
            self._teardown()

    # -- helpers ------------------------------------------------------------------

    def _live_files(self) -> list[FileRecord]:
        return [f for f in self.files.values() if not f.deleted]

    def _may_file(self, principal: Principal, action: Action, record: FileRecord) -> bool:
        return not record.deleted and may(principal, action, record.scope, record.owner)

    def _may_workflow(self, principal: Principal, action: Action, workflow_id: str) -> bool:
        workflow = self.workflows[workflow_id]
        return may(principal, action, workflow.scope, workflow.owner)

    def _not_found_answer(self, principal: Principal) -> tuple[type[BaseException], str]:
        """What ``get_file`` says for an id that never existed."""
        ident = random_id()
        with pytest.raises(NotFound) as caught:
            self.binder.get_file(principal, ident)
        return type(caught.value), without_id(str(caught.value), ident)

    def _pick(self, data: st.DataObject, anything: list[Pair], *interesting: list[Pair]) -> Pair:
        """An (actor, target) pair: from ``anything`` or from one of the ``interesting`` lists.

        Uniform choices rarely hit the interesting cases (an admin attaching to
        another user's workflow, a viewer trying to delete what it can read), so
        each non-empty ``interesting`` list gets an equal share with ``anything``,
        which keeps every refusal in play.
        """
        pools = [anything, *(pool for pool in interesting if pool)]
        pool = data.draw(st.sampled_from(pools), label="pool") if len(pools) > 1 else anything
        return data.draw(st.sampled_from(pool), label="actor and target")

    def _add_actor(self, principal: Principal) -> None:
        if may(principal, Action.CREATE, principal.scope, principal.user_id):
            run = self.binder.start_new_run(principal)
            workflow = run.workflow
            assert workflow is not None
            assert workflow.scope == principal.scope
            assert workflow.created_by == principal.user_id
            assert workflow.id not in self.workflows
            self.workflows[workflow.id] = WorkflowRecord(
                workflow.id, workflow.scope, workflow.created_by
            )
        else:
            with pytest.raises(AccessDenied):
                self.binder.start_new_run(principal)
            run = self.binder.start_run(principal)
            assert run.workflow is None
        self.actors.append(Actor(principal, run))

    def _expect_store(self, principal: Principal, name: str, data: bytes) -> set[str] | None:
        """``None`` if storing is denied, else the ids a duplicate may be (empty: a new file)."""
        if not may(principal, Action.CREATE, principal.scope, principal.user_id):
            return None
        sha = hashlib.sha256(data).hexdigest()
        return {
            f.id
            for f in self._live_files()
            if f.item.sha256 == sha
            and f.item.file_name == name
            and f.owner == principal.user_id
            and f.scope == principal.scope
            and self._may_file(principal, Action.READ, f)
        }

    def _record_store(
        self,
        principal: Principal,
        name: str,
        data: bytes,
        expected: set[str],
        item: FileItem,
        duplicate: bool,
    ) -> None:
        # Whatever comes back is readable by the caller: never a ghost duplicate.
        assert may(principal, Action.READ, item.scope, item.created_by), (
            f"ghost duplicate: {principal} cannot read the returned {item}"
        )
        assert item.scope == principal.scope
        assert item.created_by == principal.user_id
        assert item.file_name == name
        assert item.size == len(data)
        assert item.sha256 == hashlib.sha256(data).hexdigest()
        if expected:
            assert duplicate, "a readable duplicate exists and was not found"
            assert item.id in expected
            event("store: duplicate found")
        else:
            assert not duplicate, f"duplicate {item.id} although no readable candidate exists"
            assert item.id not in self.files
            self.files[item.id] = FileRecord(item, data)

    def _store(self, actor: Actor, name: str, data: bytes) -> None:
        principal = actor.principal
        expected = self._expect_store(principal, name, data)
        if expected is None:
            with pytest.raises(AccessDenied):
                actor.run.store_file(name, data)
            return
        stored = actor.run.store_file(name, data)
        self._record_store(principal, name, data, expected, stored.item, stored.duplicate)

    def _record_document(
        self, actor: Actor, document_id: str, file_id: str, requested_label: str
    ) -> None:
        workflow = actor.run.workflow
        assert workflow is not None
        message = workflow.messages[-1]
        assert [d.id for d in message.documents] == [document_id]
        assert message.documents[0].workflow_id == workflow.id
        assert message.documents[0].file_id == file_id
        label = message.documents_label
        used = {d.label for d in self.documents.values() if d.workflow_id == workflow.id}
        if requested_label in used:
            assert label.startswith(requested_label + "#"), label
        else:
            assert label == requested_label
        assert label not in used
        assert document_id not in self.documents
        self.documents[document_id] = DocumentRecord(document_id, workflow.id, file_id, label)

    # -- rules ----------------------------------------------------------------------

    @initialize(principals=st.lists(principal_specs, min_size=2, max_size=3))
    def start(self, principals: list[Principal]) -> None:
        for principal in principals:
            self._add_actor(principal)

    @precondition(lambda self: len(self.actors) < MAX_ACTORS)
    @rule(principal=principal_specs)
    def add_principal(self, principal: Principal) -> None:
        self._add_actor(principal)

    @rule(data=st.data(), name=st.sampled_from(FILE_NAMES), content=st.sampled_from(CONTENTS))
    def store(self, data: st.DataObject, name: str, content: bytes) -> None:
        self._store(data.draw(st.sampled_from(self.actors), label="actor"), name, content)

    @precondition(lambda self: any(not f.deleted for f in self.files.values()))
    @rule(data=st.data())
    def store_existing_bytes_and_name(self, data: st.DataObject) -> None:
        """Store the bytes and name of a file that exists anywhere (any scope, any owner)."""
        actor = data.draw(st.sampled_from(self.actors), label="actor")
        source = data.draw(st.sampled_from(self._live_files()), label="source")
        self._store(actor, source.item.file_name, source.data)

    @rule(
        data=st.data(),
        name=st.sampled_from(FILE_NAMES),
        content=st.sampled_from(CONTENTS),
        label=st.sampled_from(LABELS),
    )
    def produce(self, data: st.DataObject, name: str, content: bytes, label: str) -> None:
        """The producer path: store, duplicate check, attach, tool-result text."""
        actor = data.draw(st.sampled_from(self.actors), label="actor")
        principal = actor.principal
        expected = self._expect_store(principal, name, content)
        if expected is None:
            with pytest.raises(AccessDenied):
                actor.run.produce_file(name, content, label=label)
            return
        result = actor.run.produce_file(name, content, label=label)
        self._record_store(principal, name, content, expected, result.item, result.duplicate)
        workflow = actor.run.workflow
        may_attach = workflow is not None and self._may_workflow(
            principal, Action.UPDATE, workflow.id
        )
        if may_attach:
            assert result.document_id is not None
            assert f"  documentList ref: docItem:{result.document_id}" in result.text
            self._record_document(actor, result.document_id, result.item.id, label)
        else:
            assert result.document_id is None
            assert "documentList ref" not in result.text
        assert f"  file id: {result.item.id}" in result.text

    @precondition(lambda self: any(not f.deleted for f in self.files.values()))
    @rule(data=st.data(), label=st.sampled_from(LABELS))
    def attach(self, data: st.DataObject, label: str) -> None:
        """Attach a file that exists anywhere to the actor's bound workflow."""
        pairs = [(a, f) for a in self.actors for f in self._live_files()]
        allowed_pairs = [
            (a, f)
            for a, f in pairs
            if a.run.workflow is not None
            and self._may_workflow(a.principal, Action.UPDATE, a.run.workflow.id)
            and self._may_file(a.principal, Action.READ, f)
        ]
        foreign_workflow = [
            (a, f)
            for a, f in allowed_pairs
            if a.run.workflow is not None
            and self.workflows[a.run.workflow.id].owner != a.principal.user_id
        ]
        # Files of another scope in a workflow make "access_denied" for its other readers.
        mixed_scopes = [
            (a, f)
            for a, f in allowed_pairs
            if a.run.workflow is not None and f.scope != self.workflows[a.run.workflow.id].scope
        ]
        actor, record = self._pick(data, pairs, allowed_pairs, foreign_workflow, mixed_scopes)
        principal = actor.principal
        workflow = actor.run.workflow
        allowed: list[type[BaseException]] = []
        if workflow is None:
            allowed.append(NoActiveWorkflow)
        elif not self._may_workflow(principal, Action.UPDATE, workflow.id):
            allowed.append(AccessDenied)
        if not self._may_file(principal, Action.READ, record):
            allowed.append(FileItemNotFound)
        if allowed:
            with pytest.raises((NoActiveWorkflow, AccessDenied, FileItemNotFound)) as caught:
                actor.run.attach(record.item, label=label)
            assert type(caught.value) in allowed, (caught.value, allowed)
            if isinstance(caught.value, FileItemNotFound):
                _type, expected_text = self._not_found_answer(principal)
                assert without_id(str(caught.value), record.id) == expected_text
            return
        assert workflow is not None
        event(
            "attach: into another user's workflow"
            if self.workflows[workflow.id].owner != principal.user_id
            else "attach: into own workflow"
        )
        document = actor.run.attach(record.item, label=label)
        assert document.workflow_id == workflow.id
        assert document.file_id == record.id
        self._record_document(actor, document.id, record.id, label)

    @rule(data=st.data())
    def bind(self, data: st.DataObject) -> None:
        """Bind the actor's run to any workflow (or a random id): only readable ones bind."""
        pairs: list[tuple[Actor, str | None]] = [
            (a, w) for a in self.actors for w in [None, *self.workflows]
        ]
        readable = [
            (a, w)
            for a, w in pairs
            if w is not None
            and w != a.run.context.workflow_id
            and self._may_workflow(a.principal, Action.READ, w)
        ]
        updatable = [
            (a, w)
            for a, w in readable
            if self.workflows[w].owner != a.principal.user_id
            and self._may_workflow(a.principal, Action.UPDATE, w)
        ]
        actor, target = self._pick(data, pairs, readable, updatable)
        principal = actor.principal
        ident = random_id()
        with pytest.raises(WorkflowNotFound) as unknown:
            self.binder.start_run(principal, ident)
        random_text = without_id(str(unknown.value), ident)
        if target is None:
            return
        if self._may_workflow(principal, Action.READ, target):
            run = self.binder.start_run(principal, target)
            assert run.workflow is not None and run.workflow.id == target
            actor.run = run
            event("bind: bound")
        else:
            event("bind: refused")
            with pytest.raises(WorkflowNotFound) as caught:
                self.binder.start_run(principal, target)
            assert type(caught.value) is type(unknown.value)
            assert without_id(str(caught.value), target) == random_text

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        """Delete any file (live, deleted, foreign) or a random id."""
        pairs: list[tuple[Actor, str | None]] = [
            (a, f) for a in self.actors for f in [None, *self.files]
        ]
        readable = [
            (a, f)
            for a, f in pairs
            if f is not None and self._may_file(a.principal, Action.READ, self.files[f])
        ]
        undeletable = [
            (a, f)
            for a, f in readable
            if not self._may_file(a.principal, Action.DELETE, self.files[f])
        ]
        actor, target = self._pick(data, pairs, readable, undeletable)
        principal = actor.principal
        expected_type, expected_text = self._not_found_answer(principal)
        ident = target if target is not None else random_id()
        record = self.files.get(ident)
        if record is not None and self._may_file(principal, Action.READ, record):
            if self._may_file(principal, Action.DELETE, record):
                # force: documents may refer to it (that refusal has tests of its own)
                deleted = self.binder.delete_file(principal, ident, force=True)
                assert deleted.id == ident
                record.deleted = True
                event("delete: deleted")
            else:
                with pytest.raises(AccessDenied):
                    self.binder.delete_file(principal, ident, force=True)
                event("delete: readable but denied")
            return
        event("delete: not found")
        with pytest.raises(NotFound) as caught:
            self.binder.delete_file(principal, ident, force=True)
        assert type(caught.value) is expected_type
        assert without_id(str(caught.value), ident) == expected_text

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def files_visible_exactly_within_rights(self) -> None:
        """list_files, get_file and open_file agree with the model for every principal."""
        self.stats.checks += 1
        self.stats.most_files = max(self.stats.most_files, len(self.files))
        self.stats.most_documents = max(self.stats.most_documents, len(self.documents))
        for actor in self.actors:
            principal = actor.principal
            expected_type, expected_text = self._not_found_answer(principal)
            listed = actor.run.list_files()
            listed_ids = [i.id for i in listed]
            assert len(listed_ids) == len(set(listed_ids))
            readable = {
                f.id for f in self.files.values() if self._may_file(principal, Action.READ, f)
            }
            assert set(listed_ids) == readable, (principal, set(listed_ids) ^ readable)
            for record in self.files.values():
                if record.id in readable:
                    item = self.binder.get_file(principal, record.id)
                    assert (item.id, item.scope, item.created_by, item.sha256) == (
                        record.id,
                        record.scope,
                        record.owner,
                        record.item.sha256,
                    )
                    with self.binder.open_file(principal, record.id) as chunks:
                        assert b"".join(chunks) == record.data
                    continue
                for call in (self.binder.get_file, self.binder.open_file):
                    with pytest.raises(NotFound) as caught:
                        call(principal, record.id)
                    assert type(caught.value) is expected_type
                    assert without_id(str(caught.value), record.id) == expected_text

    @invariant()
    def resolve_stays_in_the_bound_workflow(self) -> None:
        """Resolving references to everything that exists gives exactly what the model says."""
        for actor in self.actors:
            self._check_resolve(actor)

    def _references(self) -> tuple[list[str], list[str]]:
        labels = sorted({d.label for d in self.documents.values()})
        refs = [
            *(f"docItem:{d}" for d in sorted(self.documents)),
            *(f"file:{f}" for f in sorted(self.files)),
            *(f"docList:{label}" for label in labels),
        ]
        unknown = [f"docItem:{random_id()}", f"file:{random_id()}", f"docList:{random_id()}"]
        return refs, unknown

    def _check_resolve(self, actor: Actor) -> None:
        principal = actor.principal
        workflow = actor.run.workflow
        refs, unknown = self._references()
        resolution = actor.run.resolve([*refs, *unknown])
        assert resolution.references.rejected == ()
        if workflow is None:
            assert resolution.documents == ()
            assert {u.reference for u in resolution.unresolved} == {*refs, *unknown}
            assert {u.reason for u in resolution.unresolved} == {
                UnresolvedReason.NO_ACTIVE_WORKFLOW
            }
            assert len({u.message for u in resolution.unresolved}) == 1
            return
        bound = workflow.id
        assert self._may_workflow(principal, Action.READ, bound)
        in_workflow = {d.id: d for d in self.documents.values() if d.workflow_id == bound}

        def outcome(document: DocumentRecord) -> UnresolvedReason | None:
            record = self.files[document.file_id]
            if record.deleted:
                return UnresolvedReason.FILE_MISSING
            if not may(principal, Action.READ, record.scope, record.owner):
                return UnresolvedReason.ACCESS_DENIED
            return None

        def expected_documents(ref: str) -> set[str]:
            kind, _, value = ref.partition(":")
            if kind == "docItem":
                return {value} if value in in_workflow else set()
            if kind == "file":
                return {d.id for d in in_workflow.values() if d.file_id == value}
            return {d.id for d in in_workflow.values() if d.label == value}

        self._check_resolution(resolution, bound, refs, unknown, expected_documents, outcome)
        for suggestion in resolution.suggestions:
            kind, _, doc_id = suggestion.reference.partition(":")
            assert kind == "docItem" and doc_id in in_workflow, suggestion
            assert outcome(in_workflow[doc_id]) is None, suggestion
        ok = {d for d, document in in_workflow.items() if outcome(document) is None}
        for document in in_workflow.values():
            event(f"resolve: {outcome(document) or 'resolved'}")
        assert {d.document.id for d in resolution.documents} == ok

    def _check_resolution(
        self,
        resolution: Resolution,
        bound: str,
        refs: list[str],
        unknown: list[str],
        expected_documents: Callable[[str], set[str]],
        outcome: Callable[[DocumentRecord], UnresolvedReason | None],
    ) -> None:
        resolved_ids = [d.document.id for d in resolution.documents]
        assert len(resolved_ids) == len(set(resolved_ids))
        for resolved in resolution.documents:
            document = self.documents.get(resolved.document.id)
            assert document is not None, resolved
            assert resolved.document.workflow_id == bound, "resolved outside the bound workflow"
            assert document.workflow_id == bound
            assert resolved.file.id == document.file_id == resolved.document.file_id
            assert outcome(document) is None, resolved
            assert document.id in expected_documents(resolved.reference), resolved

        by_reference: dict[str, list[tuple[UnresolvedReason, str, str | None]]] = {}
        for entry in resolution.unresolved:
            by_reference.setdefault(entry.reference, []).append(
                (entry.reason, entry.message, entry.document_id)
            )
        unknown_answers = {answer for ref in unknown for answer in by_reference.get(ref, [])}
        assert len(unknown_answers) == 1, unknown_answers
        (unknown_answer,) = unknown_answers
        assert unknown_answer[0] is UnresolvedReason.NOT_IN_WORKFLOW
        assert unknown_answer[2] is None
        for ref in unknown:
            assert by_reference.get(ref) == [unknown_answer], ref
        for ref in refs:
            expected = expected_documents(ref)
            answers = by_reference.get(ref, [])
            if not expected:
                # Something outside the workflow answers exactly like something that never was.
                assert answers == [unknown_answer], (ref, answers)
                continue
            failing = {
                (reason, doc_id)
                for doc_id in expected
                if (reason := outcome(self.documents[doc_id])) is not None
            }
            got = [(reason, doc_id) for reason, _message, doc_id in answers]
            assert len(got) == len(set(got)), (ref, got)
            assert set(got) == failing, (ref, got, failing)


def state_machine_factory(
    make_binder: Callable[[], tuple[DocBinder, Callable[[], None] | None]],
    stats: MachineStats | None = None,
) -> Callable[[], AccessModel]:
    """A factory for ``run_state_machine_as_test``: a fresh binder per example, shared ``stats``."""

    def factory() -> AccessModel:
        binder, cleanup = make_binder()
        return AccessModel(binder, cleanup, stats)

    return factory
