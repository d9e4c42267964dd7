"""Celery tasks of templates_app: thin, they take IDs and call one function."""

import logging

from celery import shared_task

from templates_app import mail

logger = logging.getLogger(__name__)

MAX_RETRIES = 8


def backoff(retries: int) -> int:
    """Seconds before the next try: 30 s, 1 min, 2 min ... capped at one hour."""
    return min(30 * 2**retries, 3600)


@shared_task(bind=True, max_retries=MAX_RETRIES, acks_late=True)
def send_outbound_message(self, message_id: str) -> None:
    try:
        mail.deliver(message_id=message_id)
    except mail.TemporaryFailure as exc:
        if self.request.retries >= self.max_retries:
            mail.give_up(message_id=message_id)
            return
        raise self.retry(exc=exc, countdown=backoff(self.request.retries)) from exc


@shared_task(ignore_result=True, acks_late=True)
def send_outbound_messages(message_ids: list[str]) -> None:
    """Several stored rows published as one task (templates_app.send_relay): each delivered as
    send_outbound_message delivers it; one whose relay asks to try again later gets a retry task of its own."""
    for message_id in message_ids:
        try:
            mail.deliver(message_id=message_id)
        except mail.TemporaryFailure:
            # its first retry, as send_outbound_message's would be (the row says when: next_attempt_at)
            send_outbound_message.apply_async((message_id,), countdown=backoff(0), retries=1)
        except Exception:
            # a bug, not the relay: deliver() freed the row for the sweeper; the other rows still go
            logger.exception("E-mail %s: delivery failed", message_id)


@shared_task
def requeue_stale_messages() -> int:
    return mail.requeue_stale_messages()


@shared_task(ignore_result=True)
def sweep_outbound_messages() -> int:
    return mail.sweep()


@shared_task(ignore_result=True)
def send_agent_notifications(agent_id: str) -> None:
    from templates_app import notifications

    notifications.digest_send(agent_id=agent_id)


@shared_task(ignore_result=True)
def send_due_notifications() -> int:
    from templates_app import notifications

    return notifications.send_due()


@shared_task(ignore_result=True)
def poll_mailboxes() -> int:
    from templates_app.inbound import imap

    return imap.mailboxes_poll_due()


@shared_task(ignore_result=True, time_limit=600)
def poll_mailbox(mailbox_id: str) -> None:
    # a poll bounds itself (IMAP_POLL_MAX_SECONDS, socket timeouts); time_limit is the backstop, and a poll
    # killed anywhere loses nothing (templates_app/inbound/imap.py)
    from templates_app.inbound import imap

    imap.mailbox_poll(mailbox_id=mailbox_id)
