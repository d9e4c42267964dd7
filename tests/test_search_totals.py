"""Search totals after every write path: each write runs with the count cache warm (every filter set below
counted and registered for carrying), then every filter set's `X-Total-Results` must equal a fresh count.

Transactional: the totals are carried over after the commit (tickets.totals), as in production.
"""

import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ROLE_NORMAL, Agent
from templates_app.addresses import license_address
from templates_app.inbound.services import inbound_message_receive
from tests.factories import AgentFactory, CustomFieldFactory, TagFactory, TeamFactory, TicketFactory
from tests.mail_helpers import simple
from tickets import auto_close, purge, services, totals
from tickets.models import Ticket
from tickets.totals import keys, reading, registry, writing

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _carry_every_total(settings):
    settings.TICKET_COUNT_CARRY_MIN_MS = 0


@pytest.fixture
def world(owner):
    license = owner.license
    team, other_team = TeamFactory(license=license), TeamFactory(license=license)
    tag, other_tag = TagFactory(license=license), TagFactory(license=license)
    agent = AgentFactory(license=license, roles=[ROLE_NORMAL], autoassignment=True)
    agent.teams.add(team)
    agent.autoassignment_teams.add(team)
    CustomFieldFactory(license=license, api_key="plan")
    for made in [
        TicketFactory(license=license, teams=[team], tags=[tag], followers=[agent]),
        TicketFactory(license=license, teams=[team, other_team], tags=[tag, other_tag], priority=10),
        TicketFactory(license=license, text="refund please", custom_fields={"plan": "pro"}),
        TicketFactory(license=license, status="solved", assignment={"team": team, "agent": agent}),
        TicketFactory(license=license, status="pending", assignment={"team": team, "agent": agent}),
        TicketFactory(license=license, silo="spam"),
    ]:
        assert made.license_id == license.pk
    return {"license": license, "team": team, "other_team": other_team, "tag": tag, "other_tag": other_tag}


def _filters(world) -> list[dict]:
    team, other_team, tag = world["team"], world["other_team"], world["tag"]
    agents = Agent.objects.filter(license=world["license"]).values_list("pk", flat=True)
    return [
        {},
        {"status": "solved"},
        {"status": "pending"},
        {"status": "closed"},
        {"silo": "trash"},
        {"silo": "spam"},
        {"hasAssignee": "Y"},
        {"hasAssignee": "N"},
        {"hasAssignee": "Y", "status": "solved"},
        {"assignment.agentID": "none", "status": "solved"},
        {"assignment.teamID": "none"},
        {"assignment.teamID": str(team.pk)},
        {"hasTags": "Y"},
        {"hasParent": "Y"},
        {"tagIDs[]": str(tag.pk)},
        {"teamIDs[]": str(team.pk)},  # a team inbox: counted from the team's links
        {"teamIDs[]": [str(team.pk), str(other_team.pk)]},
        {"teamIDs[]": str(team.pk), "priority": "10", "priorityOp": "gte"},
        {"priority": "10", "priorityOp": "gte"},
        {"query": "refund"},  # full-text totals: counted from the tickets' copy on PostgreSQL
        {"query": "refund", "status": "solved"},
        {"query": "refund", "silo": "spam"},
        {"query": "refund", "spam": "true"},
        {"query": "-refund"},
        {"query": "refund", "priority": "10", "priorityOp": "gte"},  # counted from the tickets
        {"customFields.plan": "pro"},
        {"rating": "good"},
        *({"assignment.agentID": str(pk), "status": "pending"} for pk in agents),
        *({"follower": str(pk)} for pk in agents),
    ]


def _totals(client, filters) -> list[str]:
    totals = []
    for params in filters:
        response = client.get("/v1/tickets", params)
        # a deleted tag's or team's ID is a 400 (unknown ID), served and fresh alike
        assert response.status_code in (200, 400), (params, response.content)
        totals.append(response.get("X-Total-Results", response.status_code))
    return totals


