"""The two builders of ticket documents (PostgreSQL's json_build_object, Python's dicts) agree field by field."""

import datetime

import orjson
import pytest
from django.db.models import F

from accounts.models import ROLE_NORMAL
from helpdesk.api.pagination import cursor_text
from tests.factories import AgentFactory, TagFactory, TeamFactory, TicketFactory
from tickets import output
from tickets.models import Ticket

pytestmark = pytest.mark.postgres


def _page(builder, license, sort_field="created_at", descending=True):
    ordering = F(sort_field).desc() if descending else F(sort_field).asc()
    pk = F("pk").desc() if descending else F("pk").asc()
    queryset = Ticket.objects.for_license(license).order_by(ordering, pk)[:50]
    return builder(queryset, sort_field)


def _docs(items):
    return [orjson.loads(orjson.dumps(item["doc"])) for item in items]


@pytest.fixture
def varied(owner):
    """Tickets that between them use every field: null and set, nested, sorted lists, children, odd times."""
    license = owner.license
    teams = [TeamFactory(license=license) for _ in range(3)]
    tags = [TagFactory(license=license) for _ in range(3)]
    agents = [AgentFactory(license=license, roles=[ROLE_NORMAL], name=f"Agent {n}") for n in range(3)]
    plain = TicketFactory(license=license, requester={"email": "ann@example.com", "name": ""})
    rich = TicketFactory(
        license=license,
        subject='Quotes " and \\ backslashes, ünïcödé, emoji 🎫, <b>html</b>',
        teams=teams,
        tags=tags,
        followers=agents,
        assignment={"team": teams[1], "agent": agents[2]},
        custom_fields={"plan": "pro", "orderNo": 12, "nested": {"b": [1, 2], "a": None}, "flag": True},
        people_in_the_loop=[{"email": "cc@example.com", "name": "CC"}],
        rating_score="good",
        rating_comment="Thanks!",
        rated_at=datetime.datetime(2026, 3, 1, 8, 0, 0, 999999, tzinfo=datetime.UTC),
        rating_requeest_sent=True,
        priority=20,
        status="pending",
        created_at=datetime.datetime(2024, 2, 29, 23, 59, 59, 999500, tzinfo=datetime.UTC),
        last_message_at=datetime.datetime(2026, 1, 1, 0, 0, 0, 1000, tzinfo=datetime.UTC),
    )
    team_only = TicketFactory(license=license, assignment={"team": teams[0]}, rating_score="bad")
    for short_id in ("10", "9", "100", "x7"):  # children: numeric shortID order, others first
        child = TicketFactory(license=license)
        Ticket.objects.filter(pk=child.pk).update(parent=rich, short_id=short_id)
    return plain, rich, team_only


def test_postgresql_and_python_build_the_same_documents(owner, varied):
    # when
    from_postgresql = _docs(_page(output._page_postgresql, owner.license))
    from_python = _docs(_page(output._page_python, owner.license))
    # then
    assert len(from_postgresql) == 7
    assert from_postgresql == from_python


def test_the_documents_are_the_contracts_values(owner, varied):
    _, rich, _ = varied
    # when
    [doc] = [d for d in _docs(_page(output._page_postgresql, owner.license)) if d["ID"] == str(rich.pk)]
    # then
    assert doc["createdAt"] == "2024-02-29T23:59:59.999Z"  # truncated to milliseconds, never rounded up
    assert doc["lastMessageAt"] == "2026-01-01T00:00:00.001Z"
    assert doc["rating"] == {"score": "good", "comment": "Thanks!", "ratedAt": "2026-03-01T08:00:00.999Z"}
    assert [c["shortID"] for c in doc["children"]] == ["x7", "9", "10", "100"]
    assert doc["teamIDs"] == sorted(doc["teamIDs"]) and len(doc["teamIDs"]) == 3
    assert doc["followers"] == sorted(doc["followers"]) and len(doc["followers"]) == 3
    assert doc["assignment"]["agent"]["name"] == "Agent 2"
    assert doc["customFields"]["nested"] == {"b": [1, 2], "a": None}
    assert doc["subject"].startswith('Quotes " and \\ backslashes')


@pytest.mark.parametrize("sort_field", ["created_at", "updated_at", "last_message_at"])
@pytest.mark.parametrize("descending", [True, False])
def test_the_page_keeps_the_order_and_the_cursor_keys(owner, varied, sort_field, descending):
    # when
    items = _page(output._page_postgresql, owner.license, sort_field, descending)
    # then
    expected = list(
        Ticket.objects.for_license(owner.license)
        .order_by(*(f"-{sort_field}", "-pk") if descending else (sort_field, "pk"))
        .values_list("pk", sort_field)
    )
    assert [(item["id"], item[sort_field]) for item in items] == [
        (str(pk), cursor_text(value)) for pk, value in expected
    ]


def test_both_builders_agree_with_events_too(owner, varied):
    # given: a history beyond the first messages
    from tickets import services

    _, rich, _ = varied
    services.ticket_update(ticket=rich, status="solved", message={"text": 'A "quoted" reply 🎫'})
    services.message_delivery_record(
        message_id=rich.messages.order_by("created_at").last().pk, recipient="a@example.com", status="sent"
    )
    queryset = Ticket.objects.for_license(owner.license).order_by(F("created_at").desc(), F("pk").desc())[:50]
    # when
    from_postgresql = _docs(
        output._with_events(output._page_postgresql(queryset, "created_at", keep_json=True), owner.license.pk)
    )
    from_python = _docs(output._with_events(output._page_python(queryset, "created_at"), owner.license.pk))
    # then
    assert from_postgresql == from_python
    [doc] = [d for d in from_postgresql if d["ID"] == str(rich.pk)]
    assert [e["type"] for e in doc["events"]] == ["message", "message", "status"]
    # the reply went to the requester (queued) and its mail to a@example.com was sent
    statuses = {d["recipient"]: d["status"] for d in doc["events"][1]["deliveryStatus"]}
    assert statuses["a@example.com"] == "sent" and set(statuses.values()) <= {"queued", "sent"}
    assert list(doc)[-1] == "events"
