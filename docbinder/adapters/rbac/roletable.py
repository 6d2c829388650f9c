"""The default authorizer: a fixed table of roles and what each may do (SPEC C11).

Rules, in order:

1. Nothing crosses mandates: a principal acts only inside its own mandate.
2. ``admin`` may do everything inside its mandate, in every feature instance.
3. A resource of feature instance F is visible only to principals working in F.
   Mandate-level resources (no feature instance) are visible mandate-wide.
4. ``viewer`` may read; ``member`` may read and create, and update or delete
   what it owns (``owner_id == user_id``). Unknown roles grant nothing.

Adding a message to a workflow is an ``update`` of the workflow, so only its
owner (or an admin) can attach documents to it.
"""

from __future__ import annotations

from collections.abc import Mapping

from docbinder.domain.access import Action, Resource
from docbinder.domain.model import Principal

DEFAULT_TABLE: Mapping[str, frozenset[tuple[Action, bool]]] = {
    # role -> {(action, needs_ownership)}
    "viewer": frozenset({(Action.READ, False)}),
    "member": frozenset(
        {(Action.READ, False), (Action.CREATE, False), (Action.UPDATE, True), (Action.DELETE, True)}
    ),
}


class RoleTableAuthorizer:
    """Role-table :class:`~docbinder.ports.authorizer.Authorizer`.

    ``table`` maps a role name to the set of ``(action, needs_ownership)``
    pairs it grants; the ``admin`` role is built in (everything in its mandate).
    """

    def __init__(self, table: Mapping[str, frozenset[tuple[Action, bool]]] | None = None) -> None:
        self._table = dict(DEFAULT_TABLE if table is None else table)

    @property
    def name(self) -> str:
        return "roletable"

    @property
    def known_roles(self) -> frozenset[str]:
        """The role names that grant something: those of the table, and ``admin``."""
        return frozenset(self._table) | {"admin"}

    def is_allowed(self, principal: Principal, action: Action, resource: Resource) -> bool:
        if principal.mandate_id != resource.scope.mandate_id:
            return False
        if "admin" in principal.roles:
            return True
        fi = resource.scope.feature_instance_id
        if fi is not None and fi != principal.feature_instance_id:
            return False
        owner = resource.owner_id == principal.user_id
        for role in principal.roles:
            for granted, needs_owner in self._table.get(role, frozenset()):
                if granted == action and (owner or not needs_owner):
                    return True
        return False