def _assert_exact_after(owner, world, write):
    """Warm every total, write, then compare every served total with a fresh count."""
    cache.clear()
    filters = _filters(world)
    _totals(owner.client, filters)  # counted and registered
    write()
    served = _totals(owner.client, _filters(world))
    cache.clear()
    fresh = _totals(owner.client, _filters(world))
    assert served == fresh, [
        (p, s, f) for p, s, f in zip(_filters(world), served, fresh, strict=True) if s != f
    ]
    assert_search_copy_follows_tickets()


def assert_search_copy_follows_tickets():
    """PostgreSQL: the copy that full-text totals count (TicketSearchCopy) has one row per ticket, with its
    license, silo, status and vector (the fresh totals above count it too, so this is what makes them exact)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.id, c.ticket_id FROM tickets_ticket t "
            "FULL JOIN tickets_ticketsearchcopy c ON c.ticket_id = t.id "
            "WHERE t.id IS NULL OR c.ticket_id IS NULL "
            "OR (t.license_id, t.silo, t.status) IS DISTINCT FROM (c.license_id, c.silo, c.status) "
            "OR t.search_vector IS DISTINCT FROM c.search_vector"
        )
        assert cursor.fetchall() == []


def _ok(response):
    assert response.status_code < 300, response.content


def _first(license, **filters) -> Ticket:
    return Ticket.objects.filter(license=license, **filters).order_by("number").first()


def test_api_create(owner, world):
    body = {
        "subject": "new refund",
        "requester": {"email": "a@example.com"},
        "message": {"text": "refund"},
        "teamIDs": [str(world["team"].pk)],
        "tagIDs": [str(world["tag"].pk)],
        "priority": 20,
        "customFields": {"plan": "pro"},
    }

    def write():
        assert owner.client.post("/v1/tickets", body, format="json").status_code == 201

    _assert_exact_after(owner, world, write)


@pytest.mark.parametrize(
    "body",
    [
        {"status": "solved", "force": True},
        {"status": "pending"},
        {"priority": 20},
        {"silo": "spam"},
        {"tagIDs": []},
        {"teamIDs": []},
        {"followers": []},
        {"subject": "refund now"},
        {"message": {"text": "a refund for you"}},
        {"customFields": {"plan": "basic"}},
    ],
    ids=lambda body: ",".join(body),
)
def test_api_update(owner, world, body):
    ticket = _first(world["license"], tags=world["tag"])

    def write():
        response = owner.client.patch(f"/v1/tickets/{ticket.pk}", body, format="json")
        assert response.status_code == 200, response.content

    _assert_exact_after(owner, world, write)


def test_api_assignment(owner, world):
    ticket = _first(world["license"], assignment_agent=None, silo="tickets")
    agent = Agent.objects.filter(license=world["license"], autoassignment=True).first()
    body = {"assignment": {"team": {"ID": str(world["team"].pk)}, "agent": {"ID": str(agent.pk)}}}
    _assert_exact_after(
        owner, world, lambda: _ok(owner.client.patch(f"/v1/tickets/{ticket.pk}", body, format="json"))
    )


def test_api_delete(owner, world):
    ticket = _first(world["license"], tags=world["tag"])
    _assert_exact_after(owner, world, lambda: _ok(owner.client.delete(f"/v1/tickets/{ticket.pk}")))


def test_api_merge(owner, world):
    parent, child = Ticket.objects.filter(license=world["license"], silo="tickets").order_by("number")[:2]
    body = {"childTicketID": str(child.pk)}
    _assert_exact_after(
        owner,
        world,
        lambda: _ok(owner.client.post(f"/v1/tickets/{parent.pk}/childTickets", body, format="json")),
    )


def test_rating(owner, world):
    ticket = _first(world["license"], status="solved")
    _assert_exact_after(owner, world, lambda: services.ticket_rate(ticket=ticket, score="good"))


def test_admin_bulk_actions(owner, world, superuser):
    tickets = list(Ticket.objects.filter(license=world["license"], silo="tickets"))
    url = "/admin/tickets/ticket/"
    selected = [str(t.pk) for t in tickets[:3]]

    def write():
        superuser.post(url, {"action": "change_status", "_selected_action": selected, "status": "closed"})
        superuser.post(url, {"action": "move_to_silo", "_selected_action": selected[:2], "silo": "archive"})

    _assert_exact_after(owner, world, write)


def test_mail_in(owner, world):
    raw = simple(subject="A refund", body="refund please")
    recipients = [license_address(world["license"].pk)]
    _assert_exact_after(owner, world, lambda: inbound_message_receive(raw=raw, recipients=recipients))


def test_purge(owner, world):
    old = timezone.now() - timedelta(days=31)
    TicketFactory(license=world["license"], tags=[world["tag"]], silo="trash", updated_at=old)
    _assert_exact_after(owner, world, purge.purge_expired)


def test_auto_close(owner, world):
    ticket = _first(world["license"], status="solved")
    Ticket.objects.filter(pk=ticket.pk).update(status_changed_at=timezone.now() - timedelta(days=30))
    _assert_exact_after(owner, world, auto_close.close_solved)


def test_agent_deletion(owner, world):
    agent = Agent.objects.get(license=world["license"], autoassignment=True)
    _assert_exact_after(owner, world, lambda: _ok(owner.client.delete(f"/v1/agents/{agent.pk}")))


def test_agent_leaves_a_team(owner, world):
    agent = Agent.objects.get(license=world["license"], autoassignment=True)
    body = {"teamIDs": [], "autoassignmentTeamIDs": []}
    _assert_exact_after(
        owner, world, lambda: _ok(owner.client.patch(f"/v1/agents/{agent.pk}", body, format="json"))
    )


def test_team_deletion(owner, world):
    _assert_exact_after(owner, world, lambda: _ok(owner.client.delete(f"/v1/teams/{world['team'].pk}")))


def test_tag_deletion(owner, world):
    _assert_exact_after(owner, world, lambda: _ok(owner.client.delete(f"/v1/tags/{world['tag'].pk}")))


def test_autoassignment_of_a_new_ticket(owner, world):
    body = {
        "subject": "assign me",
        "requester": {"email": "b@example.com"},
        "message": {"text": "hello"},
        "teamIDs": [str(world["team"].pk)],
    }
    _assert_exact_after(owner, world, lambda: _ok(owner.client.post("/v1/tickets", body, format="json")))


def test_a_write_carries_the_totals_instead_of_counting_again(owner, world):
    # given every total counted
    filters = _filters(world)
    before = _totals(owner.client, filters)
    ticket = _first(world["license"], tags=world["tag"], status="open")
    # when a ticket is solved
    response = owner.client.patch(
        f"/v1/tickets/{ticket.pk}", {"status": "solved", "force": True}, format="json"
    )
    assert response.status_code == 200
    # then the next searches count nothing, and their totals moved by the ticket
    with CaptureQueriesContext(connection) as queries:
        after = _totals(owner.client, filters)
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)
    changed = {i: (int(b), int(a)) for i, (b, a) in enumerate(zip(before, after, strict=True)) if a != b}
    assert changed[filters.index({})] == (int(before[0]), int(before[0]) - 1)  # the open tickets
    assert changed[filters.index({"status": "solved"})][1] == int(before[1]) + 1
    cache.clear()
    assert _totals(owner.client, filters) == after


def test_a_write_after_a_lost_cache_write_counts_again(owner, world, monkeypatch):
    # given every total counted, and the carried totals never reach the cache (Redis away after the commit)
    filters = _filters(world)
    _totals(owner.client, filters)
    monkeypatch.setattr(reading.cache, "set_many", lambda *args, **kwargs: [])
    ticket = _first(world["license"], tags=world["tag"], status="open")
    # when
    owner.client.patch(f"/v1/tickets/{ticket.pk}", {"priority": 20}, format="json")
    # then the totals are counted again, exact
    served = _totals(owner.client, filters)
    cache.clear()
    assert served == _totals(owner.client, filters)


def test_a_write_outside_the_services_drops_the_totals(owner, world):
    # given
    assert owner.client.get("/v1/tickets", {"status": "closed"})["X-Total-Results"] == "0"
    ticket = _first(world["license"], silo="tickets", status="open")
    # when a ticket is saved without a unit of work (the safety net: tickets.apps' signals)
    ticket.status = "closed"
    ticket.save()
    # then
    assert owner.client.get("/v1/tickets", {"status": "closed"})["X-Total-Results"] == "1"


def test_a_ticket_service_outside_a_unit_of_work_is_refused():
    with pytest.raises(RuntimeError, match="unit_of_work"):
        totals.changing(1, ["x"])


def test_a_count_stored_after_the_next_write_rolls_forward_through_its_step(owner, world, monkeypatch):
    # given the open tickets counted, and a write that finds no cached total to carry (as when a slow count is
    # stored after the write looked for it): it leaves only its step
    total = int(owner.client.get("/v1/tickets")["X-Total-Results"])
    ticket = _first(world["license"], tags=world["tag"], status="open")
    with monkeypatch.context() as patched:
        patched.setattr(reading.cache, "get_many", lambda keys, *args, **kwargs: {})
        _ok(owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json"))
    # when
    with CaptureQueriesContext(connection) as queries:
        served = owner.client.get("/v1/tickets")["X-Total-Results"]
    # then the total is the older count moved by the write's step, without counting
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)
    assert served == str(total - 1)


def test_a_reader_waits_for_the_count_another_request_is_running(owner, world, monkeypatch):
    # given another request counting the open tickets (its lock taken), whose count arrives while this one waits
    license = world["license"]
    digest = _digest_of(owner, monkeypatch, license)
    cache.add(keys.counting_key(license.pk, digest), 1, 30)
    pauses, current = [], keys.generation(license.pk)

    def the_other_count_arrives(seconds):
        pauses.append(seconds)
        cache.set(keys.latest_key(license.pk, digest), (current, 4242), 60)

    monkeypatch.setattr(reading.time, "sleep", the_other_count_arrives)
    # when
    with CaptureQueriesContext(connection) as queries:
        served = owner.client.get("/v1/tickets")["X-Total-Results"]
    # then it waited, served that count and did not count itself
    assert pauses
    assert served == "4242"
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)


def test_a_reader_counts_itself_when_the_other_count_never_arrives(owner, world, monkeypatch):
    license = world["license"]
    digest = _digest_of(owner, monkeypatch, license)
    lock = keys.counting_key(license.pk, digest)
    cache.add(lock, "the other request's", 30)
    monkeypatch.setattr(reading, "COUNT_WAIT_SECONDS", 0.05)
    expected = Ticket.objects.filter(license=license, status="open", silo="tickets").count()
    assert owner.client.get("/v1/tickets")["X-Total-Results"] == str(expected)
    assert cache.get(lock) == "the other request's"  # not this request's to free


def test_a_write_inside_a_longer_transaction_carries_nothing(owner, world, monkeypatch):
    # given the open tickets counted (and carried by writes)
    license = world["license"]
    digest, total, counted_at = _counted(owner, monkeypatch, license)
    solved, other = Ticket.objects.filter(license=license, silo="tickets", status="open").order_by("number")[
        :2
    ]
    # when a service's unit of work runs inside a bare atomic block that goes on to change another ticket
    with transaction.atomic():
        services.ticket_update(ticket=solved, status="solved", force=True)
        other.status = "pending"
        other.save()
    # then the state between the two changes, which never committed, was carried nowhere
    assert cache.get(keys.latest_key(license.pk, digest)) == (counted_at, total)
    assert owner.client.get("/v1/tickets")["X-Total-Results"] == str(total - 2)


def test_with_the_cache_away_every_reader_counts(owner, world, monkeypatch):
    class Away:  # what django-redis answers with IGNORE_EXCEPTIONS while Redis is unreachable
        def __getattr__(self, name):
            return lambda *args, **kwargs: {} if name == "get_many" else None

    monkeypatch.setattr(reading, "cache", Away())
    monkeypatch.setattr(reading.time, "sleep", lambda seconds: pytest.fail("waited for a lock nobody holds"))
    expected = Ticket.objects.filter(license=world["license"], status="open", silo="tickets").count()
    assert owner.client.get("/v1/tickets")["X-Total-Results"] == str(expected)


def _counted(owner, monkeypatch, license) -> tuple[str, int, int]:
    """The open tickets counted: the filter set's digest, the total and the generation it was counted at."""
    digest = _digest_of(owner, monkeypatch, license)
    total = int(owner.client.get("/v1/tickets")["X-Total-Results"])
    return digest, total, keys.generation(license.pk)


