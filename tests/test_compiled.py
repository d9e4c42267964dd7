"""helpdesk.compiled: a read compiled once gives the rows the ORM gives, and leans on the ORM's compiler only as
far as a test here notices (its `as_sql`, `select` and `get_converters`)."""

import uuid

import pytest
from django.db import connection
from django.db.models.signals import post_save

from helpdesk.compiled import Compiled, Insert
from tests.factories import TicketFactory
from tickets import events_output
from tickets.models import Ticket, TicketEvent
from tickets.reports import wiring
from tickets.reports.models import TicketMetrics


def _tickets(license_id, subject):
    return (
        Ticket.objects.filter(license_id=license_id, subject=subject)
        .order_by("pk")
        .values_list("id", "subject")
    )


def test_a_compiled_read_gives_the_orms_rows(license):
    # given
    tickets = [TicketFactory(license=license, subject=subject) for subject in ("Lost", "Lost", "Broken")]
    read = Compiled(_tickets, int, str)
    # when
    rows = [read.rows(license.pk, subject) for subject in ("Lost", "Broken", "Missing")]
    # then
    assert rows == [list(_tickets(license.pk, subject)) for subject in ("Lost", "Broken", "Missing")]
    assert [len(each) for each in rows] == [2, 1, 0] and len(tickets) == 3
    # PostgreSQL runs its own statement; SQLite's rows need converting (UUIDs): the ORM reads them
    assert (read.statement(license.pk, "Lost") is not None) == (connection.vendor == "postgresql")


def test_a_ticket_events_read_is_the_orms(license):
    ticket = TicketFactory(license=license)
    one = events_output.events_by_ticket(license.pk, [ticket.pk])[ticket.pk]
    assert one == events_output.events_by_ticket(license.pk, [ticket.pk, ticket.pk])[ticket.pk]
    assert one[0]["type"] == "message"


@pytest.mark.postgres
def test_a_stand_in_missing_from_the_statement_is_refused(db):
    read = Compiled(
        lambda license_id, subject: Ticket.objects.filter(license_id=license_id).values_list("id"), int, str
    )
    with pytest.raises(ValueError, match="no parameter"):
        read.statement(1, "x")


def test_the_queued_delivery_statement_is_the_orms(db):
    """tickets.services sends the UPDATE that `filter(pk=...).update(delivery_status=...)` compiles."""
    import uuid

    from django.db.models.sql import UpdateQuery

    from tickets.models import Message
    from tickets.services import _QUEUED_SQL

    query = Message.objects.filter(pk=uuid.uuid4()).query.chain(UpdateQuery)
    query.add_update_values({"delivery_status": []})
    assert query.get_compiler(connection=connection).as_sql()[0] == _QUEUED_SQL


@pytest.mark.postgres
def test_the_generations_raise_is_the_orms(db):
    """tickets.totals.writing sends the UPDATE that the ORM compiles for the raise, with the same parameters."""
    from django.db.models import F, Value
    from django.db.models.functions import Greatest
    from django.db.models.sql import UpdateQuery

    from tickets.models import SearchGeneration
    from tickets.totals.writing import RAISE_SQL

    query = SearchGeneration.objects.filter(pk=7).query.chain(UpdateQuery)
    query.add_update_values({"value": Greatest(F("value") + 1, Value(9))})
    assert query.get_compiler(connection=connection).as_sql() == (RAISE_SQL, (1, 9, 7))


def _events(ticket_id):
    return list(
        TicketEvent.objects.filter(ticket_id=ticket_id, type__in=("status", "tags"))
        .order_by("position", "type")
        .values(
            *(f.attname for f in TicketEvent._meta.concrete_fields if f.attname not in ("id", "ticket_id"))
        )
    )


def _new_events(license, ticket):
    return [
        TicketEvent(
            license=license, ticket=ticket, type="status", position=0, author_type="system",
            source_type="api", payload={"old": "open", "new": "pending"},
        ),
        TicketEvent(
            license=license, ticket=ticket, type="tags", position=1, author_type="system",
            source_type="api", payload={"added": ["x"], "removed": []},
        ),
    ]  # fmt: skip


def test_an_insert_writes_the_rows_bulk_create_writes(license):
    # given
    by_orm, by_insert = TicketFactory(license=license), TicketFactory(license=license)
    orm, inserted = _new_events(license, by_orm), _new_events(license, by_insert)
    for one, other in zip(orm, inserted, strict=True):
        other.created_at = one.created_at
    TicketEvent.objects.bulk_create(orm)
    # when
    calls = []

    def orm(objs):
        calls.append(objs)
        TicketEvent.objects.bulk_create(objs)

    Insert(TicketEvent).save(inserted, orm)
    # then: the same rows, saved alike; PostgreSQL wrote them itself, SQLite by the ORM
    assert _events(by_insert.pk) == _events(by_orm.pk) and len(_events(by_orm.pk)) == 2
    assert [(e._state.adding, e._state.db) for e in inserted] == [(False, "default")] * 2
    assert calls == ([] if connection.vendor == "postgresql" else [inserted])


