"""`/v1/rules`: the generic resource tests, validation at save naming the condition or action, the rules at work
inside the write that triggered them (in ordering, chained, limited, recorded, skipped when they cannot apply),
and the test endpoint that writes nothing."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.factories import TagFactory, TeamFactory, TicketFactory
from tests.resource_tests import Resource, ResourceTests
from tickets.models import Ticket, TicketEvent
from tickets.rules import services
from tickets.rules.api import RuleViewSet
from tickets.rules.models import Rule, RuleFiring
from tickets.webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db

CREATED = {"type": "event", "op": "is", "value": "created"}


def _rule(license, triggers, actions, **fields):
    return services.rule_create(
        license=license, name=fields.pop("name", "rule"), triggers=triggers, actions=actions, **fields
    )


class TestRuleResource(ResourceTests):
    resource = Resource(
        viewset=RuleViewSet,
        make=lambda license: _rule(license, [], [], name="Old").pk,
        create={
            "name": "VIP",
            "ordering": 5,
            "quantifier": "any",
            "triggers": [CREATED, {"type": "subject", "op": "contains", "value": "refund"}],
            "actions": [{"type": "setPriority", "value": 20}],
        },
        update={"name": "VIP now", "active": False, "limitPerTicket": 3},
        invalid=[
            ({}, "name"),
            ({"name": "x", "actions": []}, "triggers"),
            ({"name": "x", "triggers": [], "actions": [], "quantifier": "most"}, "quantifier"),
            (
                {"name": "x", "triggers": [{"type": "mood", "op": "is", "value": 1}], "actions": []},
                "triggers",
            ),
            (
                {"name": "x", "triggers": [{"type": "status", "op": "gt", "value": "open"}], "actions": []},
                "triggers",
            ),
            (
                {"name": "x", "triggers": [], "actions": [{"type": "reply", "value": {"text": "a"}}]},
                "actions",
            ),
            ({"name": "x", "triggers": [], "actions": [], "limitPerTicket": 0}, "limitPerTicket"),
            ({"name": "x", "triggers": [], "actions": [], "useCounter": 5}, "useCounter"),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="VIP",
        create_changes={"name": {"before": None, "after": "VIP"}, "ordering": {"before": None, "after": 5}},
        update_changes={
            "name": {"before": "VIP", "after": "VIP now"},
            "active": {"before": True, "after": False},
        },
        publishes=True,
    )


# --- validation at save -----------------------------------------------------------------------------------


def _post(owner, triggers, actions):
    return owner.client.post(
        "/v1/rules", {"name": "x", "triggers": triggers, "actions": actions}, format="json"
    )


def test_a_foreign_or_unknown_id_is_a_400_naming_the_index_and_key(owner, outsider):
    foreign_tag = TagFactory(license=outsider.license)
    response = _post(
        owner, [CREATED, {"type": "tagIDs", "op": "contains", "value": [str(foreign_tag.pk)]}], []
    )
    assert response.status_code == 400
    assert response.json()["details"] == {
        "triggers": {"1": {"value": [f"Tag '{foreign_tag.pk}' does not exist in this license."]}}
    }
    team = str(uuid.uuid4())
    response = _post(
        owner, [CREATED], [{"type": "setStatus", "value": "open"}, {"type": "assignTeam", "value": team}]
    )
    assert response.json()["details"] == {
        "actions": {"1": {"value": [f"'{team}' does not exist in this license."]}}
    }
    response = _post(owner, [{"type": "hoursSince", "op": "gt", "value": 3, "field": "bornAt"}], [])
    assert response.json()["details"] == {
        "triggers": {"0": {"field": [response.json()["details"]["triggers"]["0"]["field"][0]]}}
    }
    assert "createdAt" in response.json()["details"]["triggers"]["0"]["field"][0]
    assert not Rule.objects.exists()


def test_the_macros_own_reply_is_refused_by_name(owner):
    response = _post(
        owner, [CREATED], [{"type": "setPriority", "value": 10}, {"type": "reply", "value": {"text": "a"}}]
    )
    assert response.status_code == 400
    assert list(response.json()["details"]["actions"]["1"]) == ["type"]
    assert not Rule.objects.exists()


# --- the rules at work ------------------------------------------------------------------------------------


def _create_ticket(client, email="jane@vip.example"):
    body = {
        "subject": "Order 1234",
        "requester": {"email": email},
        "message": {"text": "Where is my parcel?"},
    }
    return client.post("/v1/tickets", body, format="json")


def test_a_rule_acts_inside_the_write_and_the_response_shows_it(owner):
    tag = TagFactory(license=owner.license, name="vip")
    rule = _rule(
        owner.license,
        [CREATED, {"type": "requesterEmail", "op": "contains", "value": "@VIP.example"}],
        [{"type": "setPriority", "value": 20}, {"type": "addTags", "value": [str(tag.pk)]}],
        name="VIP",
    )
    # when a VIP writes in, and then someone else
    body = _create_ticket(owner.client).json()
    other = _create_ticket(owner.client, "joe@example.com").json()
    # then the VIP's ticket is as the rule left it, in the response already
    assert (body["priority"], body["tagIDs"]) == (20, [str(tag.pk)])
    assert (other["priority"], other["tagIDs"]) == (0, [])
    [event] = [e for e in body["events"] if e["type"] == "rule"]
    assert event["rule"] == {"ruleID": str(rule.pk), "name": "VIP"}
    assert event["author"]["type"] == "system"
    rule.refresh_from_db()
    assert rule.use_counter == 1
    assert RuleFiring.objects.get(rule=rule).count == 1


def test_later_rules_see_earlier_ones_changes_and_none_fires_twice(owner):
    tag = TagFactory(license=owner.license)
    # the second in ordering reacts to what the first does; the first would re-trigger itself, never does
    first = _rule(
        owner.license,
        [{"type": "event", "op": "isNot", "value": "tagsChanged"}],
        [{"type": "setPriority", "value": 10}],
        ordering=1,
        limit_per_ticket=5,
    )
    second = _rule(
        owner.license,
        [{"type": "event", "op": "is", "value": "priorityChanged"}],
        [{"type": "addTags", "value": [str(tag.pk)]}],
        ordering=2,
    )
    body = _create_ticket(owner.client).json()
    assert (body["priority"], body["tagIDs"]) == (10, [str(tag.pk)])
    fired = [e["rule"]["ruleID"] for e in body["events"] if e["type"] == "rule"]
    assert fired == [str(first.pk), str(second.pk)]
    # a later write: the first fires again (limit 5), the second reached its limit of 1
    response = owner.client.patch(f"/v1/tickets/{body['ID']}", {"priority": 0}, format="json")
    assert response.json()["priority"] == 10
    assert [Rule.objects.get(pk=r.pk).use_counter for r in (first, second)] == [2, 1]


def test_a_rule_whose_action_cannot_apply_is_skipped_and_the_write_succeeds(owner):
    tag = TagFactory(license=owner.license)
    rule = _rule(
        owner.license,
        [CREATED],
        [{"type": "setPriority", "value": 20}, {"type": "addTags", "value": [str(tag.pk)]}],
    )
    tag.delete()
    response = _create_ticket(owner.client)
    assert response.status_code == 201
    body = response.json()
    assert body["priority"] == 0  # nothing of the rule applied
    [event] = [e for e in body["events"] if e["type"] == "rule"]
    assert event["rule"]["ruleID"] == str(rule.pk)
    assert "no longer exists" in event["rule"]["skipped"]
    assert Rule.objects.get(pk=rule.pk).use_counter == 0


def test_rules_run_for_every_entrance_and_reach_webhooks(owner):
    rule = _rule(
        owner.license,
        [{"type": "status", "op": "is", "value": "pending"}],
        [{"type": "setPriority", "value": -10}],
    )
    Webhook.objects.create(
        license=owner.license,
        name="r",
        url="https://hooks.example.com/",
        event_type="tickets.events.rule",
        secret="s" * 20,
    )
    # a service call (as admin, mail in and tasks make) rather than the API
    ticket = TicketFactory(license=owner.license)
    from tickets.services import ticket_update

    ticket_update(ticket=ticket, status="pending")
    assert Ticket.objects.get(pk=ticket.pk).priority == -10
    event = TicketEvent.objects.get(ticket=ticket, type="rule")
    assert (event.author_type, event.payload["ruleID"]) == ("system", str(rule.pk))
    assert WebhookDelivery.objects.filter(event_type="tickets.events.rule").count() == 1


def test_inactive_rules_and_other_licenses_rules_do_not_run(owner, outsider):
    _rule(owner.license, [CREATED], [{"type": "setPriority", "value": 20}], active=False)
    _rule(outsider.license, [CREATED], [{"type": "setPriority", "value": 20}])
    assert _create_ticket(owner.client).json()["priority"] == 0


# --- test endpoint -------------------------------------------------------------------------------------


def test_testing_a_rule_says_what_it_would_change_and_writes_nothing(owner, agent):
    team = TeamFactory(license=owner.license)
    ticket = TicketFactory(license=owner.license, subject="Refund please")
    rule = _rule(
        owner.license,
        [CREATED, {"type": "subject", "op": "contains", "value": "refund"}],
        [{"type": "setStatus", "value": "pending"}, {"type": "assignTeam", "value": str(team.pk)}],
    )
    events = TicketEvent.objects.count()
    response = agent.client.post(f"/v1/rules/{rule.pk}/test", {"ticketID": str(ticket.pk)}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "fires": True,
        "reason": "",
        "changes": {"status": "pending", "assignment.teamID": str(team.pk)},
    }
    assert Ticket.objects.get(pk=ticket.pk).status == "open"
    assert TicketEvent.objects.count() == events and not RuleFiring.objects.exists()
    other = TicketFactory(license=owner.license, subject="Hello")
    response = agent.client.post(f"/v1/rules/{rule.pk}/test", {"ticketID": str(other.pk)}, format="json")
    assert response.json()["fires"] is False and "1" in response.json()["reason"]
    missing = agent.client.post(f"/v1/rules/{rule.pk}/test", {"ticketID": str(uuid.uuid4())}, format="json")
    assert missing.status_code == 404


# --- time rules (the beat sweep) --------------------------------------------------------------------------


def _hours_ago(hours, now):
    return now - timedelta(hours=hours)


def test_a_time_rule_fires_once_on_the_tickets_whose_time_has_come(owner):
    from tickets.rules import sweep

    now = timezone.now()
    rule = _rule(
        owner.license,
        [
            {"type": "hoursSince", "op": "gt", "value": 24, "field": "createdAt"},
            {"type": "status", "op": "is", "value": "open"},
        ],
        [{"type": "setPriority", "value": 10}],
    )
    due = TicketFactory(license=owner.license, created_at=_hours_ago(30, now))
    solved = TicketFactory(license=owner.license, created_at=_hours_ago(30, now), status="solved")
    later = TicketFactory(license=owner.license, created_at=_hours_ago(2, now))
    # when beat runs, twice
    assert sweep.run_time_rules(now=now) == 1
    assert sweep.run_time_rules(now=now + timedelta(minutes=1)) == 0
    # then only the open ticket past 24 hours changed, once, as the system
    priorities = dict(Ticket.objects.values_list("pk", "priority"))
    assert (priorities[due.pk], priorities[solved.pk], priorities[later.pk]) == (10, 0, 0)
    assert TicketEvent.objects.get(ticket=due, type="rule").author_type == "system"
    # a day later the younger ticket's time has come
    assert sweep.run_time_rules(now=now + timedelta(hours=23)) == 1
    assert Rule.objects.get(pk=rule.pk).use_counter == 2


def test_a_killed_sweep_changed_nothing_and_the_next_run_does_it(owner, monkeypatch):
    from tickets.rules import engine, sweep

    now = timezone.now()
    _rule(
        owner.license,
        [{"type": "hoursSince", "op": "gt", "value": 1, "field": "createdAt"}],
        [{"type": "setPriority", "value": 20}],
    )
    tickets = [TicketFactory(license=owner.license, created_at=_hours_ago(5, now)) for _ in range(3)]
    real_fire, calls = engine.fire, []

    def dies_on_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise SystemExit("killed")
        return real_fire(*args, **kwargs)

    monkeypatch.setattr(engine, "fire", dies_on_the_second)
    with pytest.raises(SystemExit):
        sweep.run_time_rules(now=now)
    assert set(Ticket.objects.filter(pk__in=[t.pk for t in tickets]).values_list("priority", flat=True)) == {
        0
    }
    monkeypatch.setattr(engine, "fire", real_fire)
    assert sweep.run_time_rules(now=now) == 3
    assert RuleFiring.objects.count() == 3


def test_a_time_rule_needs_an_hours_since_gt(owner):
    response = _post(owner, [{"type": "hoursSince", "op": "lt", "value": 3, "field": "createdAt"}], [])
    assert response.status_code == 400
    assert list(response.json()["details"]["triggers"]["0"]) == ["op"]
    response = _post(
        owner, [{"type": "hoursSince", "op": "gt", "value": 3, "field": "createdAt"}, CREATED], []
    )
    assert list(response.json()["details"]["triggers"]["1"]) == ["type"]


# --- cost -------------------------------------------------------------------------------------------------


def _idle_rules(license, count, tag):
    # rules that read the ticket, its tags and the write's events, and do not match
    for n in range(count):
        _rule(
            license,
            [
                {"type": "event", "op": "is", "value": "statusChanged"},
                {"type": "tagIDs", "op": "contains", "value": [str(tag.pk)]},
                {"type": "subject", "op": "contains", "value": f"nothing like {n}"},
            ],
            [{"type": "setPriority", "value": 20}],
            ordering=n,
        )


@pytest.mark.parametrize("count", [20, 200])
def test_a_writes_statements_do_not_grow_with_the_rules(owner, count):
    tag = TagFactory(license=owner.license)
    ticket = TicketFactory(license=owner.license)

    def statements(status):
        with CaptureQueriesContext(connection) as queries:
            response = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": status}, format="json")
        assert response.status_code == 200
        return len(queries)

    statements("pending")  # warm (the caller is served from its process's copy from its third request on)
    statements("open")
    statements("pending")
    without = statements("open")
    _idle_rules(owner.license, count, tag)
    # the first write after a change of the rules reads them; the ticket and its tags, once for all of them
    assert statements("pending") == without + 3
    # later writes: the rules from the process's copy (the cache's version of them unchanged)
    assert statements("open") == without + 2


def test_a_rules_message_goes_to_the_requester_through_mail_out(owner):
    from templates_app import mail
    from templates_app.models import OutboundMessage

    _rule(
        owner.license,
        [CREATED],
        [
            {
                "type": "sendMessage",
                "value": {"text": "Hello {{requester.name}}, #{{ticket.shortID}} is ours."},
            }
        ],
    )
    body = owner.client.post(
        "/v1/tickets",
        {
            "subject": "Hi",
            "requester": {"email": "ann@example.com", "name": "Ann"},
            "message": {"text": "Help"},
        },
        format="json",
    ).json()
    sent = OutboundMessage.objects.get(ticket_id=body["ID"], ticket_message__text__startswith="Hello")
    assert (sent.kind, sent.to) == (OutboundMessage.KIND_REPLY, "ann@example.com")
    mail.deliver(message_id=sent.pk)  # the worker renders it (issue 34) and sends it
    sent.refresh_from_db()
    assert sent.text.startswith(f"Hello Ann, #{body['shortID']} is ours.")
    messages = [e for e in body["events"] if e["type"] == "message"]
    assert messages[-1]["author"]["type"] == "system" or messages[-1]["message"]["text"].startswith(
        "Hello Ann"
    )


def test_a_write_that_rolls_back_takes_the_rules_changes_with_it(owner):
    from helpdesk.transactions import unit_of_work
    from tickets.services import ticket_update

    rule = _rule(
        owner.license,
        [{"type": "status", "op": "is", "value": "pending"}],
        [{"type": "setPriority", "value": 20}],
    )
    ticket = TicketFactory(license=owner.license)
    # when the write's unit of work fails after the rules ran (at its end, before the commit)
    with pytest.raises(RuntimeError), unit_of_work():
        ticket_update(ticket=ticket, status="pending")

        def fail():
            raise RuntimeError("the write fails")

        from helpdesk.transactions import before_commit

        before_commit(fail, last=True)
    # then neither the write nor the rule's change nor its record is there
    assert Ticket.objects.values_list("status", "priority").get(pk=ticket.pk) == ("open", 0)
    assert not RuleFiring.objects.exists() and not TicketEvent.objects.filter(type="rule").exists()
    assert Rule.objects.get(pk=rule.pk).use_counter == 0


def test_applying_a_macro_runs_the_rules(owner):
    from tickets.macros.services import macro_create

    _rule(
        owner.license,
        [{"type": "event", "op": "is", "value": "statusChanged"}],
        [{"type": "setPriority", "value": 10}],
    )
    macro = macro_create(
        license=owner.license,
        name="m",
        visibility="shared",
        actions=[{"type": "setStatus", "value": "pending"}],
    )
    ticket = TicketFactory(license=owner.license)
    body = owner.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}").json()
    assert (body["status"], body["priority"]) == ("pending", 10)


def test_a_purged_tickets_firing_rows_go_with_it(owner):
    from tests.purge_helpers import make_ticket
    from tickets import purge

    rule = _rule(owner.license, [CREATED], [])
    ticket = make_ticket(owner.license, silo="spam", updated_at=timezone.now() - timedelta(days=61))
    RuleFiring.objects.create(license=owner.license, rule=rule, ticket=ticket, count=1)
    purge.purge_expired()
    assert not Ticket.objects.filter(pk=ticket.pk).exists()
    assert not RuleFiring.objects.exists()


def test_a_write_that_no_rule_waits_for_reads_nothing_more(owner):
    ticket = TicketFactory(license=owner.license)

    def statements(status):
        with CaptureQueriesContext(connection) as queries:
            owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": status}, format="json")
        return len(queries)

    statements("pending")  # warm (the caller is served from its process's copy from its third request on)
    statements("open")
    statements("pending")
    without = statements("open")
    for n in range(20):
        _rule(owner.license, [{"type": "event", "op": "is", "value": "clientMessage"}], [], ordering=n)
    statements("pending")
    # the rules wait for a client's message: a status change evaluates none of them, reads no ticket
    assert statements("open") == without


def test_every_process_sees_a_rules_change_at_the_next_write(owner):
    rule = _rule(owner.license, [{"type": "event", "op": "is", "value": "statusChanged"}], [])
    ticket = TicketFactory(license=owner.license)
    owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json")
    assert Rule.objects.get(pk=rule.pk).use_counter == 1
    # when the rule is changed (here: deactivated through the API), the next write reads the rules again
    owner.client.patch(f"/v1/rules/{rule.pk}", {"active": False, "limitPerTicket": 5}, format="json")
    owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "open"}, format="json")
    assert Rule.objects.get(pk=rule.pk).use_counter == 1
    owner.client.patch(f"/v1/rules/{rule.pk}", {"active": True}, format="json")
    owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json")
    assert Rule.objects.get(pk=rule.pk).use_counter == 2


def test_every_time_field_has_an_index_that_finds_the_due_tickets_of_a_license():
    # the sweep reads (license, field) ranges in (field, id) order: one index range per rule, never a scan
    from tickets.rules.conditions import TIME_FIELDS

    leading = {tuple(index.fields[:2]) for index in Ticket._meta.indexes}
    assert all(("license", field) in leading for field in TIME_FIELDS.values())
