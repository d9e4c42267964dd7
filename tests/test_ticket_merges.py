"""A merged child ticket is closed (its conversation goes on in the parent), and a merge can be undone:
`DELETE /v1/tickets/{ID}/childTickets/{childID}` gives the child back its own life, status included."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps

from tests.factories import TicketFactory
from tickets.models import Ticket, TicketEvent, TicketTeam


def _merge(persona, parent, child):
    response = persona.client.post(
        f"/v1/tickets/{parent.pk}/childTickets", {"childTicketID": str(child.pk)}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def _unmerge(persona, parent, child_id):
    return persona.client.delete(f"/v1/tickets/{parent.pk}/childTickets/{child_id}")


def _open_ids(persona) -> set[str]:
    return {t["ID"] for t in persona.client.get("/v1/tickets?status=open").json()}


def test_a_merged_child_is_closed_and_leaves_the_open_tickets(owner):
    # given two open tickets
    parent, child = (
        TicketFactory(license=owner.license),
        TicketFactory(license=owner.license, status="pending"),
    )
    # when the second is merged into the first
    _merge(owner, parent, child)
    # then the child is closed, with a status event of the merge's author, and no longer waits in any queue
    doc = owner.client.get(f"/v1/tickets/{child.pk}").json()
    assert doc["status"] == "closed"
    [status] = [e for e in doc["events"] if e["type"] == "status"]
    assert status["status"] == {"old": "pending", "new": "closed"}
    assert status["author"]["ID"] == str(owner.agent.pk)
    assert set(TicketTeam.objects.filter(ticket=child).values_list("status", flat=True)) == {"closed"}
    assert str(child.pk) not in _open_ids(owner) and str(parent.pk) in _open_ids(owner)


def test_undoing_a_merge_gives_the_child_back_its_status_and_history(
    owner, django_capture_on_commit_callbacks
):
    # given a pending ticket with a reply, merged into another
    parent = TicketFactory(license=owner.license)
    child = TicketFactory(license=owner.license, status="pending")
    owner.client.patch(f"/v1/tickets/{child.pk}", {"message": {"text": "We are on it."}}, format="json")
    _merge(owner, parent, child)
    # when the merge is undone
    response = _unmerge(owner, parent, child.pk)
    # then the child stands alone again, pending as before, with every event it had plus its reopening
    assert response.status_code == 204, response.content
    doc = owner.client.get(f"/v1/tickets/{child.pk}").json()
    assert doc["parent"] is None and doc["status"] == "pending"
    assert [e["type"] for e in doc["events"]] == ["message", "message", "status", "status"]
    assert [e["status"] for e in doc["events"][2:]] == [
        {"old": "pending", "new": "closed"},
        {"old": "closed", "new": "pending"},
    ]
    parent_doc = owner.client.get(f"/v1/tickets/{parent.pk}").json()
    assert parent_doc["children"] == []
    assert [e["type"] for e in parent_doc["events"]][-2:] == ["merge", "unmerge"]
    assert parent_doc["events"][-1]["unmerge"] == {"childTicketID": str(child.pk)}
    assert set(TicketTeam.objects.filter(ticket=child).values_list("status", flat=True)) == {"pending"}


def test_a_child_reopened_after_the_merge_keeps_its_status(owner):
    parent, child = TicketFactory(license=owner.license), TicketFactory(license=owner.license)
    _merge(owner, parent, child)
    owner.client.patch(f"/v1/tickets/{child.pk}", {"status": "onhold"}, format="json")
    assert _unmerge(owner, parent, child.pk).status_code == 204
    assert Ticket.objects.get(pk=child.pk).status == "onhold"


def test_undoing_a_merge_that_is_not_there_is_a_404(owner, outsider):
    parent, other = TicketFactory(license=owner.license), TicketFactory(license=owner.license)
    foreign_parent = TicketFactory(license=outsider.license)
    foreign_child = TicketFactory(license=outsider.license)
    _merge(outsider, foreign_parent, foreign_child)
    # not a child of this ticket, not a ticket at all, another license's child
    for child_id in (other.pk, "not-a-uuid", foreign_child.pk):
        response = _unmerge(owner, parent, child_id)
        assert response.status_code == 404, (child_id, response.content)
        assert response.json()["code"] == "not_found"
    # another license's parent
    assert _unmerge(owner, foreign_parent, foreign_child.pk).status_code == 404
    assert Ticket.objects.get(pk=foreign_child.pk).parent_id == foreign_parent.pk


@pytest.mark.parametrize(("persona", "allowed"), [("owner", True), ("normal", True), ("viewer", False)])
def test_who_may_undo_a_merge(personas, owner, persona, allowed):
    parent, child = TicketFactory(license=owner.license), TicketFactory(license=owner.license)
    _merge(owner, parent, child)
    response = _unmerge(personas[persona], parent, child.pk)
    assert response.status_code == (204 if allowed else 403), response.content
    assert (Ticket.objects.get(pk=child.pk).parent_id is None) is allowed


def test_a_trashed_child_is_moved_back_before_its_merge_is_undone(owner):
    parent, child = TicketFactory(license=owner.license), TicketFactory(license=owner.license)
    _merge(owner, parent, child)
    owner.client.delete(f"/v1/tickets/{child.pk}")
    response = _unmerge(owner, parent, child.pk)
    assert response.status_code == 409 and response.json()["code"] == "read_only_silo"
    assert Ticket.objects.get(pk=child.pk).parent_id == parent.pk


def test_undoing_a_merge_announces_the_childs_status_to_webhooks(owner, django_capture_on_commit_callbacks):
    from tickets.webhooks.models import Webhook, WebhookDelivery

    parent, child = TicketFactory(license=owner.license), TicketFactory(license=owner.license)
    _merge(owner, parent, child)
    Webhook.objects.create(
        license=owner.license, name="h", url="https://hooks.example.com/", event_type="tickets.events.status",
        secret="x" * 20,
    )  # fmt: skip
    assert _unmerge(owner, parent, child.pk).status_code == 204
    [delivery] = WebhookDelivery.objects.filter(event_type="tickets.events.status")
    payload = json.loads(delivery.body)["payload"]
    assert payload["ticket"]["ID"] == str(child.pk)
    assert payload["event"]["status"] == {"old": "closed", "new": "open"}


def test_the_migration_closes_the_children_merged_before(owner):
    # given a child merged the old way: linked, still open
    parent, child = TicketFactory(license=owner.license), TicketFactory(license=owner.license)
    Ticket.objects.filter(pk=child.pk).update(parent=parent)
    migration = importlib.import_module("tickets.migrations.0014_merged_children_closed")
    # when
    migration.close_merged_children(apps, None)
    # then it is closed, says so in its history, and its team links follow
    child.refresh_from_db()
    assert child.status == "closed"
    event = TicketEvent.objects.get(ticket=child, type="status")
    assert (event.payload, event.author_type, event.source_type) == (
        {"old": "open", "new": "closed"},
        "system",
        "system",
    )
    assert set(TicketTeam.objects.filter(ticket=child).values_list("status", flat=True)) == {"closed"}
    assert Ticket.objects.get(pk=parent.pk).status == "open"


def test_the_admin_conversation_tells_the_undone_merge(owner):
    from tickets.admin.conversation import render_conversation

    parent, child = TicketFactory(license=owner.license), TicketFactory(license=owner.license)
    _merge(owner, parent, child)
    assert _unmerge(owner, parent, child.pk).status_code == 204
    html = render_conversation(Ticket.objects.get(pk=parent.pk))
    assert f"merged ticket {child.pk} into this one" in html
    assert f"ticket {child.pk} no longer merged into this one" in html
