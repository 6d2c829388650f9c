"""The one door to the metadata store that closes with the binder: :class:`UnitOfWorkGate`.

Every use case gets its unit-of-work factories through the gate (the
composition root wraps them), so after :meth:`DocBinder.close
<docbinder.application.binder.DocBinder.close>` every use case refuses work
with :class:`~docbinder.domain.errors.BinderClosed` the same way on every
metadata backend, before it touches storage, whether the store itself refuses
new units after closing (SQL) or not (memory, third-party backends).
"""

from __future__ import annotations

import threading

from docbinder.domain.errors import BinderClosed
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory

CLOSED_MESSAGE = "this DocBinder was closed; build a new one (build_binder)"
"""The text of the :class:`BinderClosed` a closed binder, its runs and its use cases raise."""


class UnitOfWorkGate:
    """Hands out guarded unit-of-work factories and, once closed, lets no new unit through.

    :meth:`guard` wraps a factory; :meth:`close` (idempotent, thread-safe)
    makes every guarded factory raise :class:`BinderClosed` from then on.
    Units opened before the close finish normally.
    """

    def __init__(self) -> None:
        self._closed = threading.Event()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed.is_set()

    def guard(self, factory: UnitOfWorkFactory) -> UnitOfWorkFactory:
        """``factory`` behind the gate: the same units while open, :class:`BinderClosed` after."""
        require_open = self.require_open

        def unit_of_work() -> UnitOfWork:
            require_open()
            return factory()

        return unit_of_work

    def require_open(self) -> None:
        """Raise :class:`BinderClosed` once closed: for the few steps that open no unit of work."""
        if self._closed.is_set():
            raise BinderClosed(CLOSED_MESSAGE)

    def close(self) -> None:
        """Refuse every new unit of work from now on; idempotent."""
        self._closed.set()
