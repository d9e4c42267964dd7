"""Seat limits: accounts.services asks (signal `agent_activating`) when an agent is created active or becomes
active."""

from __future__ import annotations

from accounts.models import License
from billing.selectors import seat_limit
from billing.services import active_agent_count
from helpdesk.errors import Conflict


def on_agent_activating(sender, *, license: License, **kwargs) -> None:
    """Receiver of accounts.signals.agent_activating."""
    ensure_seat_available(license)


def ensure_seat_available(license: License) -> None:
    """Refuse (409 `seat_limit_reached`) one more active agent beyond the paid seats.

    Locks the license row first, as subscription changes do, so that an agent activation and a quantity
    reduction cannot pass their checks at the same time.
    """
    License.objects.select_for_update(no_key=True).get(pk=license.pk)
    limit = seat_limit(license)
    active = active_agent_count(license)
    if active + 1 > limit:
        raise Conflict(
            f"All {limit} seats of the subscription are taken by {active} active agents. "
            "Raise the subscription's quantity (PATCH /v1/subscriptions/{subscriptionID}) to add or activate an agent.",
            code="seat_limit_reached",
            details={"seats": limit, "activeAgents": active},
        )
