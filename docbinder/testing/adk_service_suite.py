"""Contract of DocbinderArtifactService: every ``BaseArtifactService`` method, with ADK's semantics.

A concrete class provides the ``binder`` fixture. The expected behaviour is
ADK's documented contract (``google.adk.artifacts.base_artifact_service``)
and what ADK's own services do; errors are ADK's ``InputValidationError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest
from google.adk.artifacts import artifact_util
from google.adk.artifacts.base_artifact_service import BaseArtifactService
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from docbinder.application import DocBinder
from docbinder.domain.errors import AccessDenied
from docbinder.integrations.adk import DocbinderArtifactService

APP, USER, SESSION = "app1", "alice", "s1"
WHERE: dict[str, Any] = {"app_name": APP, "user_id": USER, "session_id": SESSION}


def blob(data: bytes, mime: str = "application/octet-stream") -> types.Part:
    return types.Part.from_bytes(data=data, mime_type=mime)


def payload(part: types.Part | None) -> bytes | str | None:
    if part is None:
        return None
    if part.text is not None:
        return part.text
    assert part.inline_data is not None
    return part.inline_data.data


class AdkServiceContract:
    """Run with ``pytest.mark.anyio``; ``binder`` comes from the concrete class."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def service(self, binder: DocBinder) -> DocbinderArtifactService:
        return DocbinderArtifactService(binder, mandate_id="acme")

    async def test_is_an_adk_artifact_service(self, service: DocbinderArtifactService) -> None:
        assert isinstance(service, BaseArtifactService)

    async def test_save_numbers_versions_and_load_returns_latest_or_given(
        self, service: DocbinderArtifactService
    ) -> None:
        for i in range(3):
            assert (
                await service.save_artifact(**WHERE, filename="a.bin", artifact=blob(b"%d" % i))
                == i
            )
        assert payload(await service.load_artifact(**WHERE, filename="a.bin")) == b"2"
        assert payload(await service.load_artifact(**WHERE, filename="a.bin", version=0)) == b"0"
        assert await service.load_artifact(**WHERE, filename="a.bin", version=3) is None
        assert await service.load_artifact(**WHERE, filename="absent.bin") is None
        assert await service.list_versions(**WHERE, filename="a.bin") == [0, 1, 2]
        assert await service.list_versions(**WHERE, filename="absent.bin") == []

    async def test_identical_bytes_make_new_versions(
        self, service: DocbinderArtifactService
    ) -> None:
        for expected in (0, 1):
            assert (
                await service.save_artifact(**WHERE, filename="same", artifact=blob(b"x"))
                == expected
            )

    async def test_text_inline_and_dict_parts_round_trip(
        self, service: DocbinderArtifactService
    ) -> None:
        await service.save_artifact(**WHERE, filename="t.txt", artifact=types.Part(text="héllo"))
        text = await service.load_artifact(**WHERE, filename="t.txt")
        assert text == types.Part(text="héllo")
        part = types.Part(
            inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG", display_name="p.png")
        )
        await service.save_artifact(**WHERE, filename="p.png", artifact=part)
        assert await service.load_artifact(**WHERE, filename="p.png") == part
        as_dict = {"inlineData": {"mimeType": "application/pdf", "data": b"%PDF"}}
        await service.save_artifact(**WHERE, filename="d.pdf", artifact=as_dict)
        loaded = await service.load_artifact(**WHERE, filename="d.pdf")
        assert loaded is not None and loaded.inline_data is not None
        assert (loaded.inline_data.mime_type, loaded.inline_data.data) == (
            "application/pdf",
            b"%PDF",
        )

    async def test_unsupported_parts_are_refused(self, service: DocbinderArtifactService) -> None:
        with pytest.raises(InputValidationError):
            await service.save_artifact(**WHERE, filename="e", artifact=types.Part())
        with pytest.raises(InputValidationError):
            await service.save_artifact(
                **WHERE, filename="e", artifact=types.Part(inline_data=types.Blob(mime_type="a/b"))
            )
        assert await service.list_versions(**WHERE, filename="e") == []

    async def test_rewind_tombstone_loads_as_absent(
        self, service: DocbinderArtifactService
    ) -> None:
        await service.save_artifact(**WHERE, filename="r", artifact=blob(b"kept"))
        await service.save_artifact(
            **WHERE, filename="r", artifact=artifact_util._new_rewind_tombstone()
        )
        assert await service.load_artifact(**WHERE, filename="r") is None
        assert payload(await service.load_artifact(**WHERE, filename="r", version=0)) == b"kept"

    async def test_artifact_versions_carry_uri_metadata_time_and_mime(
        self, service: DocbinderArtifactService
    ) -> None:
        before = time.time()
        await service.save_artifact(
            **WHERE,
            filename="m.md",
            artifact=blob(b"# m", "text/markdown"),
            custom_metadata={"author": "alice", "tags": ["q3"]},
        )
        await service.save_artifact(**WHERE, filename="m.md", artifact=types.Part(text="t"))
        after = time.time()
        versions = await service.list_artifact_versions(**WHERE, filename="m.md")
        assert [v.version for v in versions] == [0, 1]
        first = versions[0]
        assert first.canonical_uri == artifact_util.get_artifact_uri(
            app_name=APP, user_id=USER, filename="m.md", version=0, session_id=SESSION
        )
        assert first.custom_metadata == {"author": "alice", "tags": ["q3"]}
        assert first.mime_type == "text/markdown"
        assert versions[1].mime_type == "text/plain" and versions[1].custom_metadata == {}
        assert before - 1 <= first.create_time <= versions[1].create_time <= after + 1
        latest = await service.get_artifact_version(**WHERE, filename="m.md")
        assert latest is not None and latest.version == 1
        given = await service.get_artifact_version(**WHERE, filename="m.md", version=0)
        assert given == first
        assert await service.get_artifact_version(**WHERE, filename="m.md", version=5) is None
        assert await service.get_artifact_version(**WHERE, filename="none") is None
        assert await service.list_artifact_versions(**WHERE, filename="none") == []

    async def test_metadata_must_be_json(self, service: DocbinderArtifactService) -> None:
        with pytest.raises(InputValidationError):
            await service.save_artifact(
                **WHERE, filename="x", artifact=blob(b"1"), custom_metadata={"f": object()}
            )

    async def test_keys_list_session_and_user_scoped_names(
        self, service: DocbinderArtifactService
    ) -> None:
        await service.save_artifact(**WHERE, filename="b.txt", artifact=blob(b"1"))
        await service.save_artifact(**WHERE, filename="b.txt", artifact=blob(b"2"))
        await service.save_artifact(**WHERE, filename="dir/a.txt", artifact=blob(b"1"))
        await service.save_artifact(**WHERE, filename="user:prefs.json", artifact=blob(b"{}"))
        await service.save_artifact(
            app_name=APP, user_id=USER, filename="nosession.txt", artifact=blob(b"u")
        )
        await service.save_artifact(
            app_name=APP, user_id=USER, session_id="s2", filename="other.txt", artifact=blob(b"o")
        )
        assert await service.list_artifact_keys(**WHERE) == [
            "b.txt",
            "dir/a.txt",
            "nosession.txt",
            "user:prefs.json",
        ]
        assert await service.list_artifact_keys(app_name=APP, user_id=USER) == [
            "nosession.txt",
            "user:prefs.json",
        ]

    async def test_user_scoped_artifacts_are_shared_across_sessions(
        self, service: DocbinderArtifactService
    ) -> None:
        await service.save_artifact(**WHERE, filename="user:p.txt", artifact=blob(b"v0"))
        other = {**WHERE, "session_id": "s2"}
        assert (
            await service.save_artifact(**other, filename="user:p.txt", artifact=blob(b"v1")) == 1
        )
        assert payload(await service.load_artifact(**WHERE, filename="user:p.txt")) == b"v1"
        no_session: dict[str, Any] = {"app_name": APP, "user_id": USER}
        assert payload(await service.load_artifact(**no_session, filename="p.txt")) == b"v1"
        assert payload(await service.load_artifact(**no_session, filename="user:p.txt")) == b"v1"
        # A session-scoped name is not visible from another session.
        await service.save_artifact(**WHERE, filename="s.txt", artifact=blob(b"s"))
        assert await service.load_artifact(**other, filename="s.txt") is None

    async def test_delete_removes_every_version(self, service: DocbinderArtifactService) -> None:
        for data in (b"1", b"2"):
            await service.save_artifact(**WHERE, filename="d", artifact=blob(data))
        await service.save_artifact(**WHERE, filename="keep", artifact=blob(b"k"))
        await service.delete_artifact(**WHERE, filename="d")
        assert await service.load_artifact(**WHERE, filename="d") is None
        assert await service.list_versions(**WHERE, filename="d") == []
        assert await service.list_artifact_keys(**WHERE) == ["keep"]
        await service.delete_artifact(**WHERE, filename="d")  # absent: nothing happens
        assert await service.save_artifact(**WHERE, filename="d", artifact=blob(b"3")) == 0

    async def test_references_resolve_within_app_user_and_session(
        self, service: DocbinderArtifactService
    ) -> None:
        await service.save_artifact(**WHERE, filename="base.txt", artifact=blob(b"base v0"))
        await service.save_artifact(**WHERE, filename="base.txt", artifact=blob(b"base v1"))
        target = await service.get_artifact_version(**WHERE, filename="base.txt", version=0)
        assert target is not None
        ref = types.Part(file_data=types.FileData(file_uri=target.canonical_uri))
        assert await service.save_artifact(**WHERE, filename="alias.txt", artifact=ref) == 0
        assert payload(await service.load_artifact(**WHERE, filename="alias.txt")) == b"base v0"
        alias = await service.get_artifact_version(**WHERE, filename="alias.txt")
        assert alias is not None and alias.mime_type is None
        # A chain of references is followed too.
        alias_uri = alias.canonical_uri
        ref2 = types.Part(file_data=types.FileData(file_uri=alias_uri))
        await service.save_artifact(**WHERE, filename="alias2.txt", artifact=ref2)
        assert payload(await service.load_artifact(**WHERE, filename="alias2.txt")) == b"base v0"

    async def test_references_outside_the_scope_are_refused(
        self, service: DocbinderArtifactService
    ) -> None:
        for uri in (
            artifact_util.get_artifact_uri(app_name=APP, user_id="bob", filename="x", version=0),
            artifact_util.get_artifact_uri(app_name="app2", user_id=USER, filename="x", version=0),
            artifact_util.get_artifact_uri(
                app_name=APP, user_id=USER, filename="x", version=0, session_id="s2"
            ),
            "artifact://not/a/valid/uri",
        ):
            part = types.Part(file_data=types.FileData(file_uri=uri))
            with pytest.raises(InputValidationError):
                await service.save_artifact(**WHERE, filename="bad-ref", artifact=part)
        assert await service.list_versions(**WHERE, filename="bad-ref") == []

    async def test_reference_cycles_stop_with_adk_error(
        self, service: DocbinderArtifactService
    ) -> None:
        own = artifact_util.get_artifact_uri(
            app_name=APP, user_id=USER, filename="loop", version=0, session_id=SESSION
        )
        part = types.Part(file_data=types.FileData(file_uri=own))
        await service.save_artifact(**WHERE, filename="loop", artifact=part)
        with pytest.raises(InputValidationError, match="depth"):
            await service.load_artifact(**WHERE, filename="loop")

    async def test_external_file_data_is_kept_as_given(
        self, service: DocbinderArtifactService
    ) -> None:
        part = types.Part(
            file_data=types.FileData(file_uri="gs://bucket/x.pdf", mime_type="application/pdf")
        )
        await service.save_artifact(**WHERE, filename="ext", artifact=part)
        assert await service.load_artifact(**WHERE, filename="ext") == part
        version = await service.get_artifact_version(**WHERE, filename="ext")
        assert version is not None and version.mime_type == "application/pdf"

    async def test_other_users_and_apps_never_see_an_artifact(
        self, service: DocbinderArtifactService
    ) -> None:
        await service.save_artifact(**WHERE, filename="secret", artifact=blob(b"s"))
        await service.save_artifact(**WHERE, filename="user:secret", artifact=blob(b"u"))
        for where in (
            {**WHERE, "user_id": "bob"},
            {**WHERE, "app_name": "app2"},
        ):
            assert await service.load_artifact(**where, filename="secret") is None
            assert await service.load_artifact(**where, filename="user:secret") is None
            assert await service.list_artifact_keys(**where) == []
            assert await service.list_versions(**where, filename="secret") == []
            assert await service.get_artifact_version(**where, filename="secret") is None
            await service.delete_artifact(**where, filename="secret")
            await service.delete_artifact(**where, filename="user:secret")
        assert await service.list_artifact_keys(**WHERE) == ["secret", "user:secret"]

    async def test_a_viewer_may_load_but_not_save_or_delete(
        self, binder: DocBinder, service: DocbinderArtifactService
    ) -> None:
        await service.save_artifact(**WHERE, filename="kept", artifact=blob(b"k"))
        viewer = DocbinderArtifactService(binder, mandate_id="acme", roles=("viewer",))
        with pytest.raises(AccessDenied):
            await viewer.save_artifact(**WHERE, filename="new", artifact=blob(b"n"))
        assert payload(await viewer.load_artifact(**WHERE, filename="kept")) == b"k"
        with pytest.raises(AccessDenied):
            await viewer.delete_artifact(**WHERE, filename="kept")
        assert await service.list_versions(**WHERE, filename="kept") == [0]

    @pytest.mark.parametrize(
        "name",
        ["../escape.txt", "/etc/passwd", "C:evil", "a/versions/b", "a/../../b", "user:../x", ""],
    )
    async def test_path_like_names_are_refused_with_adk_error(
        self, service: DocbinderArtifactService, name: str
    ) -> None:
        with pytest.raises(InputValidationError):
            await service.save_artifact(**WHERE, filename=name, artifact=blob(b"x"))
        with pytest.raises(InputValidationError):
            await service.load_artifact(**WHERE, filename=name)

    async def test_bad_app_user_and_session_ids_are_refused(
        self, service: DocbinderArtifactService
    ) -> None:
        for where in (
            {**WHERE, "app_name": "../app"},
            {**WHERE, "user_id": "/root"},
            {**WHERE, "session_id": ".."},
            {**WHERE, "user_id": "has space"},
        ):
            with pytest.raises(InputValidationError):
                await service.save_artifact(**where, filename="f", artifact=blob(b"x"))

    async def test_nested_names_are_fine(self, service: DocbinderArtifactService) -> None:
        await service.save_artifact(**WHERE, filename="images/photo.png", artifact=blob(b"p"))
        assert payload(await service.load_artifact(**WHERE, filename="images/photo.png")) == b"p"

    async def test_concurrent_saves_get_versions_0_to_7(
        self, service: DocbinderArtifactService
    ) -> None:
        numbers = await asyncio.gather(
            *(
                service.save_artifact(**WHERE, filename="race", artifact=blob(b"%d" % i))
                for i in range(8)
            )
        )
        assert sorted(numbers) == list(range(8))
        assert await service.list_versions(**WHERE, filename="race") == list(range(8))

    async def test_a_cancelled_save_is_complete_or_absent(
        self, service: DocbinderArtifactService
    ) -> None:
        data = b"c" * 300_000
        for delay in (0.0, 0.001, 0.005):
            name = f"cancel-{delay}"
            task = asyncio.ensure_future(
                service.save_artifact(**WHERE, filename=name, artifact=blob(data))
            )
            await asyncio.sleep(delay)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            versions = await service.list_versions(**WHERE, filename=name)
            assert versions in ([], [0])
            if versions:
                assert payload(await service.load_artifact(**WHERE, filename=name)) == data
            # Nothing is still in flight: a later look finds the same.
            await asyncio.sleep(0.05)
            assert await service.list_versions(**WHERE, filename=name) == versions
