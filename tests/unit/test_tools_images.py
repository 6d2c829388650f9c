"""The OpenAI-compatible image generator against a fake service on 127.0.0.1 (SPEC C10)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest

from docbinder.domain.errors import InvalidInput
from docbinder.tools import (
    GeneratedImage,
    ImageGenerationError,
    OpenAICompatibleImageGenerator,
    generate_image,
)
from tests.unit.test_tools_fixtures import (
    ALICE,
    LoopbackServer,
    image_api_answer,
    new_binder,
    png_bytes,
    serve_loopback,
)


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    """A loopback HTTP server on 127.0.0.1 for one test."""
    yield from serve_loopback()


PATH = "/v1/images/generations"


def generator_for(server: LoopbackServer, **options: object) -> OpenAICompatibleImageGenerator:
    return OpenAICompatibleImageGenerator(server.url("/v1/"), trust_env=False, **options)  # type: ignore[arg-type]


def answer(
    server: LoopbackServer, status: int, body: bytes, content_type: str = "application/json"
) -> None:
    server.route(PATH, status=status, headers={"Content-Type": content_type}, chunks=(body,))


def test_generate_decodes_every_image(http_server: LoopbackServer) -> None:
    first, second = png_bytes((1, 2, 3)), png_bytes((4, 5, 6), size=8)
    answer(http_server, 200, image_api_answer([first, second]))
    generator = generator_for(http_server)

    images = generator.generate("two squares", n=2, size="256x256")

    assert images == [GeneratedImage(first), GeneratedImage(second)]
    [request] = http_server.seen
    assert generator.endpoint == http_server.url(PATH)
    assert "authorization" not in request.headers
    assert json.loads(request.body) == {
        "model": "dall-e-2",
        "prompt": "two squares",
        "n": 2,
        "size": "256x256",
        "response_format": "b64_json",
    }


def test_jpeg_and_revised_prompt_are_kept(http_server: LoopbackServer) -> None:
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 20
    body = json.dumps(
        {"data": [{"b64_json": base64.b64encode(jpeg).decode(), "revised_prompt": "a cat, photo"}]}
    ).encode()
    answer(http_server, 200, body)
    [image] = generator_for(http_server).generate("a cat")
    assert (image.mime_type, image.extension, image.revised_prompt) == (
        "image/jpeg",
        "jpg",
        "a cat, photo",
    )


@pytest.mark.parametrize(
    ("status", "body", "message", "retryable"),
    [
        (
            400,
            b'{"error": {"message": "Invalid size", "type": "invalid_request_error"}}',
            "refused the request: HTTP 400: Invalid size",
            False,
        ),
        (
            401,
            b'{"error": {"message": "Incorrect API key provided"}}',
            "refused the request: HTTP 401: Incorrect API key provided (check the API key)",
            False,
        ),
        (429, b'{"error": "slow down"}', "refused the request: HTTP 429: slow down", True),
        (500, b"upstream exploded", "refused the request: HTTP 500: upstream exploded", True),
    ],
)
def test_error_statuses_become_image_generation_errors(
    http_server: LoopbackServer, status: int, body: bytes, message: str, retryable: bool
) -> None:
    answer(http_server, status, body)
    with pytest.raises(ImageGenerationError) as caught:
        generator_for(http_server).generate("x")
    assert str(caught.value) == f"the image service at {http_server.url(PATH)} {message}"
    assert caught.value.status == status
    assert caught.value.retryable is retryable


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>oops</html>", "answered with something that is not JSON"),
        (b'{"data": []}', "returned no images"),
        (b'{"data": [{"url": "http://x/y.png"}]}', "has no 'b64_json' data"),
        (b'{"data": [{"b64_json": "***"}]}', "is not valid base64"),
        (
            json.dumps({"data": [{"b64_json": base64.b64encode(b"text").decode()}]}).encode(),
            "is not a PNG, JPEG, GIF or WebP image",
        ),
    ],
)
def test_unusable_answers_are_errors(
    http_server: LoopbackServer, body: bytes, message: str
) -> None:
    answer(http_server, 200, body)
    with pytest.raises(ImageGenerationError, match=message):
        generator_for(http_server).generate("x")


def test_a_timeout_is_an_image_generation_error(http_server: LoopbackServer) -> None:
    http_server.route(PATH, chunks=(b"{}",), delay_s=1.0, delay_headers=True)
    with pytest.raises(ImageGenerationError) as caught:
        generator_for(http_server, timeout_s=0.2).generate("x")
    assert (
        str(caught.value)
        == f"the image service at {http_server.url(PATH)} did not answer within 0.2 s"
    )
    assert caught.value.retryable


def test_an_oversized_answer_is_refused(http_server: LoopbackServer) -> None:
    answer(http_server, 200, image_api_answer([png_bytes(size=64)]))
    with pytest.raises(ImageGenerationError, match="answered with more than 100 bytes"):
        generator_for(http_server, max_response_bytes=100).generate("x")


def test_a_failing_service_stores_nothing(http_server: LoopbackServer) -> None:
    answer(http_server, 500, b'{"error": {"message": "boom"}}')
    binder = new_binder()
    run = binder.start_new_run(ALICE)
    with pytest.raises(ImageGenerationError, match="HTTP 500: boom"):
        generate_image(run, "x", generator=generator_for(http_server))
    assert list(binder.blobs.keys()) == []
    assert run.workflow is not None and run.workflow.messages == ()


@pytest.mark.parametrize(
    ("prompt", "n", "size", "message"),
    [
        (
            "",
            1,
            "512x512",
            "the image prompt: got '' (str); accepted: non-empty text; "
            'example: "a red bicycle at dawn"',
        ),
        (
            "x",
            0,
            "512x512",
            "the number of images: got 0 (int); accepted: a whole number from 1 to 10, "
            "or a string holding one; example: 1",
        ),
        (
            "x",
            "11",
            "512x512",
            "the number of images: got '11' (str); accepted: a whole number from 1 to 10, "
            "or a string holding one; example: 1",
        ),
        (
            "x",
            1,
            "big",
            "the image size: got 'big' (str); accepted: '<width>x<height>' in pixels or 'auto'; "
            'example: "1024x1024"',
        ),
    ],
)
def test_bad_arguments_send_nothing(
    http_server: LoopbackServer, prompt: str, n: object, size: str, message: str
) -> None:
    run = new_binder().start_new_run(ALICE)
    with pytest.raises(InvalidInput) as caught:
        generate_image(run, prompt, generator=generator_for(http_server), n=n, size=size)
    assert str(caught.value) == message
    assert http_server.seen == []


def test_the_base_url_must_be_http() -> None:
    with pytest.raises(InvalidInput, match="must be an http or https URL, got 'ftp://x'"):
        OpenAICompatibleImageGenerator("ftp://x")
