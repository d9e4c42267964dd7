"""Celery tasks of tickets: thin, each calls one service."""

from celery import shared_task

from helpdesk.context import SCHEDULED_TASK, Actor, acting_as
from tickets import purge


@shared_task(ignore_result=True)
def purge_expired_tickets() -> dict:
    """Beat's hourly purge of the spam and trash silos (see CELERY_BEAT_SCHEDULE)."""
    with acting_as(Actor(type=SCHEDULED_TASK)):
        return purge.purge_expired(trigger="schedule").summary()


@shared_task(ignore_result=True, acks_late=True)
def deliver_webhook(delivery_id: str) -> None:
    """One attempt of a webhook delivery (retries are rows the sweeper queues again, not task retries)."""
    from tickets.webhooks import delivery

    delivery.attempt(delivery_id=delivery_id)


@shared_task(ignore_result=True)
def sweep_webhook_deliveries() -> int:
    """Beat, every 30 s: queue the pending webhook deliveries that are due."""
    from tickets.webhooks import delivery

    return delivery.sweep()


@shared_task(ignore_result=True)
def close_solved_tickets() -> int:
    """Beat's hourly closing of tickets solved AUTO_CLOSE_SOLVED_DAYS ago (see CELERY_BEAT_SCHEDULE)."""
    from tickets import auto_close

    with acting_as(Actor(type=SCHEDULED_TASK)):
        return auto_close.close_solved()


@shared_task(ignore_result=True)
def run_time_rules() -> int:
    """Beat, every minute: the time rules (hoursSince) on the tickets whose time has come."""
    from tickets.rules import sweep

    return sweep.run_time_rules()


@shared_task(ignore_result=True)
def record_sla_breaches() -> int:
    """Beat, every minute: the SLA clocks that ran out, each breach recorded once."""
    from tickets.sla import sweep

    return sweep.record_breaches()
