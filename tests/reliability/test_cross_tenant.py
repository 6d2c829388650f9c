"""The model as an untrusted caller: invented references resolve nothing and reveal nothing (SPEC C7, C11).

A victim mandate holds workflows, documents, files and labels. An attacker's
run (another mandate; or the same mandate in another feature instance; or a
mandate admin elsewhere) sends references made of the victim's real ids and
labels, in every shape the parser accepts. Nothing resolves, and the whole
answer — reasons, messages, suggestions — is the same as for random ids of
the same shape, so an answer never tells that an id exists.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder, Run
from docbinder.domain.errors import FileItemNotFound, NotFound, WorkflowNotFound
from docbinder.domain.model import Principal
from docbinder.serialization import to_wire
from tests.contract.sql_backends import provision
from tests.reliability.harness import LEDGER, make_binder

VICTIM = Principal("victim", "m-victim", "f-secret", roles=("member",))
VICTIM_PEER = Principal("peer", "m-victim", "f-other", roles=("member",))

ATTACKERS = {
    "other mandate": Principal("attacker", "m-attacker", None, roles=("member",)),
    "other mandate, admin": Principal("boss", "m-attacker", "f-secret", roles=("admin",)),
    "same mandate, other feature instance": Principal(
        "insider", "m-victim", "f-other", roles=("member",)
    ),
    "same mandate and feature instance, other user": Principal(
        "colleague", "m-victim", "f-secret", roles=("member",)
    ),
}


@attrs.frozen
class Secrets:
    """Ids and labels of the victim's data."""

    documents: tuple[str, ...]
    files: tuple[str, ...]
    labels: tuple[str, ...]
    workflows: tuple[str, ...]
    messages: tuple[str, ...]
    scopes: dict[str, tuple[str, str | None]] = attrs.field(factory=dict, eq=False)
    """(mandate, feature instance) of every file and workflow id."""

    def outside(self, ids: tuple[str, ...], who: Principal) -> list[str]:
        """The ids of ``ids`` that lie outside ``who``'s mandate or feature instance."""
        return [i for i in ids if self.scopes[i] != (who.mandate_id, who.feature_instance_id)]


@pytest.fixture(params=["memory", "sqlite+localdisk"])
def binder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DocBinder]:
    if request.param == "memory":
        meta = MemoryMetadataStore()
        yield make_binder(meta.unit_of_work, MemoryBlobStore())
        return
    with provision("sqlite", tmp_path) as db:
        yield make_binder(db.store.unit_of_work, LocalDiskBlobStore(tmp_path / "blobs"))


def _plant(binder: DocBinder) -> Secrets:
    documents, files, labels, workflows, messages = [], [], [], [], []
    scopes: dict[str, tuple[str, str | None]] = {}
    for owner, prefix in ((VICTIM, "secret"), (VICTIM_PEER, "peer")):
        for w in range(2):
            run = binder.start_new_run(owner)
            assert run.workflow is not None
            workflows.append(run.workflow.id)
            scopes[run.workflow.id] = (owner.mandate_id, owner.feature_instance_id)
            for n in range(2):
                label = f"{prefix}:w{w}-report-{n}.pdf"
                result = run.produce_file(
                    f"{prefix}-{w}-{n}.pdf", f"{prefix} {w} {n}".encode(), label=label
                )
                assert result.document_id is not None
                documents.append(result.document_id)
                files.append(result.item.id)
                labels.append(label)
            task = run.persist_action_result(
                [run.store_file(f"{prefix}-task-{w}.csv", b"a,b\n").item],
                label=f"{prefix}:task-{w}",
            )
            labels.append(task.documents_label)
            messages.append(task.id)
            documents.extend(d.id for d in task.documents)
            files.extend(d.file_id for d in task.documents)
            for file_id in files:
                scopes.setdefault(file_id, (owner.mandate_id, owner.feature_instance_id))
    return Secrets(*(tuple(x) for x in (documents, files, labels, workflows, messages)), scopes)


def _attacker_run(binder: DocBinder, attacker: Principal) -> Run:
    run = binder.start_new_run(attacker)
    run.produce_file("mine.txt", b"the attacker's own file", label="writeFile:mine.txt")
    return run


def _shapes(ids: list[str], labels: list[str]) -> list[object]:
    """Every shape a model sends, made from ``ids`` (document/file/workflow ids) and ``labels``."""
    return [
        [f"docItem:{i}" for i in ids],
        [f"file:{i}" for i in ids],
        list(ids),
        ", ".join(ids),
        [{"id": i, "name": "report.pdf"} for i in ids],
        {"documents": [{"id": i} for i in ids]},
        {"documents": [{"fileId": i} for i in ids]},
        "```json\n" + json.dumps([f"docItem:{i}" for i in ids]) + "\n```",
        "\n".join(f"DOCITEM:<{i}>." for i in ids),
        [f"docList:{label}" for label in labels],
        " ".join(f"`docList:{label}`" for label in labels),
    ]


def _answer(run: Run, document_list: object, secrets: list[str]) -> str:
    """The resolution and the content answer as the model sees them, with the given ids masked."""
    text = json.dumps(
        [to_wire(run.resolve(document_list)), to_wire(run.get_content(document_list))],
        sort_keys=True,
    )
    # the i-th secret becomes "<secret i>"; longer ones first, so none is masked inside another
    for index, secret in sorted(enumerate(secrets), key=lambda pair: -len(pair[1])):
        text = text.replace(secret, f"<secret {index}>")
    return text


