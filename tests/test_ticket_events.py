"""The ticket's history (`events`): every write path records what changed, who did it and from where, in the
contract's shape; single reads carry it, search only with eventsScope=all (and then in one more query)."""

import contextlib

import pytest
from django.db import connection

from helpdesk.context import EMAIL_MESSAGE, SCHEDULED_TASK, Actor, acting_as
from tests.admin_helpers import form_data
from tests.factories import AgentFactory, TagFactory, TeamFactory, TicketFactory
from tickets import services
from tickets.models import Message, Ticket, TicketEvent
from tickets.signals import message_created

ADMIN_URL = "/admin/tickets/ticket/"


def _create(persona, **extra):
    body = {"subject": "Order lost", "requester": {"email": "ann@example.com", "name": "Ann"},
            "message": {"text": "Where is my order?"}} | extra  # fmt: skip
    response = persona.client.post("/v1/tickets", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _patch(persona, ticket_id, body):
    response = persona.client.patch(f"/v1/tickets/{ticket_id}", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _events(persona, ticket_id):
    response = persona.client.get(f"/v1/tickets/{ticket_id}")
    assert response.status_code == 200, response.content
    return response.json()["events"]


def _by_type(events, type_):
    return [event for event in events if event["type"] == type_]


def test_api_create_records_the_first_message_with_author_and_source(owner):
    # when
    doc = _create(owner)
    # then: the create response already carries the history
    [event] = doc["events"]
    assert list(event) == [
        "ID",
        "date",
        "type",
        "author",
        "source",
        "message",
        "attachments",
        "deliveryStatus",
    ]
    assert event["type"] == "message"
    assert event["date"] == doc["createdAt"]
    assert event["author"] == {"ID": str(owner.agent.pk), "name": owner.agent.name, "type": "agent"}
    assert event["source"] == {"type": "api", "detailedSource": "api"}
    assert event["message"] == {"text": "Where is my order?", "isPrivate": False, "richTextHtml": ""}
    assert event["attachments"] == []
    # an agent's public first message goes to the requester by e-mail (queued in the same transaction)
    assert [(d["status"], d["recipient"]) for d in event["deliveryStatus"]] == [("queued", "ann@example.com")]


def test_every_api_field_change_is_an_event_with_old_and_new(owner):
    # given
    license = owner.license
    team, other_team = TeamFactory(license=license, name="Billing"), TeamFactory(license=license)
    tag = TagFactory(license=license)
    helper = AgentFactory(license=license, name="Helper")
    ticket_id = _create(owner)["ID"]
    # when: one PATCH per field
    _patch(owner, ticket_id, {"status": "pending"})
    _patch(owner, ticket_id, {"priority": 20})
    _patch(owner, ticket_id, {"assignment": {"team": {"ID": str(team.pk)}, "agent": {"ID": str(helper.pk)}}})
    _patch(owner, ticket_id, {"teamIDs": [str(other_team.pk)]})
    _patch(owner, ticket_id, {"tagIDs": [str(tag.pk)]})
    _patch(owner, ticket_id, {"followers": [str(helper.pk)]})
    _patch(owner, ticket_id, {"silo": "archive"})
    _patch(owner, ticket_id, {"silo": "tickets"})
    _patch(owner, ticket_id, {"status": "pending"})  # no change: no event
    events = _events(owner, ticket_id)
    # then: oldest first, each with the payload the contract names
    assert [e["type"] for e in events] == [
        "message", "status", "priority", "assignment", "teams", "tags", "followers", "silo", "silo",
    ]  # fmt: skip
    assert events[1]["status"] == {"old": "open", "new": "pending"}
    assert events[2]["priority"] == {"old": 0, "new": 20}
    assert events[3]["assignment"] == {
        "old": {"team": None, "agent": None},
        "new": {
            "team": {"ID": str(team.pk), "name": "Billing"},
            "agent": {"ID": str(helper.pk), "name": "Helper"},
        },
    }
    # the assignment's team stays among the teams; the default team went
    assert events[4]["teams"] == {
        "added": sorted([str(other_team.pk), str(team.pk)]),
        "removed": [str(license.default_team_id)],
    }
    assert events[5]["tags"] == {"added": [str(tag.pk)], "removed": []}
    assert events[6]["followers"] == {"added": [str(helper.pk)], "removed": []}
    assert events[7]["silo"] == {"old": "tickets", "new": "archive"}
    assert events[8]["silo"] == {"old": "archive", "new": "tickets"}
    for event in events[1:]:
        assert event["author"] == {"ID": str(owner.agent.pk), "name": owner.agent.name, "type": "agent"}
        assert event["source"] == {"type": "api", "detailedSource": "api"}
    dates = [e["date"] for e in events]
    assert dates == sorted(dates)


def test_a_reply_with_a_status_change_is_the_message_then_the_status(owner):
    ticket_id = _create(owner)["ID"]
    # when: a client reply and an agent's private note, each with a change
    _patch(owner, ticket_id, {"message": {"text": "It came, thanks"}, "author": {"type": "client"},
                              "status": "solved"})  # fmt: skip
    _patch(owner, ticket_id, {"message": {"text": "internal", "isPrivate": True}, "priority": 10})
    events = _events(owner, ticket_id)
    # then
    assert [e["type"] for e in events] == ["message", "message", "status", "message", "priority"]
    client_reply, status = events[1], events[2]
    assert client_reply["author"] == {"ID": None, "name": "Ann", "type": "client"}
    assert client_reply["message"]["text"] == "It came, thanks"
    assert status["author"]["type"] == "agent" and status["date"] == client_reply["date"]
    assert events[3]["message"] == {"text": "internal", "isPrivate": True, "richTextHtml": ""}


def test_delete_is_a_silo_event_and_merge_an_event_on_the_parent(owner):
    parent_id, child_id = _create(owner)["ID"], _create(owner)["ID"]
    # when
    merged = owner.client.post(
        f"/v1/tickets/{parent_id}/childTickets", {"childTicketID": child_id}, format="json"
    )
    assert merged.status_code == 201, merged.content
    deleted = owner.client.delete(f"/v1/tickets/{child_id}")
    assert deleted.status_code == 204
    # then
    [merge] = _by_type(merged.json()["events"], "merge")
    assert merge["merge"] == {"childTicketID": child_id}
    assert merge["author"]["ID"] == str(owner.agent.pk)
    [silo] = _by_type(_events(owner, child_id), "silo")
    assert silo["silo"] == {"old": "tickets", "new": "trash"}
    assert silo["source"]["type"] == "api"


def test_the_admin_change_form_and_actions_record_admin_events(staff_owner, owner):
    # given
    ticket = TicketFactory(license=owner.license)
    team = TeamFactory(license=owner.license)
    url = f"{ADMIN_URL}{ticket.pk}/change/"
    # when: the change form (status, assignment and a reply), then the two actions
    data = form_data(staff_owner.get(url)) | {
        "status": "pending", "assignment_team": str(team.pk), "reply": "On its way.",
    }  # fmt: skip
    assert staff_owner.post(url, data).status_code == 302
    for action, choice in (("change_status", {"status": "solved"}), ("move_to_silo", {"silo": "archive"})):
        response = staff_owner.post(
            f"{ADMIN_URL}?view=all", {"action": action, "_selected_action": [str(ticket.pk)], **choice}
        )
        assert response.status_code == 302
    # then
    events = _events(owner, ticket.pk)
    assert [e["type"] for e in events] == ["message", "message", "status", "assignment", "status", "silo"]
    assert events[0]["author"]["type"] == "client"  # the factory's first message
    for event in events[1:]:
        assert event["source"] == {"type": "admin", "detailedSource": "administrator"}
        # the admin signs as their own agent of the license
        assert event["author"] == {"ID": str(owner.agent.pk), "name": owner.agent.name, "type": "agent"}
    assert events[1]["message"]["text"] == "On its way."
    assert events[4]["status"] == {"old": "pending", "new": "solved"}
    assert events[5]["silo"] == {"old": "tickets", "new": "archive"}


def test_the_admin_creates_a_ticket_with_its_message_event(staff_owner, owner):
    response = staff_owner.post(
        f"{ADMIN_URL}add/",
        {"license": owner.license.pk, "subject": "By phone", "requester_email": "c@example.com",
         "message": "Called about the invoice.", "status": "open", "priority": "0", "custom_fields": "{}",
         "silo": "tickets"},
    )  # fmt: skip
    assert response.status_code == 302
    ticket = Ticket.objects.get(subject="By phone")
    [event] = _events(owner, ticket.pk)
    assert event["source"]["type"] == "admin"
    assert event["author"] == {"ID": str(owner.agent.pk), "name": owner.agent.name, "type": "agent"}
    assert Message.objects.get(ticket=ticket).author_agent == owner.agent


def test_a_system_actor_and_an_email_actor(owner):
    ticket = TicketFactory(license=owner.license, requester={"email": "ann@example.com", "name": "Ann"})
    # when: a scheduled task closes it; a mail from someone in the loop reopens it
    with acting_as(Actor(type=SCHEDULED_TASK)):
        services.ticket_update(ticket=ticket, status="closed")
    Ticket.objects.filter(pk=ticket.pk).update(
        people_in_the_loop=[{"email": "bob@example.com", "name": "Bob"}]
    )
    with acting_as(Actor(type=EMAIL_MESSAGE, email="Bob@Example.com")):
        services.ticket_update(
            ticket=ticket, status="open", message={"text": "Still broken", "richTextHtml": "<p>Still broken</p>"},
            author_type="client",
        )  # fmt: skip
    events = _events(owner, ticket.pk)
    # then
    closed, reply, reopened = events[1], events[2], events[3]
    assert closed["author"] == {"ID": None, "name": "System", "type": "system"}
    assert closed["source"] == {"type": "system", "detailedSource": "scheduledTask"}
    assert reply["author"] == {"ID": None, "name": "Bob", "type": "client"}
    assert reply["source"] == {"type": "email", "detailedSource": "emailMessage"}
    assert reply["message"]["richTextHtml"] == "<p>Still broken</p>"
    assert reopened["status"] == {"old": "closed", "new": "open"} and reopened["author"]["name"] == "Bob"


def test_a_rating_is_an_event_and_the_tickets_rating(owner):
    ticket = TicketFactory(license=owner.license)
    # when
    services.ticket_rate(ticket=ticket, score="good", comment="Quick!")
    # then
    doc = owner.client.get(f"/v1/tickets/{ticket.pk}").json()
    [rating] = _by_type(doc["events"], "rating")
    assert (
        rating["rating"]
        == doc["rating"]
        == {"score": "good", "comment": "Quick!", "ratedAt": doc["rating"]["ratedAt"]}
    )
    assert rating["author"]["type"] == "system"


def test_a_bad_rating_is_refused_and_writes_nothing(owner):
    from helpdesk.errors import DomainError

    ticket = TicketFactory(license=owner.license)
    with pytest.raises(DomainError):
        services.ticket_rate(ticket=ticket, score="great")
    assert not TicketEvent.objects.filter(ticket=ticket, type="rating").exists()


def test_delivery_status_is_one_entry_per_recipient(owner):
    doc = _create(owner)
    message = Message.objects.get(ticket_id=doc["ID"])
    # when
    services.message_delivery_record(message_id=message.pk, recipient="ann@example.com", status="queued")
    services.message_delivery_record(message_id=message.pk, recipient="cc@example.com", status="queued")
    services.message_delivery_record(message_id=message.pk, recipient="ann@example.com", status="sent")
    # then
    [event] = _events(owner, doc["ID"])
    assert [(d["recipient"], d["status"]) for d in event["deliveryStatus"]] == [
        ("cc@example.com", "queued"),
        ("ann@example.com", "sent"),
    ]
    assert event["deliveryStatus"][1]["date"].endswith("Z")
    with pytest.raises(ValueError):
        services.message_delivery_record(message_id=message.pk, recipient="x@example.com", status="lost")


def test_message_created_is_sent_inside_the_transaction_with_the_ticket(owner):
    received = []

    def receiver(sender, message, ticket, created_ticket, **kwargs):
        received.append((message.text, ticket.pk, created_ticket, connection.in_atomic_block))

    message_created.connect(receiver)
    try:
        ticket = services.ticket_create(
            license=owner.license,
            subject="s",
            requester={"email": "a@example.com"},
            message={"text": "first"},
        )
        updated = services.ticket_update(ticket=ticket, message={"text": "second"})
        services.ticket_update(ticket=ticket, status="pending")  # no message: no signal
    finally:
        message_created.disconnect(receiver)
    assert received == [("first", ticket.pk, True, True), ("second", ticket.pk, False, True)]
    assert ticket.last_added_message.text == "first" and updated.last_added_message.text == "second"


def test_a_failed_write_leaves_no_event(owner):
    ticket = TicketFactory(license=owner.license)
    foreign_tag = TagFactory()
    before = TicketEvent.objects.filter(ticket=ticket).count()
    with pytest.raises(Exception):  # noqa: B017 - the service refuses another license's tag
        services.ticket_update(ticket=ticket, status="pending", tags=[foreign_tag])
    assert TicketEvent.objects.filter(ticket=ticket).count() == before


# --- search -------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _counted():
    # (CaptureQueriesContext cannot span a request: request_started resets the query log)
    statements = []

    def wrapper(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield statements


def test_search_leaves_events_out_unless_asked(owner):
    for _ in range(3):
        _patch(owner, _create(owner)["ID"], {"message": {"text": "more"}})
    # when
    plain = owner.client.get("/v1/tickets")
    with _counted() as without:
        owner.client.get("/v1/tickets", {"eventsScope": "none"})
    with _counted() as with_events:
        full = owner.client.get("/v1/tickets", {"eventsScope": "all"})
    # then
    assert plain.status_code == full.status_code == 200
    assert all("events" not in doc for doc in plain.json())
    docs = full.json()
    assert len(docs) == 3
    for doc in docs:
        assert [e["message"]["text"] for e in doc["events"]] == ["Where is my order?", "more"]
        assert doc["events"] == _events(owner, doc["ID"])
    assert len(with_events) == len(without) + 1  # the page's events in one query
    assert {k: v for k, v in docs[0].items() if k != "events"} == plain.json()[0]


def test_a_bad_events_scope_is_400(owner):
    response = owner.client.get("/v1/tickets", {"eventsScope": "some"})
    assert response.status_code == 400
    assert "eventsScope" in response.json()["details"]


def test_events_scope_all_keeps_the_team_inbox_count(owner):
    _create(owner)
    response = owner.client.get(
        "/v1/tickets", {"teamIDs[]": str(owner.license.default_team_id), "eventsScope": "all"}
    )
    assert response.status_code == 200 and response["X-Total-Results"] == "1"
    assert len(response.json()[0]["events"]) == 1


def test_another_license_never_sees_the_events(owner, outsider):
    ticket_id = _create(owner)["ID"]
    assert outsider.client.get(f"/v1/tickets/{ticket_id}").status_code == 404
    assert outsider.client.get("/v1/tickets", {"eventsScope": "all"}).json() == []


def test_the_migration_gives_old_messages_their_event(owner):
    import importlib

    backfill = importlib.import_module("tickets.migrations.0009_ticket_events").BACKFILL
    ticket = TicketFactory(license=owner.license, requester={"email": "ann@example.com", "name": "Ann"})
    TicketEvent.objects.filter(ticket=ticket).delete()  # as before the migration
    old = Message.objects.get(ticket=ticket)
    with connection.cursor() as cursor:
        cursor.execute(backfill)
    [event] = _events(owner, ticket.pk)
    assert event["ID"] == str(old.pk) and event["type"] == "message"
    assert event["author"] == {"ID": None, "name": "Ann", "type": "client"}
    assert event["source"] == {"type": "system", "detailedSource": "migration"}
    assert event["message"]["text"] == old.text


# --- the admin's conversation ------------------------------------------------------------------------------


def test_the_admin_page_shows_the_thread_as_a_conversation(staff_owner, owner):
    # given: a customer's message, an agent's reply that solves it, a private note, a tag
    ticket = TicketFactory(
        license=owner.license,
        requester={"email": "ann@example.com", "name": "Ann Client"},
        text="<b>Help</b> me",
    )
    tag = TagFactory(license=owner.license, name="vip")
    _patch(owner, ticket.pk, {"message": {"text": "Fixed it.\nBye"}, "status": "solved"})
    _patch(owner, ticket.pk, {"message": {"text": "between us", "isPrivate": True}, "tagIDs": [str(tag.pk)]})
    # when
    page = staff_owner.get(f"{ADMIN_URL}{ticket.pk}/change/").content.decode()
    # then: who, what, in order, escaped; the changes inline
    thread = page[page.index("helpdesk-conversation") :]
    order = [thread.index(s) for s in ("Ann Client", "&lt;b&gt;Help&lt;/b&gt; me", owner.agent.name, "Fixed it.<br>Bye",
                                        "status: open → solved", "private note", "between us", "tags: +vip")]  # fmt: skip
    assert order == sorted(order)
    assert "<b>Help</b>" not in thread


def test_the_history_keeps_a_deleted_agents_id_and_name(owner):
    from accounts import services as account_services

    helper = AgentFactory(license=owner.license, name="Leaving Agent")
    ticket = TicketFactory(license=owner.license)
    services.ticket_update(ticket=ticket, author_agent=helper, message={"text": "handled"}, status="solved")
    helper_id = str(helper.pk)
    # when
    account_services.agent_delete(agent=helper)
    # then
    events = _events(owner, ticket.pk)
    assert [e["author"] for e in events[1:]] == [
        {"ID": helper_id, "name": "Leaving Agent", "type": "agent"}
    ] * 2
    assert Message.objects.get(ticket=ticket, text="handled").author_agent is None  # the message's link goes


def test_a_tickets_history_and_the_purge_use_the_license_led_index(db):
    # The single read, eventsScope=all and the purge's batch delete all ask (license, ticket IN ...).
    with connection.cursor() as cursor:
        indexes = connection.introspection.get_constraints(cursor, TicketEvent._meta.db_table)
    assert indexes["event_lic_ticket_created"]["columns"] == ["license_id", "ticket_id", "created_at"]
    assert indexes["event_message"]["columns"] == ["message_id"]


def test_a_private_message_by_a_client_author_is_refused(owner):
    # given
    ticket_id = _create(owner)["ID"]
    # when
    response = owner.client.patch(
        f"/v1/tickets/{ticket_id}",
        {"message": {"text": "psst", "isPrivate": True}, "author": {"type": "client"}},
        format="json",
    )
    # then: a 400 naming the field, and nothing was added
    assert response.status_code == 400
    assert response.json()["details"] == {"message": {"isPrivate": ["A client's message cannot be private."]}}
    assert len(owner.client.get(f"/v1/tickets/{ticket_id}").json()["events"]) == 1
