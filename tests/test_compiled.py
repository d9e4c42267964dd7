"""helpdesk.compiled: a read compiled once gives the rows the ORM gives, and leans on the ORM's compiler only as
far as a test here notices (its `as_sql`, `select` and `get_converters`)."""

import uuid

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models.signals import post_save, pre_save
from django.test.utils import CaptureQueriesContext

from helpdesk.compiled import Compiled, Insert
from tests.factories import TicketFactory
from tickets import events_output, services
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


def test_the_generations_raise_is_the_orms(db):
    """tickets.totals sends the UPDATE that `filter(pk=...).update(value=Greatest(F("value") + 1, ...))`
    compiles, with the same parameters."""
    from django.db.models import F, Value
    from django.db.models.functions import Greatest
    from django.db.models.sql import UpdateQuery

    from tickets.models import SearchGeneration
    from tickets.totals.writing import _RAISE_SQL

    query = SearchGeneration.objects.filter(pk=7).query.chain(UpdateQuery)
    query.add_update_values({"value": Greatest(F("value") + 1, Value(123))})
    sql, params = query.get_compiler(connection=connection).as_sql()
    if connection.vendor == "postgresql":
        assert (sql, list(params)) == (_RAISE_SQL, [1, 123, 7])


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


def _fields(obj) -> dict:
    return {field.attname: getattr(obj, field.attname) for field in type(obj)._meta.concrete_fields}


def test_a_tickets_locked_read_compiled_is_the_orms(license):
    # given: JSON columns (decoded by the compiler's converters) on the ticket and on its license
    ticket = TicketFactory(
        license=license, custom_fields={"a": [1, "x"]}, people_in_the_loop=[{"email": "p@x"}]
    )
    orm = services._locking(ticket.pk, license.pk)
    # when
    with transaction.atomic(), CaptureQueriesContext(connection) as sent:
        locked = services._lock_ticket(Ticket(pk=ticket.pk, license=license))
    # then: the ORM's statement, and the instances its get() builds: the ticket and its license cached
    assert len(sent) == 1
    with transaction.atomic(), CaptureQueriesContext(connection) as by_orm:
        expected = orm.get()
    assert sent[0]["sql"] == by_orm[0]["sql"]
    assert _fields(locked) == _fields(expected) and locked.custom_fields == {"a": [1, "x"]}
    assert _fields(locked.license) == _fields(expected.license)
    assert locked._state.fields_cache.keys() == {"license"}
    assert (locked._state.adding, locked._state.db) == (False, "default")
    assert (services._locked.statement(ticket.pk, license.pk) is not None) == (
        connection.vendor == "postgresql"
    )
    with pytest.raises(Ticket.DoesNotExist), transaction.atomic():
        services._lock_ticket(Ticket(pk=uuid.uuid4(), license=license))


def test_an_update_sends_the_orms_statement_and_signals(license):
    # given: a reply's fields, the tsvector's expression among them, None and JSON values
    ticket = TicketFactory(license=license, custom_fields={"a": 1})
    locked = Ticket.objects.get(pk=ticket.pk)
    locked.status, locked.last_agent_message_at, locked.custom_fields = "pending", None, {"b": [2]}
    also = services._refresh_text(locked)
    fields = [*services._SAVED_ON_UPDATE, *also]
    seen = []

    def receiver(signal, sender, instance, update_fields, **kwargs):
        seen.append((signal, instance, update_fields, kwargs.get("created"), kwargs["using"], kwargs["raw"]))

    for signal in (pre_save, post_save):
        signal.connect(receiver, sender=Ticket, dispatch_uid="test_compiled_update")
    try:
        with CaptureQueriesContext(connection) as by_orm:
            locked.save(update_fields=fields)
        by_orm_seen, seen[:] = list(seen), []
        locked.search_vector = services.search.vector(locked.language, locked.search_text)
        calls = []
        # when
        with CaptureQueriesContext(connection) as sent:
            services._ticket_update.save(
                locked, fields, lambda: calls.append(locked.save(update_fields=fields))
            )
    finally:
        for signal in (pre_save, post_save):
            signal.disconnect(sender=Ticket, dispatch_uid="test_compiled_update")
    # then: the same statement, the same signals; the row as the ORM left it
    # (the totals' receiver of the save raises the generation after it: a time of its own)
    assert sent[0]["sql"] == by_orm[0]["sql"] and sent[0]["sql"].startswith('UPDATE "tickets_ticket" SET')
    assert len(sent) == len(by_orm)
    assert seen == by_orm_seen and [each[0] for each in seen] == [pre_save, post_save]
    assert calls == ([] if connection.vendor == "postgresql" else [None])
    saved = Ticket.objects.get(pk=ticket.pk)
    assert (saved.status, saved.custom_fields, saved.last_agent_message_at) == ("pending", {"b": [2]}, None)
    if connection.vendor == "postgresql":  # a row gone: refused as the ORM refuses it
        with pytest.raises(DatabaseError, match="did not affect any rows"), transaction.atomic():
            services._ticket_update.save(Ticket(pk=uuid.uuid4(), license=license), ["status"], lambda: None)