def _fake_labels(labels: tuple[str, ...]) -> list[str]:
    return [f"{label.split(':')[0]}:{uuid.uuid4().hex[:10]}" for label in labels]


@pytest.mark.parametrize("who", list(ATTACKERS))
def test_invented_references_resolve_nothing_and_answer_like_random_ids(
    binder: DocBinder, who: str
) -> None:
    secrets = _plant(binder)
    run = _attacker_run(binder, ATTACKERS[who])
    real_ids = [*secrets.documents, *secrets.files, *secrets.workflows, *secrets.messages]
    fake_ids = [str(uuid.uuid4()) for _ in real_ids]
    fake_labels = _fake_labels(secrets.labels)
    real_shapes = _shapes(real_ids, list(secrets.labels))
    fake_shapes = _shapes(fake_ids, fake_labels)
    for real, fake in zip(real_shapes, fake_shapes, strict=True):
        resolution = run.resolve(real)
        assert resolution.documents == ()
        assert run.get_content(real).parts == ()
        assert _answer(run, real, real_ids + list(secrets.labels)) == _answer(
            run, fake, fake_ids + fake_labels
        )
        # the suggestions offered are the attacker's own document only
        assert [s.file_name for s in resolution.suggestions] == ["mine.txt"]
    LEDGER.hostile["invented references (cross-tenant)"] += sum(
        len(secrets.labels) if n >= len(real_shapes) - 2 else len(real_ids)
        for n in range(len(real_shapes))
    )


@pytest.mark.parametrize("who", [w for w in ATTACKERS if not w.startswith("same mandate and")])
def test_direct_lookups_of_foreign_ids_fail_like_random_ids(binder: DocBinder, who: str) -> None:
    """Files and workflows outside the caller's mandate or feature instance do not exist for it.

    (A colleague in the same feature instance may read them by design, SPEC C11.)
    """
    secrets = _plant(binder)
    attacker = ATTACKERS[who]
    random_id = str(uuid.uuid4())
    operations: list[tuple[str, Callable[[str], object], type[NotFound]]] = [
        ("get_file", lambda i: binder.get_file(attacker, i), FileItemNotFound),
        ("open", lambda i: binder.open_file(attacker, i), FileItemNotFound),
        ("delete", lambda i: binder.delete_file(attacker, i), FileItemNotFound),
        ("replace", lambda i: binder.update_file.replace(attacker, i, b"x"), FileItemNotFound),
        ("append", lambda i: binder.update_file.append(attacker, i, b"x"), FileItemNotFound),
    ]
    workflow_ops: list[tuple[str, Callable[[str], object], type[NotFound]]] = [
        ("start_run", lambda i: binder.start_run(attacker, i), WorkflowNotFound),
        ("messages", lambda i: binder.list_messages(attacker, i), WorkflowNotFound),
    ]
    foreign_files = secrets.outside(secrets.files, attacker)
    foreign_workflows = secrets.outside(secrets.workflows, attacker)
    assert foreign_files and foreign_workflows
    for ids, ops in ((foreign_files, operations), (foreign_workflows, workflow_ops)):
        for name, op, error in ops:
            with pytest.raises(error) as fake:
                op(random_id)
            for real_id in ids:
                with pytest.raises(error) as real:
                    op(real_id)
                assert str(real.value).replace(real_id, "<id>") == str(fake.value).replace(
                    random_id, "<id>"
                ), name
                LEDGER.hostile["foreign ids in direct lookups"] += 1
    # and no listing the attacker can make shows them
    assert {i.id for i in binder.list_files(attacker)}.isdisjoint(foreign_files)
    assert {w.id for w in binder.list_workflows(attacker)}.isdisjoint(foreign_workflows)


SLOPPY = st.sampled_from(
    [
        "{}",
        "docItem:{}",
        "DOCITEM: {}",
        "file:{}",
        "<{}>",
        "`{}`",
        '"{}"',
        "'docItem:{}'.",
        "[docItem:{}]",
        '{{"id": "{}"}}',
    ]
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_mixtures_of_foreign_ids_resolve_nothing(data: st.DataObject) -> None:
    meta = MemoryMetadataStore()
    binder = make_binder(meta.unit_of_work, MemoryBlobStore())
    secrets = _plant(binder)
    run = _attacker_run(binder, ATTACKERS["other mandate"])
    pool = [*secrets.documents, *secrets.files, *secrets.workflows, *secrets.messages]
    picks = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=8))
    templates = data.draw(st.lists(SLOPPY, min_size=len(picks), max_size=len(picks)))
    separator = data.draw(st.sampled_from([", ", "\n", " ", ";"]))
    fakes = {p: str(uuid.uuid4()) for p in picks}
    real = separator.join(t.format(p) for t, p in zip(templates, picks, strict=True))
    fake = separator.join(t.format(fakes[p]) for t, p in zip(templates, picks, strict=True))
    wrapped = data.draw(st.sampled_from(["{}", "```\n{}\n```", "[{}]"]))
    real, fake = wrapped.format(real), wrapped.format(fake)
    assert run.resolve(real).documents == ()
    assert _answer(run, real, list(fakes)) == _answer(run, fake, list(fakes.values()))
    LEDGER.hostile["invented references (cross-tenant)"] += len(picks)
