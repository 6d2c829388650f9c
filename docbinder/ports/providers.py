"""The port to a model provider's Files API (feature row B22).

A :class:`ProviderFiles` is one provider and one account: an official SDK
client the host built (its API key, its base URL) and the name the host gives
that account. docbinder's adapters (:mod:`docbinder.adapters.providers`) wrap
the ``openai``, ``anthropic`` and ``google-genai`` clients; a host may pass its
own object with these members.
"""

from __future__ import annotations

from typing import Protocol

from docbinder.domain.providers import Provider, UploadedCopy


class ProviderFiles(Protocol):
    """Upload, look up and delete files at one provider for one account.

    Errors: :class:`~docbinder.domain.errors.ProviderError` for every failure
    the provider reports or the connection has, except the answers each method
    documents (a missing file is an answer, not an error).
    """

    @property
    def provider(self) -> Provider:
        """Which provider this is."""
        ...

    @property
    def account(self) -> str:
        """The host's name for the account (an id: 1 to 128 printable characters)."""
        ...

    def upload(self, data: bytes, file_name: str, mime_type: str) -> UploadedCopy:
        """Upload ``data`` (bytes) as ``file_name`` of ``mime_type``; the provider's id and expiry."""
        ...

    def exists(self, file_id: str) -> bool:
        """Whether the provider still keeps ``file_id`` (``False`` when it answers 404)."""
        ...

    def delete(self, file_id: str) -> bool:
        """Delete ``file_id``; ``True`` if deleted, ``False`` if the provider answered 404 (already gone)."""
        ...