def _digest_of(owner, monkeypatch, license) -> str:
    """The digest under which the search of the open tickets (no parameters) keeps its total."""
    seen = []
    real = reading._count
    with monkeypatch.context() as spying:
        spying.setattr(
            reading, "_count", lambda lid, digest, *rest: seen.append(digest) or real(lid, digest, *rest)
        )
        cache.clear()
        owner.client.get("/v1/tickets")
    cache.clear()
    (digest,) = seen
    return digest


def test_the_registry_admits_a_set_on_its_second_expensive_count_and_evicts_idle_then_cheap_sets(
    settings, monkeypatch
):
    settings.TICKET_COUNT_CARRY_MIN_MS, settings.TICKET_COUNT_CARRY_SETS = 5, 3
    cache.clear()

    def registered():
        return set(cache.get(keys.registry_key(7)) or {})

    # a set counted once, cheaply, is not carried; its second count registers it
    registry.register(7, "rare", "SELECT 1", (), 6.0)
    assert registered() == set()
    registry.register(7, "rare", "SELECT 1", (), 6.0)
    assert registered() == {"rare"}
    # a count that took 20x the threshold registers at once
    registry.register(7, "slow", "SELECT 1", (), 500.0)
    registry.register(7, "common", "SELECT 1", (), 120.0)
    assert registered() == {"rare", "slow", "common"}
    # over the limit: the cheapest of the sets in use goes
    registry.register(7, "inbox", "SELECT 1", (), 150.0)
    assert registered() == {"slow", "common", "inbox"}
    # a set idle for longer than IDLE_SECONDS goes before a cheaper one in use
    sets = cache.get(keys.registry_key(7))
    sql, params, took, _ = sets["slow"]
    sets["slow"] = (sql, params, took, time.time() - registry.IDLE_SECONDS - 1)
    cache.set(keys.registry_key(7), sets)
    registry.register(7, "report", "SELECT 1", (), 110.0)
    assert registered() == {"common", "inbox", "report"}


