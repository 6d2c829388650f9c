"""Image generation for ``generate_image`` (SPEC C10): a port and an OpenAI-compatible adapter.

:class:`OpenAICompatibleImageGenerator` speaks the images API that OpenAI
documents and many compatible servers implement
(https://platform.openai.com/docs/api-reference/images/create)::

    POST {base_url}/images/generations
    Authorization: Bearer <api_key>            (only when an API key is given)
    {"model": ..., "prompt": ..., "n": ..., "size": "512x512", "response_format": "b64_json"}

    200 {"created": ..., "data": [{"b64_json": "<base64 PNG>", "revised_prompt": ...}, ...]}
    4xx/5xx {"error": {"message": "...", ...}}

It needs httpx (the ``[tools]`` extra).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import attrs

from docbinder.domain.errors import InvalidInput, MissingExtra
from docbinder.tools.errors import ImageGenerationError, is_retryable_status

MAX_IMAGES: Final = 10
"""Most images one request may ask for."""

MAX_PROMPT_CHARS: Final = 32_000
"""Longest prompt accepted, in characters."""

DEFAULT_MAX_RESPONSE_BYTES: Final = 64 << 20
"""Largest response body read from the image service, in bytes (64 MiB)."""

_SIZE_RE: Final = re.compile(r"^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$")

_IMAGE_TYPES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF87a", "image/gif", "gif"),
    (b"GIF89a", "image/gif", "gif"),
)


def image_type(data: bytes) -> tuple[str, str] | None:
    """``(MIME type, file extension)`` of PNG, JPEG, GIF or WebP bytes (by signature), else ``None``."""
    for magic, mime, extension in _IMAGE_TYPES:
        if data.startswith(magic):
            return mime, extension
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp", "webp"
    return None


@attrs.frozen
class GeneratedImage:
    """One generated image: its bytes, MIME type and file extension (without dot).

    ``revised_prompt`` is the prompt the service actually used, when it says.
    """

    data: bytes = attrs.field(repr=lambda d: f"<{len(d)} bytes>")
    mime_type: str = "image/png"
    extension: str = "png"
    revised_prompt: str | None = None


class ImageGenerator(Protocol):
    """Makes images from a text prompt."""

    def generate(self, prompt: str, *, n: int = 1, size: str = "512x512") -> list[GeneratedImage]:
        """Return between 1 and ``n`` images of ``size`` (``"<width>x<height>"`` in pixels).

        Raises :class:`ImageGenerationError` when the service fails or answers
        without a usable image.
        """


def check_image_request(prompt: object, n: object, size: object) -> tuple[str, int, str]:
    """Validate a generation request; :class:`InvalidInput` names the bad argument.

    ``prompt``: non-empty text of at most :data:`MAX_PROMPT_CHARS` characters;
    ``n``: an integer from 1 to :data:`MAX_IMAGES`; ``size``: ``"<width>x<height>"``
    in pixels (2 to 5 digits each) or ``"auto"``.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidInput("the image prompt must be non-empty text")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise InvalidInput(f"the image prompt is longer than {MAX_PROMPT_CHARS} characters")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_IMAGES:
        raise InvalidInput(f"the number of images must be an integer from 1 to {MAX_IMAGES}")
    if not isinstance(size, str) or not (size == "auto" or _SIZE_RE.match(size)):
        raise InvalidInput(f"the image size must look like '512x512' or be 'auto', got {size!r}")
    return prompt, n, size


