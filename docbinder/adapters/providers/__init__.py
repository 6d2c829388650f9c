"""Model providers' Files APIs through their official SDKs (feature row B22).

One module per provider, each importing only its own SDK: :mod:`.openai_files`
(``openai``), :mod:`.anthropic_files` (``anthropic``) and :mod:`.gemini_files`
(``google-genai``). Each offers the :class:`~docbinder.ports.providers.ProviderFiles`
adapter over a client the host built, and the provider's native content blocks,
built with the SDK's own typed parameters, for a file by its provider id or
inline (base64). The SDKs come with the ``providers`` extra (``google-genai``
with ``adk``).
"""

from __future__ import annotations

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""MIME types every provider takes as an image block (the others become documents or files)."""


def is_image(mime_type: str) -> bool:
    """Whether ``mime_type`` (parameters ignored, any case) goes into an image block."""
    return mime_type.split(";", 1)[0].strip().lower() in IMAGE_TYPES
