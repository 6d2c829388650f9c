"""``docbinder serve``'s API under a real uvicorn: uploads, resolving, downloads, the description."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.integrations.http import openapi_document
from tests.integration.http_live import ALICE, auth, live_app, memory_binder


@pytest.fixture
def stores() -> tuple[MemoryMetadataStore, MemoryBlobStore]:
    return MemoryMetadataStore(), MemoryBlobStore()


@pytest.fixture
def served(stores: tuple[MemoryMetadataStore, MemoryBlobStore]) -> Iterator[tuple[object, object]]:
    store, blobs = stores
    binder = memory_binder(store=store, blobs=blobs, max_file_size=64 * 1024)
    with live_app(binder) as live:
        yield live, binder


def new_workflow(live: object) -> str:
    response = live.client.post("/v1/workflows", headers=auth("alice"))  # type: ignore[attr-defined]
    assert response.status_code == 201
    return str(response.json()["id"])


def test_upload_a_raw_body_then_read_it_back(served: tuple[object, object]) -> None:
    live, binder = served
    client = live.client  # type: ignore[attr-defined]
    workflow = new_workflow(live)
    data = b"quarterly numbers\n" * 100
    response = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "report.txt", "label": "writeFile:report.txt"},
        content=data,
        headers=auth("alice"),
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {
        "documentRef",
        "documentId",
        "fileId",
        "fileName",
        "mimeType",
        "size",
        "sha256",
        "duplicate",
        "label",
    }
    assert body["documentRef"] == f"docItem:{body['documentId']}"
    assert (body["fileName"], body["size"], body["duplicate"]) == ("report.txt", len(data), False)
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    assert body["label"] == "writeFile:report.txt"
    assert body["mimeType"].startswith("text/plain")
    # The library sees the same file in the same workflow.
    run = binder.start_run(ALICE, workflow)  # type: ignore[attr-defined]
    assert run.read_file(body["fileId"]) == data
    resolved = run.resolve(body["documentRef"])
    assert [d.document.id for d in resolved.documents] == [body["documentId"]]

    meta = client.get(f"/v1/files/{body['fileId']}", headers=auth("alice")).json()
    assert meta["fileName"] == "report.txt" and meta["sha256"] == body["sha256"]
    assert "blobKey" not in meta and "blob_key" not in json.dumps(meta)
    content = client.get(f"/v1/files/{body['fileId']}/content", headers=auth("alice"))
    assert content.status_code == 200
    assert content.content == data
    assert content.headers["etag"] == f'"{body["sha256"]}"'
    assert content.headers["x-content-type-options"] == "nosniff"

    again = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "report.txt"},
        content=data,
        headers=auth("alice"),
    ).json()
    assert again["duplicate"] is True and again["fileId"] == body["fileId"]
    assert again["documentId"] != body["documentId"]


def test_multipart_upload_takes_the_file_field_and_its_name(served: tuple[object, object]) -> None:
    live, _ = served
    client = live.client  # type: ignore[attr-defined]
    workflow = new_workflow(live)
    data = bytes(range(256)) * 40
    response = client.post(
        f"/v1/workflows/{workflow}/files",
        data={"note": "ignored field"},
        files={"file": ("chart.bin", data, "application/octet-stream")},
        headers=auth("alice"),
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["fileName"], body["size"]) == ("chart.bin", len(data))
    assert client.get(f"/v1/files/{body['fileId']}/content", headers=auth("alice")).content == data
    missing = client.post(
        f"/v1/workflows/{workflow}/files",
        files={"other": ("x.txt", b"x", "text/plain")},
        headers=auth("alice"),
    )
    assert missing.status_code == 400
    assert "no field named 'file'" in missing.json()["error"]["message"]


def _chunks(total: int, size: int = 8192) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        yield b"z" * piece
        sent += piece


@pytest.mark.parametrize("form", ["raw", "multipart"])
def test_a_file_over_max_file_size_is_refused_while_streaming_and_nothing_is_kept(
    served: tuple[object, object], stores: tuple[MemoryMetadataStore, MemoryBlobStore], form: str
) -> None:
    live, binder = served
    client = live.client  # type: ignore[attr-defined]
    _, blobs = stores
    workflow = new_workflow(live)
    first = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "small.txt"},
        content=b"ok",
        headers=auth("alice"),
    )
    assert first.status_code == 201
    keys_before = set(blobs.keys())
    files_before = binder.list_files(ALICE)  # type: ignore[attr-defined]
    if form == "raw":
        # A chunked body: no Content-Length to refuse early, the limit is kept while streaming.
        response = client.post(
            f"/v1/workflows/{workflow}/files",
            params={"name": "huge.bin"},
            content=_chunks(200 * 1024),
            headers=auth("alice"),
        )
    else:
        boundary = "b0und4ry"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="huge.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()

        def body() -> Iterator[bytes]:
            yield head
            yield from _chunks(200 * 1024)
            yield f"\r\n--{boundary}--\r\n".encode()

        response = client.post(
            f"/v1/workflows/{workflow}/files",
            content=body(),
            headers={**auth("alice"), "content-type": f"multipart/form-data; boundary={boundary}"},
        )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert set(blobs.keys()) == keys_before
    assert binder.list_files(ALICE) == files_before  # type: ignore[attr-defined]
    messages = binder.list_messages(ALICE, workflow)  # type: ignore[attr-defined]
    assert [d.file_name for m in messages for d in m.documents] == ["small.txt"]


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read(
    served: tuple[object, object],
) -> None:
    live, _ = served
    workflow = new_workflow(live)
    response = live.client.post(  # type: ignore[attr-defined]
        f"/v1/workflows/{workflow}/files",
        params={"name": "big.bin"},
        content=b"x" * (64 * 1024 + 1),
        headers=auth("alice"),
    )
    assert response.status_code == 413


def test_resolve_reads_a_sloppy_document_list_and_says_why_a_miss_missed(
    served: tuple[object, object],
) -> None:
    live, binder = served
    client = live.client  # type: ignore[attr-defined]
    workflow = new_workflow(live)
    stored = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "notes.md"},
        content=b"# Notes\n\nThe plan is simple.\n",
        headers=auth("alice"),
    ).json()
    sloppy = f'```json\n["DOCITEM:{stored["documentId"]}", "docItem:does-not-exist"]\n```'
    answer = client.post(
        f"/v1/workflows/{workflow}/resolve", json={"documentList": sloppy}, headers=auth("alice")
    )
    assert answer.status_code == 200
    body = answer.json()
    assert [d["documentRef"] for d in body["documents"]] == [stored["documentRef"]]
    assert body["documents"][0]["file"]["fileName"] == "notes.md"
    assert [(u["reference"], u["reason"]) for u in body["unresolved"]] == [
        ("docItem:does-not-exist", "not_in_workflow")
    ]
    assert [s["reference"] for s in body["suggestions"]] == [stored["documentRef"]]
    # What was no reference comes back as the JSON value it was sent as, not as a repr.
    junk = client.post(
        f"/v1/workflows/{workflow}/resolve",
        json={"documentList": ["spec.pdf", 42, None, {"name": "x"}]},
        headers=auth("alice"),
    ).json()
    rejected = [u["reference"] for u in junk["unresolved"] if u["reason"] == "rejected_input"]
    assert "spec.pdf" in rejected and 42 in rejected and {"name": "x"} in rejected
    with_content = client.post(
        f"/v1/workflows/{workflow}/resolve?content=true",
        json={"documentList": {"documents": [{"id": stored["documentId"]}]}},
        headers=auth("alice"),
    ).json()
    (doc,) = with_content["content"]
    assert "The plan is simple." in json.dumps(doc)
    # The resolution was recorded for the inspector page.
    (last, _junk, _first) = binder.list_resolutions(ALICE, workflow)  # type: ignore[attr-defined]
    assert last.resolved == (f"docItem:{stored['documentId']}",)


def test_range_etag_and_if_none_match(served: tuple[object, object]) -> None:
    live, _ = served
    client = live.client  # type: ignore[attr-defined]
    workflow = new_workflow(live)
    data = bytes(range(256)) * 16
    file_id = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "b.bin"},
        content=data,
        headers=auth("alice"),
    ).json()["fileId"]
    url = f"/v1/files/{file_id}/content"
    part = client.get(url, headers={**auth("alice"), "range": "bytes=1000-1999"})
    assert part.status_code == 206
    assert part.content == data[1000:2000]
    assert part.headers["content-range"] == f"bytes 1000-1999/{len(data)}"
    suffix = client.get(url, headers={**auth("alice"), "range": "bytes=-10"})
    assert (suffix.status_code, suffix.content) == (206, data[-10:])
    open_end = client.get(url, headers={**auth("alice"), "range": "bytes=4090-"})
    assert open_end.content == data[4090:]
    beyond = client.get(url, headers={**auth("alice"), "range": f"bytes={len(data)}-"})
    assert beyond.status_code == 416
    assert beyond.headers["content-range"] == f"bytes */{len(data)}"
    tag = part.headers["etag"]
    assert tag == f'"{hashlib.sha256(data).hexdigest()}"'
    cached = client.get(url, headers={**auth("alice"), "if-none-match": f'"other", W/{tag}'})
    assert cached.status_code == 304 and cached.content == b""
    assert cached.headers["etag"] == tag
    stale = client.get(url, headers={**auth("alice"), "if-none-match": '"0000"'})
    assert stale.status_code == 200 and stale.content == data


def test_the_workflow_shows_messages_with_labels_counters_and_document_refs(
    served: tuple[object, object],
) -> None:
    live, _ = served
    client = live.client  # type: ignore[attr-defined]
    workflow = new_workflow(live)
    for name in ("a.txt", "b.txt"):
        client.post(
            f"/v1/workflows/{workflow}/files",
            params={"name": name},
            content=name.encode(),
            headers=auth("alice"),
        )
    view = client.get(f"/v1/workflows/{workflow}", headers=auth("alice")).json()
    assert view["id"] == workflow
    assert [m["documentsLabel"] for m in view["messages"]] == ["upload:a.txt", "upload:b.txt"]
    assert [m["sequenceNr"] for m in view["messages"]] == [1, 2]
    assert {"roundNumber", "taskNumber", "actionNumber", "role", "status"} <= set(
        view["messages"][0]
    )
    assert [d["fileName"] for d in view["documents"]] == ["a.txt", "b.txt"]
    assert all(d["documentRef"] == f"docItem:{d['id']}" for d in view["documents"])


def test_openapi_describes_every_route_and_is_valid(served: tuple[object, object]) -> None:
    from openapi_spec_validator import validate

    live, _ = served
    served_doc = live.client.get("/openapi.json").json()  # type: ignore[attr-defined]
    assert served_doc == json.loads(json.dumps(openapi_document()))
    validate(served_doc)
    from starlette.routing import Route

    from docbinder.integrations.http import TokenIdentity, build_app
    from tests.integration.http_live import bearer_tokens

    app = build_app(memory_binder(), TokenIdentity(bearer_tokens()), ui=False)
    paths = {r.path for r in app.routes if isinstance(r, Route)} - {"/openapi.json"}
    assert paths == set(served_doc["paths"])
    for route in app.routes:
        if isinstance(route, Route) and route.path in served_doc["paths"]:
            described = set(served_doc["paths"][route.path])
            assert {m.lower() for m in (route.methods or ())} - {"head"} <= described


def test_several_ranges_come_as_multipart_byteranges(served: tuple[object, object]) -> None:
    import email.parser

    live, _ = served
    client = live.client  # type: ignore[attr-defined]
    workflow = new_workflow(live)
    data = bytes(range(256)) * 40  # 10,240 bytes: several chunks of the blob store's reader
    file_id = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "r.bin"},
        content=data,
        headers=auth("alice"),
    ).json()["fileId"]
    url = f"/v1/files/{file_id}/content"
    wanted = [(0, 9), (100, 100), (5000, 5100), (10230, 10239)]
    spec = ",".join(f"{a}-{b}" for a, b in wanted)
    response = client.get(url, headers={**auth("alice"), "range": f"bytes={spec}"})
    assert response.status_code == 206
    ctype = response.headers["content-type"]
    assert ctype.startswith("multipart/byteranges; boundary=")
    assert int(response.headers["content-length"]) == len(response.content)
    message = email.parser.BytesParser().parsebytes(
        f"content-type: {ctype}\r\n\r\n".encode() + response.content
    )
    parts = message.get_payload()
    assert [p["content-range"] for p in parts] == [f"bytes {a}-{b}/{len(data)}" for a, b in wanted]
    assert [p.get_payload(decode=True) for p in parts] == [data[a : b + 1] for a, b in wanted]
    # Out of order or overlapping: the whole file, as RFC 9110 allows.
    for odd in ("bytes=50-60,0-9", "bytes=0-20,10-30"):
        whole = client.get(url, headers={**auth("alice"), "range": odd})
        assert (whole.status_code, whole.content) == (200, data)
