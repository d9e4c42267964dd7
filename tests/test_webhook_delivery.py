"""Webhook deliveries (issue 18): changes write outbox rows in their transaction; a real receiver gets them
signed; failures are retried on a schedule, then the delivery fails, the webhook turns failing and the owners
are e-mailed once; the guard holds at delivery time; attempts are listed and can be redelivered."""

import json
import socket
from datetime import timedelta

import pytest
import time_machine
from django.db import transaction
from django.utils import timezone

from templates_app.models import OutboundMessage
from tests.webhook_helpers import Receiver, verify
from tickets import services
from tickets.webhooks import delivery as delivery_module
from tickets.webhooks.models import Webhook, WebhookDelivery


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture
def hook(owner, receiver):
    def make(event_type="tickets.create", **body):
        response = owner.client.post(
            "/v1/webhooks",
            {"name": event_type, "url": receiver.url, "eventType": event_type} | body,
            format="json",
        )
        assert response.status_code == 201, response.content
        return response.json()

    return make


def _create_ticket(persona, callbacks, **extra):
    body = {"subject": "Order lost", "requester": {"email": "ann@example.com", "name": "Ann"},
            "message": {"text": "Where is my order?"}} | extra  # fmt: skip
    with callbacks(execute=True):
        response = persona.client.post("/v1/tickets", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _bodies(receiver):
    return [json.loads(item.body) for item in receiver.received]


def test_a_new_ticket_is_delivered_signed_to_a_real_receiver(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    # given a webhook on tickets.create
    created_hook = hook("tickets.create")
    # when a ticket is created through the API
    ticket = _create_ticket(owner, django_capture_on_commit_callbacks)
    # then the receiver got one POST whose signature verifies with the secret shown at create
    [received] = receiver.received
    assert received.path == "/hook"
    assert verify(created_hook["secret"], received.headers, received.body)
    assert not verify("another-secret-000", received.headers, received.body)
    body = json.loads(received.body)
    assert body["eventType"] == "tickets.create"
    assert body["payload"]["ticket"]["ID"] == ticket["ID"]
    assert body["payload"]["ticket"]["subject"] == "Order lost"
    assert abs(int(received.headers["X-Webhook-Timestamp"]) - timezone.now().timestamp()) < 60
    assert received.headers["User-Agent"].startswith("HelpDesk-Webhooks/")
    assert received.headers["Content-Type"] == "application/json"
    # and the delivery is recorded as succeeded, under the ID the receiver saw
    row = WebhookDelivery.objects.get()
    assert str(row.pk) == received.headers["X-Webhook-ID"]
    assert (row.status, row.attempts, row.response_code) == ("succeeded", 1, 200)
    assert row.response_body.startswith("thanks ") and len(row.response_body) == 1024
    listed = owner.client.get(f"/v1/webhooks/{created_hook['ID']}/deliveries").json()
    assert [(d["ID"], d["status"], d["responseCode"], d["attempts"]) for d in listed] == [
        (str(row.pk), "succeeded", 200, 1)
    ]
    assert listed[0]["durationMs"] >= 0 and listed[0]["eventType"] == "tickets.create"


def test_ticket_updates_status_changes_and_events(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    for event_type in ("tickets.update", "tickets.statusChange", "tickets.events.status",
                       "tickets.events.message", "tickets.events.priority"):  # fmt: skip
        hook(event_type)
    ticket = _create_ticket(owner, django_capture_on_commit_callbacks)
    # the first message of a new ticket is a message event (no update, no status change)
    assert [b["eventType"] for b in _bodies(receiver)] == ["tickets.events.message"]
    receiver.received.clear()
    # a status change with a reply
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.patch(
            f"/v1/tickets/{ticket['ID']}",
            {"status": "pending", "message": {"text": "On its way"}},
            format="json",
        )
    assert response.status_code == 200, response.content
    bodies = {b["eventType"]: b["payload"] for b in _bodies(receiver)}
    assert set(bodies) == {
        "tickets.update",
        "tickets.statusChange",
        "tickets.events.status",
        "tickets.events.message",
    }
    assert bodies["tickets.update"]["ticket"]["status"] == "pending"
    assert bodies["tickets.events.status"]["event"]["type"] == "status"
    assert bodies["tickets.events.status"]["event"]["status"] == {"old": "open", "new": "pending"}
    assert bodies["tickets.statusChange"]["event"] == bodies["tickets.events.status"]["event"]
    assert bodies["tickets.events.message"]["ticket"]["ID"] == ticket["ID"]
    # an update that records no event sends nothing
    receiver.received.clear()
    with django_capture_on_commit_callbacks(execute=True):
        owner.client.patch(f"/v1/tickets/{ticket['ID']}", {"status": "pending"}, format="json")
    assert receiver.received == []


def test_agents_and_teams_changes_are_delivered_once_per_change_with_their_final_state(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    for event_type in ("teams.create", "agents.update", "teams.delete"):
        hook(event_type)
    with django_capture_on_commit_callbacks(execute=True):
        team = owner.client.post("/v1/teams", {"name": "Billing"}, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.patch(
            f"/v1/agents/{owner.agent.pk}", {"name": "Olive", "teamIDs": [team["ID"]]}, format="json"
        )
    assert response.status_code == 200, response.content
    with django_capture_on_commit_callbacks(execute=True):
        assert owner.client.delete(f"/v1/teams/{team['ID']}").status_code == 204
    bodies = _bodies(receiver)
    assert [b["eventType"] for b in bodies] == ["teams.create", "agents.update", "teams.delete"]
    assert bodies[0]["payload"]["ID"] == team["ID"] and bodies[0]["payload"]["name"] == "Billing"
    # one update for a PATCH that saved the row and then set its teams, with the teams already set
    assert bodies[1]["payload"]["name"] == "Olive" and bodies[1]["payload"]["teamIDs"] == [team["ID"]]
    assert bodies[2]["payload"]["ID"] == team["ID"]


def test_a_subscription_is_delivered_as_the_api_shows_it(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    # given a webhook on subscriptions.create (a resource billing registers: billing/apps.py)
    hook("subscriptions.create")
    # when the owner subscribes
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(
            "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
        )
    assert response.status_code == 201, response.content
    # then the receiver gets the subscription's document, as the API answered it
    [body] = _bodies(receiver)
    assert body["eventType"] == "subscriptions.create"
    assert body["payload"] == response.json()


def test_a_rolled_back_change_sends_nothing(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    hook("tickets.create")

    class Boom(Exception):
        pass

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Boom),
        transaction.atomic(),
    ):
        services.ticket_create(
            license=owner.license,
            subject="x",
            requester={"email": "a@example.com"},
            message={"text": "hi"},
        )
        assert WebhookDelivery.objects.count() == 1  # written with the change ...
        raise Boom
    assert WebhookDelivery.objects.count() == 0  # ... and gone with it
    assert callbacks == [] and receiver.received == []


def test_an_inactive_webhook_gets_nothing(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    hook("tickets.create", active=False)
    _create_ticket(owner, django_capture_on_commit_callbacks)
    assert receiver.received == [] and WebhookDelivery.objects.count() == 0


def test_nothing_is_lost_when_the_broker_is_down(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks, monkeypatch
):
    hook("tickets.create")
    from tickets.tasks import deliver_webhook

    def broker_down(*args, **kwargs):
        raise ConnectionError("redis is away")

    # given the enqueue after commit fails
    with monkeypatch.context() as patched:
        patched.setattr(deliver_webhook, "delay", broker_down)
        _create_ticket(owner, django_capture_on_commit_callbacks)
    assert receiver.received == [] and WebhookDelivery.objects.get().status == "pending"
    # when the sweeper runs (beat) once the broker is back
    assert delivery_module.sweep() == 1
    # then the event is delivered, and a second sweep has nothing left to do
    assert len(receiver.received) == 1 and WebhookDelivery.objects.get().status == "succeeded"
    assert delivery_module.sweep() == 0


def test_a_failing_receiver_gets_retries_then_the_webhook_fails_and_owners_are_told_once(
    owner, agent, hook, receiver, eager_tasks, django_capture_on_commit_callbacks, settings
):
    # Attempts after 1 min and 5 min; the third wait (25 h) would end past the 24 h window, so 3 attempts.
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [60, 300, 90000]
    created_hook = hook("tickets.create")
    receiver.always = 500
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        _create_ticket(owner, django_capture_on_commit_callbacks)
        row = WebhookDelivery.objects.get()
        assert (row.status, row.attempts, row.response_code) == ("pending", 1, 500)
        assert row.next_attempt_at == start + timedelta(seconds=60)
        assert row.response_body.startswith("broken ") and row.error == "The receiver answered 500."
        assert delivery_module.sweep() == 0  # not due yet
        assert len(receiver.received) == 1
    with time_machine.travel(start + timedelta(seconds=61), tick=False):
        assert delivery_module.sweep() == 1
        row.refresh_from_db()
        assert (row.status, row.attempts) == ("pending", 2)
        assert row.next_attempt_at == start + timedelta(seconds=61 + 300)
    with (
        time_machine.travel(start + timedelta(seconds=400), tick=False),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert delivery_module.sweep() == 1
    row.refresh_from_db()
    assert (row.status, row.attempts, row.next_attempt_at) == ("failed", 3, None)
    assert len(receiver.received) == 3
    assert all(verify(created_hook["secret"], r.headers, r.body, tolerance=3600) for r in receiver.received)
    assert len({r.headers["X-Webhook-ID"] for r in receiver.received}) == 1  # one delivery, three attempts
    assert Webhook.objects.get().status == "failing"
    assert owner.client.get(f"/v1/webhooks/{created_hook['ID']}").json()["status"] == "failing"
    # the owner (not the normal agent) is e-mailed
    mails = list(OutboundMessage.objects.filter(kind=OutboundMessage.KIND_WEBHOOK_FAILING))
    assert [m.to for m in mails] == [owner.agent.email]
    assert "tickets.create" in mails[0].text and receiver.url in mails[0].text
    # a second delivery that fails does not e-mail again
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = []
    _create_ticket(owner, django_capture_on_commit_callbacks)
    assert WebhookDelivery.objects.filter(status="failed").count() == 2
    assert OutboundMessage.objects.filter(kind=OutboundMessage.KIND_WEBHOOK_FAILING).count() == 1
    # once the receiver works again, a redelivery succeeds and the webhook is active again
    receiver.always = None
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(f"/v1/webhooks/{created_hook['ID']}/deliveries/{row.pk}/redeliver")
    assert response.status_code == 202, response.content
    again = WebhookDelivery.objects.get(pk=response.json()["ID"])
    assert (again.status, again.redelivery_of_id, again.body) == ("succeeded", row.pk, row.body)
    assert receiver.received[-1].body == row.body.encode()
    assert Webhook.objects.get().status == "active"
    listed = owner.client.get(f"/v1/webhooks/{created_hook['ID']}/deliveries").json()
    assert [d["status"] for d in listed] == ["succeeded", "failed", "failed"]  # newest first
    assert listed[2]["error"] == "The receiver answered 500." and listed[2]["attempts"] == 3


def test_a_timeout_is_a_failed_attempt(
    owner, hook, receiver, eager_tasks, django_capture_on_commit_callbacks, settings
):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    hook("tickets.create")
    # a receiver that accepts the connection and never answers
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    try:
        Webhook.objects.update(url=f"http://127.0.0.1:{silent.getsockname()[1]}/hook")
        _create_ticket(owner, django_capture_on_commit_callbacks)
    finally:
        silent.close()
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.response_code) == ("pending", 1, None)
    assert row.error == "No response within 0.5 seconds." and row.next_attempt_at is not None


def test_a_name_that_turns_private_after_the_check_is_refused_at_delivery(
    owner, receiver, eager_tasks, django_capture_on_commit_callbacks, settings, monkeypatch
):
    # given a webhook whose name resolved to a public address when it was created
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    answers = ["93.184.215.14"]
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, port, *a, **k: [(socket.AF_INET, 1, 6, "", (answers[0], port))]
    )
    response = owner.client.post(
        "/v1/webhooks",
        {"name": "x", "url": f"http://hooks.example.com:{receiver.port}/hook", "eventType": "tickets.create"},
        format="json",
    )
    assert response.status_code == 201, response.content
    # when the name now resolves to loopback (DNS rebinding) and an event is delivered
    answers[0] = "127.0.0.1"
    _create_ticket(owner, django_capture_on_commit_callbacks)
    # then nothing reached the host's network
    assert receiver.received == []
    row = WebhookDelivery.objects.get()
    assert row.status == "pending" and row.attempts == 1 and row.response_code is None
    assert "127.0.0.1" in row.error and "non-public" in row.error


def test_the_request_goes_to_the_checked_address_with_the_urls_host(
    owner, receiver, eager_tasks, django_capture_on_commit_callbacks, monkeypatch
):
    # the name resolves once, at the check; the connection uses that address and names the host
    calls = []

    def resolver(host, port, *args, **kwargs):
        calls.append(host)
        return [(socket.AF_INET, 1, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    response = owner.client.post(
        "/v1/webhooks",
        {"name": "x", "url": f"http://hooks.example.com:{receiver.port}/hook", "eventType": "tickets.create"},
        format="json",
    )
    assert response.status_code == 201
    _create_ticket(owner, django_capture_on_commit_callbacks)
    [received] = receiver.received
    assert received.headers["Host"] == f"hooks.example.com:{receiver.port}"
    assert [host for host in calls if not host[0].isdigit()] == ["hooks.example.com"]  # resolved once


def test_a_delivery_is_sent_once_when_queued_twice(owner, hook, receiver, django_capture_on_commit_callbacks):
    hook("tickets.create")
    _create_ticket(owner, django_capture_on_commit_callbacks)  # not eager: nothing sent yet
    row = WebhookDelivery.objects.get()
    delivery_module.attempt(delivery_id=row.pk)
    delivery_module.attempt(delivery_id=row.pk)
    assert len(receiver.received) == 1


def test_redeliver_of_an_unknown_or_foreign_delivery_is_404(
    owner, outsider, hook, django_capture_on_commit_callbacks
):
    first, second = hook("tickets.create"), hook("tickets.update")
    _create_ticket(owner, django_capture_on_commit_callbacks)
    row = WebhookDelivery.objects.get()
    assert owner.client.post(f"/v1/webhooks/{second['ID']}/deliveries/{row.pk}/redeliver").status_code == 404
    assert owner.client.post(f"/v1/webhooks/{first['ID']}/deliveries/nope/redeliver").status_code == 404
    assert (
        outsider.client.post(f"/v1/webhooks/{first['ID']}/deliveries/{row.pk}/redeliver").status_code == 404
    )
    assert WebhookDelivery.objects.count() == 1


def test_the_sweeper_forgets_finished_deliveries_after_30_days(
    owner, hook, django_capture_on_commit_callbacks
):
    hook("tickets.create")
    _create_ticket(owner, django_capture_on_commit_callbacks)
    _create_ticket(owner, django_capture_on_commit_callbacks)
    old, pending = WebhookDelivery.objects.order_by("created_at")
    WebhookDelivery.objects.filter(pk=old.pk).update(
        status="succeeded", created_at=timezone.now() - timedelta(days=31)
    )
    WebhookDelivery.objects.filter(pk=pending.pk).update(created_at=timezone.now() - timedelta(days=31))
    delivery_module.sweep()
    assert list(WebhookDelivery.objects.values_list("pk", flat=True)) == [pending.pk]


def _ticket(owner):
    services.ticket_create(
        license=owner.license, subject="S", requester={"email": "a@example.com"}, message={"text": "T"},
        author_agent=owner.agent,
    )  # fmt: skip


@pytest.mark.django_db(
    transaction=True
)  # the attempt is recorded in a transaction of its own, as in a worker
def test_a_lost_attempt_record_is_retried_and_never_posts_again(owner, hook, receiver, monkeypatch):
    from django.db import OperationalError

    # given a delivery, and a database that refuses the first write of its outcome
    hook("tickets.create")
    _ticket(owner)
    row = WebhookDelivery.objects.get()
    real_finish, calls = delivery_module._finish, []

    def locked_once(delivery, status, *, error):
        calls.append(status)
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return real_finish(delivery, status, error=error)

    monkeypatch.setattr(delivery_module, "_finish", locked_once)
    monkeypatch.setattr(delivery_module.time, "sleep", lambda seconds: None)
    # when it is attempted, then attempted again (a task queued twice) and swept
    delivery_module.attempt(delivery_id=row.pk)
    delivery_module.attempt(delivery_id=row.pk)
    delivery_module.sweep()
    # then the receiver got one POST and the delivery says so
    assert len(receiver.received) == 1
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("succeeded", 1)


def test_a_claimed_delivery_is_posted_again_only_after_its_claim_expires(owner, hook, receiver):
    # given a worker claimed a delivery and died before recording the receiver's answer
    hook("tickets.create")
    _ticket(owner)
    row = WebhookDelivery.objects.get()
    assert delivery_module._claim(row.pk) is not None
    # when the task runs again within the claim, nothing is sent
    delivery_module.attempt(delivery_id=row.pk)
    assert receiver.received == []
    # then after the claim expired it is sent, once
    with time_machine.travel(timezone.now() + delivery_module.CLAIM + timedelta(seconds=1)):
        delivery_module.attempt(delivery_id=row.pk)
        delivery_module.attempt(delivery_id=row.pk)
    assert len(receiver.received) == 1
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("succeeded", 2)
