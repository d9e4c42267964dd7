"""The writes behind the ticket sub-resources of the API (contract, "Ticket sub-resources"): followers and tags
added or removed, a rating asked for now, a merge undone. Moving a ticket between silos is PATCH's own write
(tickets.services.ticket_update with `silo`).

Each is one unit of work under the ticket's row lock. Followers and tags go through ticket_update, so their
events, webhooks, totals and stamps are PATCH's; a change that changes nothing writes nothing (the ticket's
version, its ETag, stays).
"""

from __future__ import annotations

from accounts.models import Agent
from accounts.services import stamp_update
from helpdesk.errors import Conflict, NotFound
from helpdesk.transactions import unit_of_work
from tickets import services, totals
from tickets.events import History, acting_author
from tickets.models import Ticket, TicketEvent
from tickets.signals import rating_requested

RELATIONS = ("followers", "tags")


def _lock(ticket: Ticket) -> Ticket:
    return (
        Ticket.objects.select_for_update(no_key=True, of=("self",))
        .select_related("license")
        .get(pk=ticket.pk)
    )


def _check_writable(ticket: Ticket) -> None:
    if ticket.is_read_only:
        raise Conflict(
            f"Tickets in '{ticket.silo}' are read-only; move the ticket back (silo) first.",
            code="read_only_silo",
        )


@unit_of_work
def ticket_relation_change(
    *, ticket: Ticket, relation: str, added=(), removed=(), author_agent: Agent | None = None
) -> Ticket:
    """Add `added` to the ticket's followers or tags (`relation`) and take `removed` away; the others stay."""
    if relation not in RELATIONS:
        raise ValueError(f"unknown relation {relation!r}")
    ticket = _lock(ticket)
    _check_writable(ticket)
    current = list(getattr(ticket, relation).all())
    known, gone = {obj.pk for obj in current}, {obj.pk for obj in removed}
    wanted = [obj for obj in current if obj.pk not in gone]
    wanted += [obj for obj in added if obj.pk not in known and obj.pk not in gone]
    if {obj.pk for obj in wanted} == known:
        return ticket
    return services.ticket_update(ticket=ticket, author_agent=author_agent, **{relation: wanted})


@unit_of_work
def ticket_rating_request(*, ticket: Ticket) -> Ticket:
    """E-mail the requester the rating request now (the one a first solve sends, templates_app.rating), and
    note it (`ratingRequeestSent`). Asked again within the same hour, no second e-mail goes out."""
    ticket = _lock(ticket)
    _check_writable(ticket)
    totals.changing(ticket.license_id, [ticket.pk])
    ticket.rating_requeest_sent = True
    stamp_update(ticket)
    ticket.save(update_fields=["rating_requeest_sent", "updated_at", "updated_by"])
    rating_requested.send(sender=Ticket, ticket=ticket, asked_at=ticket.updated_at)
    return ticket


@unit_of_work
def ticket_unmerge(*, ticket: Ticket, child: Ticket) -> Ticket:
    """Undo the merge of `child` into `ticket`: the child stands alone again with the history it always kept,
    and the status the merge closed it from (unless it changed since); the parent records an `unmerge` event."""
    locked = {
        t.pk: t
        for t in Ticket.objects.select_for_update(no_key=True)
        .filter(pk__in=[ticket.pk, child.pk])
        .order_by("pk")  # the merge's lock order
    }
    parent, child = locked.get(ticket.pk), locked.get(child.pk)
    if parent is None or child is None or child.parent_id != parent.pk:
        raise NotFound("That ticket is not merged into this one.")
    for each in (parent, child):
        _check_writable(each)
    totals.changing(parent.license_id, [parent.pk, child.pk])
    history = History(parent)
    status = _status_before_merge(parent, child)
    child_history = History(child, now=history.now)
    child.parent = None
    if status is not None and status != child.status:
        child_history.change("status", acting_author(child), child.status, status)
        child.status, child.status_changed_at = status, history.now
    stamp_update(child)
    child.save(update_fields=["parent", "status", "status_changed_at", "updated_at", "updated_by"])
    services.sync_team_links(child)
    child_history.save()
    stamp_update(parent)
    Ticket.objects.filter(pk=parent.pk).update(updated_at=parent.updated_at, updated_by=parent.updated_by)
    history.add("unmerge", acting_author(parent), payload={"childTicketID": str(child.pk)})
    history.save()
    return parent


def _status_before_merge(parent: Ticket, child: Ticket) -> str | None:
    """The status the merge closed the child from (its `status` event at the merge's time), while the child is
    still closed; None to keep its status (changed since, or closed before the merge)."""
    if child.status != "closed":
        return None
    merged_at = (
        TicketEvent.objects.filter(
            license_id=parent.license_id,
            ticket_id=parent.pk,
            type="merge",
            payload__childTicketID=str(child.pk),
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if merged_at is None:
        return None
    closing = (
        TicketEvent.objects.filter(
            license_id=child.license_id, ticket_id=child.pk, type="status", created_at=merged_at
        )
        .values_list("payload", flat=True)
        .first()
    )
    return (closing or {}).get("old")
