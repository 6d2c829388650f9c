"""The access-control port (SPEC C11)."""

from __future__ import annotations

from typing import Protocol

from docbinder.domain.access import Action, Resource
from docbinder.domain.model import Principal


class Authorizer(Protocol):
    """Decides whether a principal may perform an action on a resource.

    Implementations must at least never allow anything across mandates, show a
    feature-instance FileItem only inside that feature instance (or to an admin
    of its mandate), and require ``update`` on a workflow to add a message.
    ``is_allowed`` must not raise for an ordinary "no"; it returns ``False``.
    """

    @property
    def name(self) -> str:
        """A short name for diagnostics (``docbinder doctor``)."""
        ...

    def is_allowed(self, principal: Principal, action: Action, resource: Resource) -> bool:
        """``True`` if ``principal`` may perform ``action`` on ``resource``."""
        ...
