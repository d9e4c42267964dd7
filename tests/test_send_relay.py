"""The send relay (templates_app.send_relay): smtp_inbound's acknowledgements published in batches after commit,
and the batch task that delivers each row once."""

import logging

from django.db import transaction

from templates_app import mail, send_relay, tasks
from templates_app.models import OutboundMessage
from templates_app.rendering import Rendered


def _message(license, key):
    return OutboundMessage.objects.create(
        license=license, key=key, kind="test", to=f"{key}@example.com", subject="S", text="T", html="<p>T</p>"
    )


def _published(monkeypatch) -> list:
    published = []
    monkeypatch.setattr(send_relay, "enqueue_now", lambda task, arg: published.append((task, arg)) or True)
    return published


def test_the_rows_handed_over_meanwhile_go_as_one_task(monkeypatch):
    # given a relay that waits a long time after the first row
    published = _published(monkeypatch)
    relay = send_relay.Relay(linger=60)
    relay.start()
    # when three rows are handed over and the relay stops
    for message_id in ("a", "b", "c"):
        relay.add(message_id)
    relay.stop()
    # then one task names all three, published at the stop
    assert published == [(send_relay.SEND_MANY_TASK, ["a", "b", "c"])]


def test_a_lone_row_goes_as_its_own_send_task(monkeypatch):
    published = _published(monkeypatch)
    relay = send_relay.Relay(linger=0.01)
    relay.start()
    relay.add("a")
    relay.stop()
    assert published == [(send_relay.SEND_TASK, "a")]


def test_a_queued_row_reaches_the_relay_only_when_its_transaction_commits(
    license, monkeypatch, django_capture_on_commit_callbacks
):
    # given the process's relay
    published = _published(monkeypatch)
    relay = send_relay.Relay(linger=60)
    relay.start()
    send_relay.install(relay)
    try:
        # when a message is queued in a transaction that rolls back, and one in a transaction that commits
        with transaction.atomic():
            mail.message_queue(
                license=license, kind="test", key="gone", to="a@example.com", subject="s",
                rendered=Rendered(text="t", html="h"),
            )  # fmt: skip
            transaction.set_rollback(True)
        with django_capture_on_commit_callbacks(execute=True):
            kept = mail.message_queue(
                license=license, kind="test", key="kept", to="a@example.com", subject="s",
                rendered=Rendered(text="t", html="h"),
            )  # fmt: skip
    finally:
        send_relay.uninstall(relay)
    # then only the committed row was published (by the relay: after its stop)
    assert published == [(send_relay.SEND_TASK, str(kept.pk))]
    # and with no relay the row's own task is enqueued at once
    published.clear()
    with django_capture_on_commit_callbacks(execute=True):
        alone = mail.message_queue(
            license=license, kind="test", key="alone", to="a@example.com", subject="s",
            rendered=Rendered(text="t", html="h"),
        )  # fmt: skip
    assert published == [(send_relay.SEND_TASK, str(alone.pk))]


def test_a_batch_sends_each_row_once(license, smtp_server):
    # given two rows, one of them already sent by its own task
    first, second = _message(license, "first"), _message(license, "second")
    mail.deliver(message_id=first.pk)
    # when a batch names both (and one of them twice), and the batch is delivered again
    tasks.send_outbound_messages([str(first.pk), str(second.pk), str(second.pk)])
    tasks.send_outbound_messages([str(first.pk), str(second.pk)])
    # then each went out once
    assert sorted(rcpt for rcpts, _ in smtp_server.messages for rcpt in rcpts) == [
        "first@example.com",
        "second@example.com",
    ]
    assert set(OutboundMessage.objects.values_list("status", "attempts")) == {("sent", 1)}


def test_a_temporary_failure_in_a_batch_gets_a_retry_task_of_its_own(license, smtp_server, monkeypatch):
    # given a relay that answers 450 to the first attempt
    smtp_server.refuse = ["450 Mailbox busy, try later"]
    busy, other = _message(license, "busy"), _message(license, "other")
    retried = []
    monkeypatch.setattr(
        tasks.send_outbound_message, "apply_async", lambda args, **options: retried.append((args, options))
    )
    # when a batch names both
    tasks.send_outbound_messages([str(busy.pk), str(other.pk)])
    # then the busy one waits for its first retry (as its own task's would), the other one went out
    assert retried == [((str(busy.pk),), {"countdown": tasks.backoff(0), "retries": 1})]
    busy.refresh_from_db()
    other.refresh_from_db()
    assert busy.status == "pending" and busy.attempts == 1 and "450" in busy.last_error
    assert other.status == "sent"


def test_a_batch_the_broker_refuses_leaves_its_rows_to_the_sweeper(license, monkeypatch, caplog, eager_tasks):
    # given a broker that is down
    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.send_outbound_messages, "apply_async", broker_down)
    rows = [_message(license, "one"), _message(license, "two")]
    # when the relay publishes them
    with caplog.at_level(logging.WARNING):
        assert send_relay.publish([str(row.pk) for row in rows]) is False
    # then it is logged and the rows stay pending, for the sweeper to enqueue again
    assert any("Could not enqueue" in record.getMessage() for record in caplog.records)
    assert set(OutboundMessage.objects.values_list("status", flat=True)) == {"pending"}