def test_an_insert_writes_columns_read_back_given_as_plain_values(license):
    # given: the metrics row's `db_default` columns (the ORM reads them back: RETURNING), given their values
    ticket = TicketFactory(license=license)
    TicketMetrics.objects.filter(ticket_id=ticket.pk).delete()
    metrics = TicketMetrics(
        ticket_id=ticket.pk, license_id=license.pk, created_at=ticket.created_at, teams="a,b", resolved=2
    )
    calls = []
    # when
    Insert(TicketMetrics).save([metrics], lambda objs: calls.append(objs[0].save(force_insert=True)))
    # then: PostgreSQL wrote it itself; the row and the instance hold what was given
    assert calls == ([] if connection.vendor == "postgresql" else [None])
    saved = TicketMetrics.objects.get(ticket_id=ticket.pk)
    assert [getattr(saved, name) for name in wiring._COLUMNS] == [
        getattr(metrics, name) for name in wiring._COLUMNS
    ]
    assert (saved.status, saved.rating, saved.teams, saved.resolved) == ("", "", "a,b", 2)
    assert (metrics._state.adding, metrics._state.db) == (False, "default")


def test_a_metrics_rows_update_is_the_orms_save(license):
    # given: a ticket's metrics row, read and changed as a first response changes it
    ticket = TicketFactory(license=license)
    metrics = wiring._read_metrics(ticket.pk)
    metrics.first_response_at, metrics.first_response_seconds, metrics.teams = ticket.created_at, 2.5, "x"
    with CaptureQueriesContext(connection) as by_orm:
        metrics.save()
    metrics.resolved += 1
    # when
    with CaptureQueriesContext(connection) as sent:
        wiring._update.save(metrics, wiring._UPDATED, lambda: metrics.save(update_fields=wiring._UPDATED))
    # then: the statement `save()` sends, the row as saved
    assert [q["sql"] for q in sent] == [by_orm[0]["sql"].replace('"resolved" = 0', '"resolved" = 1')]
    saved = TicketMetrics.objects.get(ticket_id=ticket.pk)
    assert [getattr(saved, name) for name in wiring._COLUMNS] == [
        getattr(metrics, name) for name in wiring._COLUMNS
    ]


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


@pytest.mark.postgres
def test_a_value_an_insert_sends_as_it_is_is_what_the_orm_would_send(db):
    # every column of every model: where the Insert sends an attribute of some type as it is, the ORM's own
    # preparation (get_db_prep_save, PostgreSQL's) gives back that same value, of that same type
    from django.apps import apps
    from django.utils import timezone

    from helpdesk.compiled import _as_is

    samples = {
        str: ["", "plain text", "ünïcode ✓"],
        int: [0, 7, -(2**40)],
        float: [0.0, 1.5, -2.25],
        bool: [True, False],
        uuid.UUID: [uuid.uuid4()],
        type(None): [None],
        __import__("datetime").datetime: [timezone.now()],
    }
    checked = set()
    for model in apps.get_models():
        for field in model._meta.local_concrete_fields:
            kinds = _as_is(field)
            if kinds is None:
                continue
            for kind in kinds:
                for value in samples[kind]:
                    prepared = field.get_db_prep_save(value, connection)
                    assert type(prepared) is kind and prepared == value, (model, field.name, value, prepared)
                checked.add(type(field).__name__)
    # the kinds that matter were checked, and what the Insert must not take as it is is not taken
    assert {"CharField", "TextField", "UUIDField", "DateTimeField", "ForeignKey", "BooleanField"} <= checked
    from django.db import models

    assert _as_is(TicketEvent._meta.get_field("payload")) is None  # JSON: the ORM's adapter
    assert _as_is(models.DateTimeField(auto_now_add=True)) is None  # its pre_save sets it
    assert _as_is(models.DateTimeField(auto_now=True)) is None
    assert _as_is(models.DecimalField()) is None
    assert _as_is(models.IntegerField()) is None  # sent typed (Int4) on PostgreSQL


def test_an_insert_prepares_a_value_of_another_type_the_orms_way(license):
    # a naive datetime and an int given for a bool column are prepared by the ORM (made aware, made bool)
    from datetime import datetime as naive_datetime

    ticket = TicketFactory(license=license)
    event = TicketEvent(
        license_id=license.pk,
        ticket_id=ticket.pk,
        type="note",
        payload={},
        created_at=naive_datetime(2026, 1, 2, 3),
    )
    with pytest.warns(RuntimeWarning, match="naive datetime"):
        Insert(TicketEvent).save([event], lambda objs: TicketEvent.objects.bulk_create(objs))
    stored = TicketEvent.objects.get(pk=event.pk)
    assert stored.created_at.isoformat() == "2026-01-02T03:00:00+00:00"