def test_a_reader_waits_briefly_for_the_step_of_a_write_that_has_just_committed(owner, world, monkeypatch):
    # given the open tickets counted at G (a slow count), and a write to G' whose step is not stored yet
    license = world["license"]
    digest, total, counted_at = _counted(owner, monkeypatch, license)
    sets = cache.get(keys.registry_key(license.pk))
    sql, params, _, used = sets[digest]
    sets[digest] = (sql, params, 500.0, used)
    cache.set(keys.registry_key(license.pk), sets)
    ticket = _first(license, silo="tickets", status="open")
    with monkeypatch.context() as unstored:
        unstored.setattr(writing, "_carry", lambda *args: None)
        _ok(owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json"))
    pauses, current = [], keys.generation(license.pk)

    def the_step_arrives(seconds):
        pauses.append(seconds)
        cache.set(keys.step_key(license.pk, counted_at, digest), (current, -1))

    monkeypatch.setattr(reading.time, "sleep", the_step_arrives)
    # the write is recent however busy the machine (4 test processes on 2 cores took 0.3 s from commit to read)
    monkeypatch.setattr(reading, "STEP_WAIT_RECENT_MS", 60_000)
    # when
    with CaptureQueriesContext(connection) as queries:
        served = owner.client.get("/v1/tickets")["X-Total-Results"]
    # then
    assert pauses
    assert served == str(total - 1)
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)


