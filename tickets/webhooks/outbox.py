"""What changes write: one delivery row per active webhook of the license subscribed to the event's type,
inside the transaction of the change (a rolled-back change leaves no row, a committed one always has its rows),
queued after the commit.

Two sources: the ticket's history (`tickets.signals.events_recorded`, sent by History.save) and the audit
capture's per-change hook (`audit.capture.changes_recorded`, one change per object per transaction with its
final state, so an agent PATCH that saves the row and then sets its teams is one `agents.update`).
Payloads are built only when a webhook wants them.
"""

from __future__ import annotations

from django.utils import timezone

from helpdesk.api.renderers import dumps
from helpdesk.api.resources import published
from helpdesk.versioned import VersionedCopies
from tickets.webhooks.delivery import enqueue_on_commit
from tickets.webhooks.models import Webhook, WebhookDelivery

TICKET_EVENT_TYPES = {"status", "priority", "message", "tags", "followers", "assignment", "rule", "sla"}


# Every ticket write asks for its license's active webhooks: each process keeps them per license and version
# (helpdesk.versioned), dropped by any save or delete of a webhook (their delivery `status`, which the worker
# updates without a save, is not read here). Issue 34: a statement less per write that records events
# (bench/README.md "Issue 34: writes, continued").
_copies = VersionedCopies("webhooks")


def webhooks_changed(sender, *, instance, **kwargs) -> None:
    """Receiver of Webhook's post_save and post_delete (services, admin, a license's deletion alike)."""
    _copies.changed(instance.license_id)


def _hooks(license_id, prefix: str) -> dict[str, list[Webhook]]:
    def load():
        return list(Webhook.objects.filter(license_id=license_id, active=True))

    by_type: dict[str, list[Webhook]] = {}
    for webhook in _copies.get(license_id, load):
        if webhook.event_type.startswith(prefix):
            by_type.setdefault(webhook.event_type, []).append(webhook)
    return by_type


def _write(webhooks: list[Webhook], event_type: str, payload: dict, created_at=None) -> None:
    # The API's own JSON (timestamps in the contract's form; the ticket document may hold pre-rendered parts).
    body = dumps(
        {"eventType": event_type, "createdAt": created_at or timezone.now(), "payload": payload}
    ).decode()
    rows = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(license_id=webhook.license_id, webhook=webhook, event_type=event_type, body=body)
        for webhook in webhooks
    )
    for row in rows:
        enqueue_on_commit(row.pk)


# --- tickets -------------------------------------------------------------------------------------------------


def _ticket_document(ticket) -> dict:
    """The ticket as GET /v1/tickets/{ID} shows it, without its events (an event carries its own)."""
    from tickets.models import Ticket
    from tickets.output import ticket_page

    page = Ticket.objects.filter(pk=ticket.pk).order_by("created_at", "pk")[:1]
    return ticket_page(page, "created_at")[0]["doc"]


def on_events_recorded(sender, *, ticket, events, created=False, **kwargs) -> None:
    hooks = _hooks(ticket.license_id, "tickets.")
    if not hooks:
        return
    from tickets.events_output import event_document

    document = _ticket_document(ticket)
    when = events[0].created_at if events else None
    if created and "tickets.create" in hooks:
        _write(hooks["tickets.create"], "tickets.create", {"ticket": document}, when)
    if not created and "tickets.update" in hooks:
        _write(hooks["tickets.update"], "tickets.update", {"ticket": document}, when)
    for event in events:
        if event.type == "status" and "tickets.statusChange" in hooks and not created:
            _write(
                hooks["tickets.statusChange"],
                "tickets.statusChange",
                {"ticket": document, "event": event_document(event)},
                event.created_at,
            )
        event_type = f"tickets.events.{event.type}"
        if event.type in TICKET_EVENT_TYPES and event_type in hooks:
            _write(
                hooks[event_type],
                event_type,
                {"ticket": document, "event": event_document(event)},
                event.created_at,
            )


# --- agents, teams, subscriptions, and the resources that publish (helpdesk.api.resources) ------------------

# model -> (event type prefix, the serializer of its API document); filled at ready(): accounts' agents and teams
# by tickets (accounts is below it), an app above tickets registers its own (billing: subscriptions).
RESOURCES: dict[type, tuple[str, type]] = {}


def register_resource(model: type, *, prefix: str, serializer: type) -> None:
    """Announce the changes of `model` (audited: audit/registry.py) as `<prefix>.create|update|delete`, the
    payload being its document as `serializer` writes it."""
    RESOURCES[model] = (prefix, serializer)


def on_changes_recorded(sender, *, changes, **kwargs) -> None:
    resources = {**RESOURCES, **published()}
    wanted = [change for change in changes if change.model in resources]
    if not wanted:
        return
    by_license: dict[int, dict] = {}
    for change in wanted:
        if change.license_id not in by_license:
            by_license[change.license_id] = _hooks(change.license_id, "")
        hooks = by_license[change.license_id]
        prefix, serializer = resources[change.model]
        event_type = f"{prefix}.{change.action}"
        if event_type not in hooks:
            continue
        if change.obj is not None:
            payload = dict(serializer(change.obj).data)
        else:
            # Deleted: the last state the audit log saw (its names are the API's), with the IDs.
            payload = {"ID": str(change.pk), "licenseID": change.license_id, **change.before}
        _write(hooks[event_type], event_type, payload)
