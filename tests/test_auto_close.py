"""Solved tickets close by themselves AUTO_CLOSE_SOLVED_DAYS after their status changed, from beat's task, batch by
batch: a `status` event by the system for each, nothing else touched, and a run killed mid-way loses nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
import time_machine

from tests.factories import TicketFactory
from tickets import auto_close, services
from tickets.models import Ticket, TicketEvent
from tickets.tasks import close_solved_tickets

NOW = datetime(2026, 5, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


def _solved(license, age: timedelta, **fields):
    return TicketFactory(license=license, status="solved", status_changed_at=NOW - age, **fields)


def _status(ticket) -> str:
    return Ticket.objects.get(pk=ticket.pk).status


@pytest.mark.django_db
def test_a_ticket_solved_seven_days_ago_closes_and_not_a_second_before(license, frozen):
    due = _solved(license, timedelta(days=7))
    early = _solved(license, timedelta(days=7) - timedelta(seconds=1))
    assert close_solved_tickets() == 1
    assert (_status(due), _status(early)) == ("closed", "solved")
    event = TicketEvent.objects.get(ticket=due, type="status")
    assert (event.author_type, event.source_type) == ("system", "system")
    assert event.payload == {"old": "solved", "new": "closed"}
    assert Ticket.objects.get(pk=due.pk).status_changed_at == NOW


@pytest.mark.django_db
def test_only_solved_tickets_of_the_tickets_silo_close(license, frozen):
    old = timedelta(days=30)
    others = [
        TicketFactory(license=license, status=status, status_changed_at=NOW - old)
        for status in ("open", "pending", "onhold")
    ]
    archived = _solved(license, old, silo="archive")
    spam = _solved(license, old, silo="spam")
    assert close_solved_tickets() == 0
    assert [_status(t) for t in others] == ["open", "pending", "onhold"]
    assert (_status(archived), _status(spam)) == ("solved", "solved")


@pytest.mark.django_db
def test_the_number_of_days_is_configurable(license, frozen, settings):
    settings.AUTO_CLOSE_SOLVED_DAYS = 2
    ticket = _solved(license, timedelta(days=2))
    assert close_solved_tickets() == 1 and _status(ticket) == "closed"


@pytest.mark.django_db
def test_batches_and_a_run_killed_mid_way(license, frozen):
    tickets = [_solved(license, timedelta(days=8, minutes=n)) for n in range(5)]
    real_update, calls = services.ticket_update, []

    def dies_on_the_third(**kwargs):
        calls.append(kwargs["ticket"].pk)
        if len(calls) == 3:
            raise RuntimeError("killed")
        return real_update(**kwargs)

    with (
        mock.patch.object(services, "ticket_update", side_effect=dies_on_the_third),
        pytest.raises(RuntimeError),
    ):
        auto_close.close_solved(batch_size=2)
    # the first batch (the two oldest) committed; the second rolled back whole
    oldest_first = list(reversed(tickets))
    assert [_status(t) for t in oldest_first] == ["closed", "closed", "solved", "solved", "solved"]
    assert TicketEvent.objects.filter(ticket__in=tickets, type="status").count() == 2
    # the next run finishes the job, each ticket closed once
    assert auto_close.close_solved(batch_size=2) == 3
    assert {_status(t) for t in tickets} == {"closed"}
    assert TicketEvent.objects.filter(ticket__in=tickets, type="status").count() == 5


@pytest.mark.django_db
def test_the_setting_must_be_at_least_one_day(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.AUTO_CLOSE_SOLVED_DAYS = 0
    with pytest.raises(ImproperlyConfigured):
        auto_close.close_solved()


def test_beat_runs_the_task_hourly():
    from django.conf import settings

    entry = settings.CELERY_BEAT_SCHEDULE["close-solved-tickets"]
    assert entry["task"] == "tickets.tasks.close_solved_tickets"
