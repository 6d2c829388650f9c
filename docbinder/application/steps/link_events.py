"""The one place a signed link's mint, redemption or revocation is recorded.

Every event goes through :meth:`LinkEvents.record`, which logs one line on the
``docbinder.links`` logger (``INFO`` when it went through, ``WARNING`` when it was
refused) and appends it to the audit log when that is on.
"""

from __future__ import annotations

import logging
from typing import Final

from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.domain.audit import AuditAction

log = logging.getLogger("docbinder.links")

EVENTS: Final = frozenset({"mint", "redeem", "revoke"})


_ACTIONS: Final = {
    "mint": AuditAction.LINK_MINT,
    "redeem": AuditAction.LINK_REDEEM,
    "revoke": AuditAction.LINK_REVOKE,
}


class LinkEvents:
    """Where the link use cases record each mint, redemption and revocation.

    Every event is one line on the ``docbinder.links`` logger and, when the
    ``audit`` trail is enabled (``audit = true``), one event of the audit log
    (``link_mint``, ``link_redeem``, ``link_revoke``; ADR 0092), appended in a
    unit of its own: a redemption writes nothing else, and a refused one must
    be recorded too.
    """

    def __init__(self, audit: AuditTrail = DISABLED) -> None:
        self._audit = audit

    def record(
        self,
        event: str,
        outcome: str,
        *,
        link_id: str | None,
        file_id: str | None,
        user_id: str | None,
        mandate_id: str | None,
        audience: str | None = None,
    ) -> None:
        """Record one link event: ``event`` is ``mint``, ``redeem`` or ``revoke``.

        ``outcome`` is ``ok`` or the refusal reason (a
        :class:`~docbinder.domain.links.LinkRefusal` value, ``access_denied``,
        ``not_found``). The line and the audit event name the link id, file,
        signer and mandate; never the token, which is a credential. Never raises
        for the audit log (a failed append is logged).
        """
        level = logging.INFO if outcome == "ok" else logging.WARNING
        log.log(
            level,
            "link %s %s: link %s, file %s, signer %s, mandate %s, audience %s",
            event,
            outcome,
            link_id or "-",
            file_id or "-",
            user_id or "-",
            mandate_id or "-",
            audience or "-",
        )
        audit = self._audit
        if audit.enabled:
            audit.refused(
                audit.event(
                    _ACTIONS[event],
                    user_id,
                    outcome=outcome,
                    file_id=file_id,
                    mandate_id=mandate_id,
                    detail={"linkId": link_id, "audience": audience},
                )
            )
