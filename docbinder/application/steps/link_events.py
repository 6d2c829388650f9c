"""The one place a signed link's mint, redemption or revocation is recorded.

Every event goes through :func:`record_link_event`, which logs one line on the
``docbinder.links`` logger (``INFO`` when it went through, ``WARNING`` when it was
refused). An audit log hooks in here and nowhere else.
"""

from __future__ import annotations

import logging
from typing import Final

log = logging.getLogger("docbinder.links")

EVENTS: Final = frozenset({"mint", "redeem", "revoke"})


def record_link_event(
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
    ``not_found``). The line names the link id, file, signer and mandate; never
    the token, which is a credential.
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