def test_a_served_total_marks_its_set_used_at_most_once_a_minute(settings, monkeypatch):
    settings.TICKET_COUNT_CARRY_MIN_MS = 5
    cache.clear()
    registry.marked.clear()
    clock = [1000.0]
    monkeypatch.setattr(registry.time, "monotonic", lambda: clock[0])
    registry.register(7, "inbox", "SELECT 1", (), 150.0)

    def last_used():
        return cache.get(keys.registry_key(7))["inbox"][3]

    registered_at = last_used()
    clock[0] += 59
    registry.keep_registered(7, "inbox")
    assert last_used() == registered_at  # within the minute: no cache round trip
    clock[0] += 2
    registry.keep_registered(7, "inbox")
    assert last_used() > registered_at


# --- carrying off (TICKET_COUNT_CARRY_SETS=0) --------------------------------------------------------------


@pytest.mark.parametrize(
    "write",
    ["create", "solve", "reply", "teams", "delete", "merge", "mail_in", "tag_deletion", "outside_services"],
)
def test_with_carrying_off_every_write_leaves_the_totals_exact(owner, world, settings, write):
    # given carrying off: no filter set is ever registered, every write drops its license's totals
    settings.TICKET_COUNT_CARRY_SETS = 0
    license = world["license"]
    ticket = _first(license, tags=world["tag"], status="open")
    parent = (
        Ticket.objects.filter(license=license, silo="tickets").exclude(pk=ticket.pk).order_by("number")[0]
    )
    writes = {
        "create": lambda: _ok(
            owner.client.post(
                "/v1/tickets",
                {"subject": "refund", "requester": {"email": "c@example.com"}, "message": {"text": "refund"}},
                format="json",
            )
        ),
        "solve": lambda: _ok(
            owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved", "force": True}, format="json")
        ),
        "reply": lambda: _ok(
            owner.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "refund"}}, format="json")
        ),
        "teams": lambda: _ok(owner.client.patch(f"/v1/tickets/{ticket.pk}", {"teamIDs": []}, format="json")),
        "delete": lambda: _ok(owner.client.delete(f"/v1/tickets/{ticket.pk}")),
        "merge": lambda: _ok(
            owner.client.post(
                f"/v1/tickets/{parent.pk}/childTickets",
                {"childTicketID": str(ticket.pk)},
                format="json",
            )
        ),
        "mail_in": lambda: inbound_message_receive(
            raw=simple(subject="A refund", body="refund please"), recipients=[license_address(license.pk)]
        ),
        "tag_deletion": lambda: _ok(owner.client.delete(f"/v1/tags/{world['tag'].pk}")),
        "outside_services": lambda: Ticket.objects.get(pk=ticket.pk).save(),
    }
    # when / then
    _assert_exact_after(owner, world, writes[write])
    assert cache.get(keys.registry_key(license.pk)) in (None, {})  # nothing was carried