def test_an_insert_leaves_a_model_with_save_receivers_to_the_orm(license):
    # given: a receiver of the model's saves (the audit's, one day)
    ticket, seen = TicketFactory(license=license), []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_save.connect(receiver, sender=TicketEvent, dispatch_uid="test_compiled_insert")
    try:
        events = _new_events(license, ticket)
        # when
        Insert(TicketEvent).save(events, lambda objs: [each.save(force_insert=True) for each in objs])
    finally:
        post_save.disconnect(sender=TicketEvent, dispatch_uid="test_compiled_insert")
    # then
    assert seen == events and len(_events(ticket.pk)) == 2


def test_a_tickets_metrics_read_compiled_is_the_orms(license):
    # given
    ticket, without = TicketFactory(license=license), TicketFactory(license=license)
    TicketMetrics.objects.filter(ticket_id__in=[ticket.pk, without.pk]).delete()
    TicketMetrics.objects.create(
        ticket=ticket, license=license, created_at=ticket.created_at, first_response_seconds=1.5,
        first_response_agent_id=uuid.uuid4(), teams="a b", resolved=2, status="open",
    )  # fmt: skip
    # when
    read = wiring._read_metrics(ticket.pk)
    # then: the ORM's row, saved and updatable as the ORM's
    orm = TicketMetrics.objects.get(ticket_id=ticket.pk)
    assert [getattr(read, name) for name in wiring._COLUMNS] == [
        getattr(orm, name) for name in wiring._COLUMNS
    ]
    assert (read._state.adding, read._state.db) == (False, "default")
    assert wiring._read_metrics(without.pk) is None
    assert (wiring._metrics.statement(ticket.pk) is not None) == (connection.vendor == "postgresql")


def test_an_insert_writes_a_row_with_database_defaults_as_the_orm(license):
    """TicketMetrics has `db_default` columns (read back by the ORM's INSERT): given their values, the row is
    written by the Insert on PostgreSQL, the same row as the ORM's."""
    # given
    by_orm, by_insert = TicketFactory(license=license), TicketFactory(license=license)
    TicketMetrics.objects.filter(ticket_id__in=[by_orm.pk, by_insert.pk]).delete()

    def metrics(ticket):
        return TicketMetrics(
            ticket_id=ticket.pk, license_id=license.pk, created_at=by_orm.created_at, source="api",
            status="open", teams="a,b", first_client_message_at=by_orm.created_at,
        )  # fmt: skip

    metrics(by_orm).save(force_insert=True)
    calls, inserted = [], metrics(by_insert)
    # when
    Insert(TicketMetrics).save([inserted], lambda objs: calls.append(objs) or objs[0].save(force_insert=True))
    # then
    columns = [name for name in wiring._COLUMNS if name != "ticket_id"]
    rows = {
        row.pop("ticket_id"): row
        for row in TicketMetrics.objects.filter(ticket_id__in=[by_orm.pk, by_insert.pk]).values(
            "ticket_id", *columns
        )
    }
    assert rows[by_insert.pk] == rows[by_orm.pk] and rows[by_orm.pk]["teams"] == "a,b"
    assert (inserted._state.adding, inserted._state.db) == (False, "default")
    assert calls == ([] if connection.vendor == "postgresql" else [[inserted]])


def test_an_insert_reads_back_an_auto_incremented_key_as_bulk_create(license):
    """A ticket's team links (TicketTeam: an auto-incremented ID): the Insert sets each row's ID, as bulk_create."""
    from tests.factories import TeamFactory
    from tickets.models import TicketTeam

    # given
    ticket, teams, calls = (
        TicketFactory(license=license),
        [TeamFactory(license=license) for _ in range(2)],
        [],
    )
    TicketTeam.objects.filter(ticket=ticket).delete()
    links = [
        TicketTeam(ticket=ticket, team=team, license=license, silo="tickets", status="open") for team in teams
    ]
    # when
    Insert(TicketTeam).save(links, lambda objs: calls.append(objs) or TicketTeam.objects.bulk_create(objs))
    # then
    rows = (
        TicketTeam.objects.filter(ticket=ticket).order_by("pk").values_list("pk", "team_id", "silo", "status")
    )
    assert list(rows) == [(link.pk, link.team_id, "tickets", "open") for link in links]
    assert all(link.pk is not None and not link._state.adding for link in links)
    assert calls == ([] if connection.vendor == "postgresql" else [links])
