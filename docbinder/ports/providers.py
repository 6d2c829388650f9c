"""The port to a model provider's Files API (feature row B22).

A :class:`ProviderFiles` is one provider and one account: an official SDK
client the host built (its API key, its base URL) and the name the host gives
that account. docbinder's adapters (:mod:`docbinder.adapters.providers`) wrap
the ``openai``, ``anthropic`` and ``google-genai`` clients; a host may pass its
own object with these members.

Uploads stream: :meth:`ProviderFiles.upload` gets a seekable binary file
object of the blob, never the whole blob in memory. Every upload's name
carries its upload token (:func:`~docbinder.domain.providers.marked_name`) and
:meth:`ProviderFiles.find` lists the provider's files for it, so an upload
whose answer was lost can be found again (ADR 0125). A client may also offer
``find_many(tokens) -> dict[str, list[UploadedCopy]]``, one listing for many
tokens (the shipped adapters do); without it ``find`` is called per token
(:func:`~docbinder.application.steps.provider_copies.find_tokens`, ADR 0132).
"""

from __future__ import annotations

from typing import BinaryIO, Protocol

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

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> UploadedCopy:
        """Upload ``size`` bytes read from ``source`` as ``file_name`` of ``mime_type``.

        ``source`` is a readable, seekable binary file object positioned at 0
        (the SDK may read it again after seeking back); ``file_name`` is the
        marked name (:func:`~docbinder.domain.providers.marked_name`), kept
        by the provider as the file's name. Returns the provider's id and
        expiry. The adapter sends the request once: the SDK's own retries
        are off for it, since a retry after a lost answer stores a second
        copy (the caller looks for the first with :meth:`find` instead).
        """
        ...

    def find(self, token: str) -> list[UploadedCopy]:
        """Every file of the account whose name carries upload token ``token`` (paginated list).

        Empty when there is none. A failed listing raises
        :class:`~docbinder.domain.errors.ProviderError`: a listing that could
        not be read is never taken for an empty one.
        """
        ...

    def exists(self, file_id: str) -> bool:
        """Whether the provider still keeps ``file_id`` (``False`` when it answers 404)."""
        ...

    def delete(self, file_id: str) -> bool:
        """Delete ``file_id``; ``True`` if deleted, ``False`` if the provider answered 404 (already gone)."""
        ...