def test_with_carrying_off_a_search_after_a_write_counts_again(owner, world, settings):
    # given carrying off, and every total counted
    settings.TICKET_COUNT_CARRY_SETS = 0
    filters = _filters(world)
    before = _totals(owner.client, filters)
    with CaptureQueriesContext(connection) as queries:
        assert _totals(owner.client, filters) == before
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)  # cached until a write
    ticket = _first(world["license"], tags=world["tag"], status="open")
    # when a ticket is solved
    _ok(owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved", "force": True}, format="json"))
    # then the next search counts, and its total moved by the ticket
    with CaptureQueriesContext(connection) as queries:
        after = owner.client.get("/v1/tickets", {"status": "solved"})["X-Total-Results"]
    assert any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)
    assert int(after) == int(before[filters.index({"status": "solved"})]) + 1


# --- the package's entry points ----------------------------------------------------------------------------

# count_sql: the SQL a total counts, which tickets.search_shapes binds into a shape and exact_count takes
# generation_unloaded and GENERATION_SQL: the search's page statement reads the generation its total is looked up at
ENTRY_POINTS = {
    "changing",
    "count_sql",
    "exact_count",
    "exact_counts",
    "generation_unloaded",
    "GENERATION_SQL",
}


def _imports_of_totals(path):
    """(module, names) of every import of tickets.totals in `path`, and the attributes read off `totals`."""
    import ast

    tree = ast.parse(path.read_text())
    found, attributes = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {alias.name for alias in node.names}
            if node.module == "tickets" and "totals" in names:
                found.append(("tickets", {"totals"}))
            elif node.module.startswith("tickets.totals"):
                found.append((node.module, names))
        elif isinstance(node, ast.Import):
            found += [(a.name, set()) for a in node.names if a.name.startswith("tickets.totals")]
        elif (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "totals"
        ):
            attributes.add(node.attr)
    return found, attributes