class OpenAICompatibleImageGenerator:
    """:class:`ImageGenerator` for the OpenAI images API and compatible servers (see the module).

    ``base_url`` is the API root (``https://api.openai.com/v1``); ``api_key``
    is sent as a bearer token when given; ``model`` names the model
    (``dall-e-2`` accepts ``n`` up to 10 and sizes 256x256, 512x512,
    1024x1024). ``timeout_s`` (seconds) bounds connecting and each wait for
    data; ``max_response_bytes`` bounds the response body.

    Errors: :class:`InvalidInput` (bad arguments or base URL; nothing is sent),
    :class:`ImageGenerationError` (HTTP status of 400 or more, with the
    service's own message; timeouts; connection faults; a body that is not
    JSON, too large, or has no decodable image), :class:`MissingExtra` (httpx
    missing).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        model: str = "dall-e-2",
        timeout_s: float = 120.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        headers: Mapping[str, str] | None = None,
        trust_env: bool = True,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise MissingExtra("image generation", "tools", "httpx") from exc
        self._httpx: Any = httpx
        if not isinstance(base_url, str) or urlsplit(base_url).scheme not in ("http", "https"):
            raise InvalidInput(
                f"the image service URL must be an http or https URL, got {base_url!r}"
            )
        if not urlsplit(base_url).hostname:
            raise InvalidInput(f"the image service URL {base_url!r} has no host")
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("the image model must be a non-empty string")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
            raise InvalidInput(f"timeout_s must be a positive number, got {timeout_s!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_response_bytes = max_response_bytes
        self._headers = {"Accept": "application/json", **dict(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._trust_env = trust_env

    @property
    def endpoint(self) -> str:
        """The URL requests go to: ``{base_url}/images/generations``."""
        return f"{self.base_url}/images/generations"

    def generate(self, prompt: str, *, n: int = 1, size: str = "512x512") -> list[GeneratedImage]:
        """Ask the service for ``n`` images; see the class documentation for errors."""
        prompt, n, size = check_image_request(prompt, n, size)
        payload = {
            "model": self.model,
            "prompt": prompt,
            "n": n,
            "size": size,
            "response_format": "b64_json",
        }
        status, body = self._post(payload)
        if status >= 400:
            raise self._status_error(status, body)
        return self._images(body)

    def _post(self, payload: Mapping[str, object]) -> tuple[int, bytes]:
        httpx = self._httpx
        try:
            with (
                httpx.Client(
                    timeout=httpx.Timeout(self.timeout_s), trust_env=self._trust_env
                ) as client,
                client.stream(
                    "POST", self.endpoint, json=payload, headers=self._headers
                ) as response,
            ):
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > self.max_response_bytes:
                        raise ImageGenerationError(
                            f"the image service at {self.endpoint} answered with more than "
                            f"{self.max_response_bytes} bytes"
                        )
                return int(response.status_code), bytes(body)
        except httpx.TimeoutException as exc:
            raise ImageGenerationError(
                f"the image service at {self.endpoint} did not answer within {self.timeout_s:g} s",
                retryable=True,
            ) from exc
        except httpx.HTTPError as exc:
            raise ImageGenerationError(
                f"cannot reach the image service at {self.endpoint}: {exc}", retryable=True
            ) from exc

    def _status_error(self, status: int, body: bytes) -> ImageGenerationError:
        detail = ""
        try:
            decoded = json.loads(body)
            error = decoded.get("error") if isinstance(decoded, dict) else None
            if isinstance(error, dict):
                detail = str(error.get("message") or "")
            elif isinstance(error, str):
                detail = error
        except ValueError:
            detail = body[:200].decode("utf-8", "replace").strip()
        message = f"the image service at {self.endpoint} refused the request: HTTP {status}"
        if detail:
            message += f": {detail}"
        if status in (401, 403):
            message += " (check the API key)"
        return ImageGenerationError(message, status=status, retryable=is_retryable_status(status))

    def _images(self, body: bytes) -> list[GeneratedImage]:
        try:
            decoded = json.loads(body)
        except ValueError as exc:
            raise ImageGenerationError(
                f"the image service at {self.endpoint} answered with something that is not JSON"
            ) from exc
        data = decoded.get("data") if isinstance(decoded, dict) else None
        if not isinstance(data, list) or not data:
            raise ImageGenerationError(f"the image service at {self.endpoint} returned no images")
        images: list[GeneratedImage] = []
        for index, entry in enumerate(data, start=1):
            encoded = entry.get("b64_json") if isinstance(entry, dict) else None
            if not isinstance(encoded, str):
                raise ImageGenerationError(
                    f"image {index} from {self.endpoint} has no 'b64_json' data "
                    "(the service must support response_format b64_json)"
                )
            try:
                raw = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ImageGenerationError(
                    f"image {index} from {self.endpoint} is not valid base64"
                ) from exc
            kind = image_type(raw)
            if kind is None:
                raise ImageGenerationError(
                    f"image {index} from {self.endpoint} is not a PNG, JPEG, GIF or WebP image"
                )
            revised = entry.get("revised_prompt")
            images.append(
                GeneratedImage(raw, kind[0], kind[1], revised if isinstance(revised, str) else None)
            )
        return images
