"""helpdesk.compiled: a read compiled once gives the rows the ORM gives, and leans on the ORM's compiler only as
far as a test here notices (its `as_sql`, `select` and `get_converters`)."""

import pytest
from django.db import connection

from helpdesk.compiled import Compiled
from tests.factories import TicketFactory
from tickets import events_output
from tickets.models import Ticket


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