def test_outside_the_package_only_the_entry_points_are_used():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sources = [
        path
        for path in root.rglob("*.py")
        if not {".venv", "tests", "migrations"} & set(path.relative_to(root).parts)
        and not path.is_relative_to(root / "tickets" / "totals")
    ]
    used = {}
    for path in sources:
        name = path.relative_to(root).as_posix()
        found, attributes = _imports_of_totals(path)
        for module, names in found:
            if module == "tickets" or (module == "tickets.totals" and names <= ENTRY_POINTS):
                continue
            if (name, module, names) == ("tickets/apps.py", "tickets.totals", {"wiring"}):
                continue  # the package's wiring, connected at ready()
            used[name] = (module, names)
        if found and attributes - ENTRY_POINTS:
            used[name] = attributes - ENTRY_POINTS
    assert used == {}
    # the shared machinery and the authentication name neither the tickets app nor its totals
    for shared in ("helpdesk/transactions.py", "accounts/api/authentication.py"):
        text = (root / shared).read_text()
        assert "tickets" not in text and "search_generation" not in text, shared


def test_a_full_text_total_is_counted_from_the_tickets_copy_on_postgresql(owner, world):
    # given a ticket that says "refund", and one in spam that says it too
    TicketFactory(license=world["license"], silo="spam", text="refund me")
    cache.clear()
    for params, expected in [
        ({"query": "refund"}, 1),
        ({"query": "refund", "spam": "true"}, 2),
        ({"query": "refund", "priority": "20"}, 0),
    ]:
        # when the total is counted
        with CaptureQueriesContext(connection) as queries:
            response = owner.client.get("/v1/tickets", params)
        # then it is exact, and a search of words alone counted the copy (PostgreSQL; SQLite has no copy)
        assert response.status_code == 200
        assert response["X-Total-Results"] == str(expected), params
        counts = [q["sql"] for q in queries.captured_queries if "SELECT COUNT(*) FROM (" in q["sql"]]
        assert len(counts) == 1
        from_copy = connection.vendor == "postgresql" and "priority" not in params
        assert ("tickets_ticketsearchcopy" in counts[0]) is from_copy, counts[0]
    assert_search_copy_follows_tickets()


def test_a_caller_from_the_process_copy_gets_the_generation_with_its_page(owner, world):
    # given the caller served from its process's copy (its third request), the open tickets' total cached
    for _ in range(3):
        before = int(owner.client.get("/v1/tickets", {"status": "open"})["X-Total-Results"])
    ticket = _first(world["license"], tags=world["tag"], status="open")
    _ok(owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved", "force": True}, format="json"))
    for _ in range(2):
        owner.client.get("/v1/agents")
    # when
    with CaptureQueriesContext(connection) as queries:
        served = owner.client.get("/v1/tickets", {"status": "open"})["X-Total-Results"]
    # then the total is exact after the write, looked up at the generation the page's statement read (on
    # PostgreSQL no statement reads it alone) and counted by none
    assert served == str(before - 1)
    statements = [q["sql"] for q in queries.captured_queries if q["sql"] != "SELECT 1"]
    assert not any("COUNT(" in sql.upper() for sql in statements)
    if connection.vendor == "postgresql":
        assert len(statements) == 1  # the page's, which reads the generation too
        assert keys.GENERATION_SQL.split(" WHERE")[0] in statements[0]
