"""The bytes of a version in hand (feature row B1, ADR 0027): :class:`OpenFileVersion`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.closing import UnitOfWorkGate
from docbinder.application.steps.expiry import admit_read, note_bytes_read, now
from docbinder.application.use_cases.save_file_version import StoredVersion
from docbinder.domain.errors import AccessDenied
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobReader, BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock


class OpenFileVersion:
    """Stream the bytes of a version that a read use case returned.

    Opens no unit of work of its own, but with the audit log on the read is a
    ``read_bytes`` event (B11; read at once when a ``last_read`` policy covers
    the file, ADR 0142). With a ``gate`` (the binder's
    :class:`~docbinder.application.steps.closing.UnitOfWorkGate`) it raises
    ``BinderClosed`` once the binder is closed, like every other use case.
    """

    def __init__(
        self,
        blobs: BlobStore,
        access: AccessPolicy,
        gate: UnitOfWorkGate | None = None,
        *,
        audit: AuditTrail = DISABLED,
        units: UnitOfWorkFactory | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._blobs = blobs
        self._access = access
        self._gate = gate
        self._audit = audit
        self._units = units
        self._clock = clock

    def __call__(
        self, principal: Principal, stored: StoredVersion, chunk_size: int = 1 << 20
    ) -> BlobReader:
        """The bytes of a version as a :class:`BlobReader` of at most ``chunk_size`` bytes a chunk.

        Use it in a ``with`` block so the stream is closed however reading ends.

        Raises :class:`AccessDenied` if the principal may not read it,
        :class:`BlobMissing` if its blob is gone, :class:`FileExpired` past its
        retention period (B5), ``BinderClosed`` after the binder's close.
        """
        if self._gate is not None:
            self._gate.require_open()  # the one read that opens no unit of work
        if not self._access.can_read_file(principal, stored.item):
            raise AccessDenied(f"user {principal.user_id} may not read file {stored.item.id}")
        at_once = admit_read(self._units, stored.item, now(self._clock))
        reader = self._blobs.open(stored.item.blob_key, chunk_size)
        note_bytes_read(self._audit, principal, stored.item, at_once)
        return reader
