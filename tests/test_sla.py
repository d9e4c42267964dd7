"""Service levels: `/v1/businessHours` and `/v1/slaPolicies` (the generic resource tests and their own bad input),
a ticket's `sla` set inside its writes (24/7 and in business hours, paused, answered, re-targeted), breaches
recorded by the sweep exactly once (event, webhook, rule condition), and the search's SLA filters."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.admin_helpers import error_text
from tests.resource_tests import Resource, ResourceTests
from tickets.models import Ticket, TicketEvent
from tickets.rules.services import rule_create
from tickets.sla import apply, services, sweep
from tickets.sla.api import BusinessHoursViewSet, SlaPolicyViewSet
from tickets.sla.models import BusinessHours, SlaPolicy
from tickets.webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db

WEEK = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
TARGETS = {
    "0": {"firstResponseMinutes": 60, "nextResponseMinutes": 120, "resolutionMinutes": 480},
    "20": {"firstResponseMinutes": 15, "nextResponseMinutes": 30, "resolutionMinutes": 120},
}


def _hours(license, **fields):
    return services.business_hours_create(
        license=license,
        name=fields.pop("name", "Office"),
        timezone=fields.pop("timezone", "Europe/Warsaw"),
        week=fields.pop("week", WEEK),
        **fields,
    )


def _policy(license, **fields):
    return services.sla_policy_create(
        license=license, name=fields.pop("name", "Standard"), targets=fields.pop("targets", TARGETS), **fields
    )


class TestBusinessHoursResource(ResourceTests):
    resource = Resource(
        viewset=BusinessHoursViewSet,
        make=lambda license: _hours(license, name="Old").pk,
        create={
            "name": "Warsaw office",
            "timezone": "Europe/Warsaw",
            "week": WEEK,
            "holidays": ["2026-12-25"],
        },
        update={"name": "Warsaw", "holidays": ["2026-12-24", "2026-12-25"]},
        invalid=[
            ({}, "name"),
            ({"name": "x", "timezone": "Mars/Olympus", "week": WEEK}, "timezone"),
            ({"name": "x", "timezone": "UTC", "week": {"mon": [["17:00", "09:00"]]}}, "week"),
            (
                {"name": "x", "timezone": "UTC", "week": {"mon": [["09:00", "12:00"], ["11:00", "13:00"]]}},
                "week",
            ),
            ({"name": "x", "timezone": "UTC", "week": {"mon": [["9", "12:00"]]}}, "week"),
            ({"name": "x", "timezone": "UTC", "week": {"someday": [["09:00", "12:00"]]}}, "week"),
            ({"name": "x", "timezone": "UTC", "week": {}}, "week"),
            ({"name": "x", "timezone": "UTC", "week": WEEK, "holidays": ["2026-02-30"]}, "holidays"),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="Warsaw office",
        create_changes={"name": {"before": None, "after": "Warsaw office"}},
        update_changes={"name": {"before": "Warsaw office", "after": "Warsaw"}},
        publishes=True,
    )


class TestSlaPolicyResource(ResourceTests):
    resource = Resource(
        viewset=SlaPolicyViewSet,
        make=lambda license: _policy(license, name="Old").pk,
        create={
            "name": "VIP",
            "ordering": 1,
            "conditions": [{"type": "priority", "op": "is", "value": 20}],
            "targets": TARGETS,
            "businessHoursID": None,
        },
        update={"name": "VIP now", "ordering": 2},
        invalid=[
            ({}, "name"),
            ({"name": "x", "targets": {"30": {"resolutionMinutes": 60}}}, "targets"),
            ({"name": "x", "targets": {"0": {"resolutionMinutes": -5}}}, "targets"),
            ({"name": "x", "targets": {"0": {"replyMinutes": 5}}}, "targets"),
            ({"name": "x", "targets": {}, "businessHoursID": str(uuid.uuid4())}, "businessHoursID"),
            (
                {"name": "x", "targets": {}, "conditions": [{"type": "mood", "op": "is", "value": 1}]},
                "conditions",
            ),
            (
                {
                    "name": "x",
                    "targets": {},
                    "conditions": [{"type": "event", "op": "is", "value": "created"}],
                },
                "conditions",
            ),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="VIP",
        create_changes={"name": {"before": None, "after": "VIP"}},
        update_changes={"name": {"before": "VIP", "after": "VIP now"}},
        publishes=True,
    )


# --- bad input names the field and where in it -------------------------------------------------------------


def test_an_interval_ending_before_it_starts_is_named_by_day_and_index(owner):
    body = {"name": "x", "timezone": "UTC", "week": {"tue": [["08:00", "10:00"], ["12:00", "11:00"]]}}
    response = owner.client.post("/v1/businessHours", body, format="json")
    assert response.status_code == 400
    assert response.json()["details"] == {
        "week": {"tue": {"1": ["The interval ends before it starts (split a night shift at 24:00)."]}}
    }
    assert "week.tue[1]" in response.json()["error"]


def test_more_than_a_thousand_holidays_are_refused(owner):
    days = [(datetime(2020, 1, 1) + timedelta(days=i)).date().isoformat() for i in range(1001)]
    body = {"name": "x", "timezone": "UTC", "week": WEEK, "holidays": days}
    response = owner.client.post("/v1/businessHours", body, format="json")
    assert response.status_code == 400
    assert "holidays" in response.json()["details"]


def test_a_foreign_business_hours_id_is_a_400(owner, outsider):
    foreign = _hours(outsider.license)
    body = {"name": "x", "targets": TARGETS, "businessHoursID": str(foreign.pk)}
    response = owner.client.post("/v1/slaPolicies", body, format="json")
    assert response.status_code == 400
    assert response.json()["details"] == {
        "businessHoursID": [f"'{foreign.pk}' does not exist in this license."]
    }


def test_negative_minutes_are_named_by_priority_and_target(owner):
    body = {"name": "x", "targets": {"10": {"firstResponseMinutes": -1}}}
    response = owner.client.post("/v1/slaPolicies", body, format="json")
    assert response.status_code == 400
    assert list(response.json()["details"]["targets"]["10"]) == ["firstResponseMinutes"]


def test_business_hours_in_use_are_not_deleted(owner):
    hours = _hours(owner.license)
    _policy(owner.license, business_hours_id=hours.pk)
    response = owner.client.delete(f"/v1/businessHours/{hours.pk}")
    assert response.status_code == 409
    assert BusinessHours.objects.filter(pk=hours.pk).exists()


# --- a ticket's clocks ----------------------------------------------------------------------------------------

T0 = datetime(2026, 1, 12, 8, 0, tzinfo=UTC)  # Monday 09:00 in Warsaw (CET)


def _create(client, **fields):
    body = {"subject": "Order 1234", "requester": {"email": "jane@example.com"}, "message": {"text": "Hi"}}
    response = client.post("/v1/tickets", {**body, **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _patch(client, ticket_id, body):
    response = client.patch(f"/v1/tickets/{ticket_id}", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_ticket_without_a_policy_has_no_sla(owner):
    assert _create(owner.client)["sla"] is None


def test_a_new_ticket_gets_its_due_times_in_the_write(owner):
    policy = _policy(owner.license)
    with time_machine.travel(T0, tick=False):
        body = _create(owner.client)
    assert list(body)[list(body).index("silo") + 1] == "sla"
    assert body["sla"] == {
        "policyID": str(policy.pk),
        "firstResponseDueAt": "2026-01-12T09:00:00.000Z",
        "nextResponseDueAt": None,
        "resolutionDueAt": "2026-01-12T16:00:00.000Z",
        "breaches": [],
    }
    assert owner.client.get(f"/v1/tickets/{body['ID']}").json()["sla"] == body["sla"]


def test_the_webhooks_ticket_document_carries_the_sla_of_its_write(owner):
    _policy(owner.license)
    Webhook.objects.create(
        license=owner.license,
        name="new",
        url="https://example.com/h",
        event_type="tickets.create",
        secret="s",
    )
    body = _create(owner.client)
    [delivery] = WebhookDelivery.objects.filter(event_type="tickets.create")
    assert json.loads(delivery.body)["payload"]["ticket"]["sla"] == body["sla"] != None  # noqa: E711


def test_due_times_count_business_hours(owner):
    hours = _hours(owner.license, holidays=["2026-01-13"])
    _policy(owner.license, business_hours_id=hours.pk)
    # Monday 16:30 Warsaw: 30 min that day, Tuesday a holiday, Wednesday from 09:00 (08:00 UTC)
    with time_machine.travel(datetime(2026, 1, 12, 15, 30, tzinfo=UTC), tick=False):
        sla = _create(owner.client)["sla"]
    assert sla["firstResponseDueAt"] == "2026-01-14T08:30:00.000Z"
    assert sla["resolutionDueAt"] == "2026-01-14T15:30:00.000Z"  # 30 min + 7.5 h on Wednesday


def test_the_first_policy_whose_conditions_hold_applies(owner):
    _policy(owner.license, name="Default", ordering=2)
    vip = _policy(
        owner.license, name="VIP", ordering=1, conditions=[{"type": "priority", "op": "is", "value": 20}]
    )
    assert _create(owner.client, priority=20)["sla"]["policyID"] == str(vip.pk)
    assert _create(owner.client, priority=0)["sla"]["policyID"] != str(vip.pk)


def test_an_agent_reply_meets_the_first_response_and_a_client_message_restarts_the_next(owner):
    _policy(owner.license)
    with time_machine.travel(T0, tick=False):
        ticket = _create(owner.client)
    with time_machine.travel(T0 + timedelta(minutes=20), tick=False):
        sla = _patch(owner.client, ticket["ID"], {"message": {"text": "On it"}})["sla"]
    assert (sla["firstResponseDueAt"], sla["nextResponseDueAt"]) == (None, None)
    with time_machine.travel(T0 + timedelta(minutes=50), tick=False):
        body = {"message": {"text": "Any news?"}, "author": {"type": "client"}}
        sla = _patch(owner.client, ticket["ID"], body)["sla"]
    assert sla["nextResponseDueAt"] == "2026-01-12T10:50:00.000Z"  # + 120 min
    with time_machine.travel(T0 + timedelta(minutes=70), tick=False):
        sla = _patch(owner.client, ticket["ID"], body)["sla"]
    assert sla["nextResponseDueAt"] == "2026-01-12T11:10:00.000Z"  # restarted
    # a private note answers nobody
    with time_machine.travel(T0 + timedelta(minutes=80), tick=False):
        sla = _patch(owner.client, ticket["ID"], {"message": {"text": "hmm", "isPrivate": True}})["sla"]
    assert sla["nextResponseDueAt"] == "2026-01-12T11:10:00.000Z"


def test_pending_holds_the_clocks_and_open_resumes_them(owner):
    _policy(owner.license)
    with time_machine.travel(T0, tick=False):
        ticket = _create(owner.client)
    with time_machine.travel(T0 + timedelta(hours=1, minutes=-30), tick=False):
        sla = _patch(owner.client, ticket["ID"], {"status": "pending"})["sla"]
    assert (sla["firstResponseDueAt"], sla["resolutionDueAt"]) == (None, None)
    # three days later the customer's answer reopens it: what was left (30 min, 7.5 h) counts from now
    later = T0 + timedelta(days=3)
    with time_machine.travel(later, tick=False):
        sla = _patch(owner.client, ticket["ID"], {"status": "open"})["sla"]
    assert sla["firstResponseDueAt"] == "2026-01-15T08:30:00.000Z"
    assert sla["resolutionDueAt"] == "2026-01-15T15:30:00.000Z"


def test_a_priority_change_retargets_keeping_the_time_used(owner):
    _policy(owner.license)
    with time_machine.travel(T0, tick=False):
        ticket = _create(owner.client)
    with time_machine.travel(T0 + timedelta(minutes=10), tick=False):
        sla = _patch(owner.client, ticket["ID"], {"priority": 20})["sla"]
    # 10 of 15 minutes used: 5 left; resolution 10 of 120 used
    assert sla["firstResponseDueAt"] == "2026-01-12T08:15:00.000Z"
    assert sla["resolutionDueAt"] == "2026-01-12T10:00:00.000Z"


def test_solving_meets_the_responses_and_holds_the_resolution(owner):
    _policy(owner.license)
    with time_machine.travel(T0, tick=False):
        ticket = _create(owner.client)
    with time_machine.travel(T0 + timedelta(hours=2), tick=False):
        sla = _patch(owner.client, ticket["ID"], {"status": "solved", "message": {"text": "Done"}})["sla"]
    assert (sla["firstResponseDueAt"], sla["resolutionDueAt"]) == (None, None)
    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        sla = _patch(owner.client, ticket["ID"], {"status": "open"})["sla"]
    assert sla["resolutionDueAt"] == "2026-01-13T14:00:00.000Z"  # 6 h left from Tuesday 08:00 UTC


def test_a_ticket_no_policy_matches_any_more_loses_its_sla(owner):
    _policy(owner.license, conditions=[{"type": "priority", "op": "is", "value": 0}])
    ticket = _create(owner.client)
    assert ticket["sla"] is not None
    assert _patch(owner.client, ticket["ID"], {"priority": 10})["sla"] is None


def test_a_ticket_write_under_a_policy_costs_one_statement_more(owner):
    body = {"subject": "s", "requester": {"email": "a@example.com"}, "message": {"text": "t"}}
    owner.client.post("/v1/tickets", body, format="json")  # warm caches (the process's copy of the policies)
    with CaptureQueriesContext(connection) as without:
        owner.client.post("/v1/tickets", body, format="json")
    assert not any("tickets_slapolicy" in q["sql"] for q in without.captured_queries)  # the process's copy
    _policy(owner.license)
    with CaptureQueriesContext(connection) as first:
        owner.client.post("/v1/tickets", body, format="json")
    # a new policy drops every process's copy: read once again, then the clocks' UPDATE
    assert any("tickets_slapolicy" in q["sql"] for q in first.captured_queries)
    assert len(first) - len(without) <= 2
    with CaptureQueriesContext(connection) as with_policy:
        owner.client.post("/v1/tickets", body, format="json")
    assert not any("tickets_slapolicy" in q["sql"] for q in with_policy.captured_queries)
    assert len(with_policy) - len(without) <= 1  # the UPDATE


def test_a_change_of_policies_or_business_hours_reaches_the_next_write_of_the_same_process(owner):
    # given the license's policies in this process's copy
    hours = services.business_hours_create(
        license=owner.license, name="Office", timezone="Europe/Warsaw", week={"mon": [["09:00", "17:00"]]}
    )
    services.sla_policy_create(
        license=owner.license,
        name="p",
        targets={"0": {"firstResponseMinutes": 60}},
        business_hours_id=hours.pk,
    )
    ((policy, _),) = apply.policies(owner.license.pk)
    assert policy.business_hours.timezone == "Europe/Warsaw"
    # when the business hours change, then the next read has them, not the copy
    services.business_hours_update(business_hours=hours, timezone="Asia/Kathmandu")
    ((policy, _),) = apply.policies(owner.license.pk)
    assert policy.business_hours.timezone == "Asia/Kathmandu"
    # and a policy's change too
    services.sla_policy_update(sla_policy=policy, name="renamed")
    assert [p.name for p, _ in apply.policies(owner.license.pk)] == ["renamed"]


# --- breaches ---------------------------------------------------------------------------------------------


def test_the_sweep_records_a_breach_once_as_an_event_and_a_webhook(owner):
    policy = _policy(owner.license)
    Webhook.objects.create(
        license=owner.license,
        name="sla",
        url="https://example.com/h",
        event_type="tickets.events.sla",
        secret="s",
    )
    with time_machine.travel(T0, tick=False):
        ticket = _create(owner.client)
    # not yet
    assert sweep.record_breaches(now=T0 + timedelta(minutes=59)) == 0
    # the minute the first response runs out
    assert sweep.record_breaches(now=T0 + timedelta(minutes=60)) == 1
    assert sweep.record_breaches(now=T0 + timedelta(minutes=61)) == 0
    body = owner.client.get(f"/v1/tickets/{ticket['ID']}?eventsScope=all").json()
    assert body["sla"]["breaches"] == [{"metric": "firstResponse", "at": "2026-01-12T09:00:00.000Z"}]
    [event] = [e for e in body["events"] if e["type"] == "sla"]
    assert event["sla"] == {
        "metric": "firstResponse",
        "dueAt": "2026-01-12T09:00:00.000Z",
        "policyID": str(policy.pk),
    }
    assert event["author"]["type"] == "system"
    assert WebhookDelivery.objects.filter(event_type="tickets.events.sla").count() == 1
    # the resolution's breach later: one more
    assert sweep.record_breaches(now=T0 + timedelta(hours=9)) == 1
    assert TicketEvent.objects.filter(ticket_id=ticket["ID"], type="sla").count() == 2
    assert Ticket.objects.get(pk=ticket["ID"]).sla_due_at is None


def test_a_held_clock_does_not_breach(owner):
    _policy(owner.license)
    with time_machine.travel(T0, tick=False):
        ticket = _create(owner.client, status="pending")
    assert sweep.record_breaches(now=T0 + timedelta(days=30)) == 0
    assert Ticket.objects.get(pk=ticket["ID"]).sla["breaches"] == []


def test_a_rule_reacts_to_a_breach(owner):
    _policy(owner.license)
    rule_create(
        license=owner.license,
        name="Escalate",
        triggers=[{"type": "slaBreached", "op": "is", "value": "firstResponse"}],
        actions=[{"type": "setPriority", "value": 20}],
    )
    with time_machine.travel(T0, tick=False):
        ticket = _create(owner.client)
    assert ticket["priority"] == 0
    sweep.record_breaches(now=T0 + timedelta(minutes=61))
    assert Ticket.objects.get(pk=ticket["ID"]).priority == 20


def test_a_rule_condition_on_breaches_is_validated(owner):
    body = {"name": "x", "triggers": [{"type": "slaBreached", "op": "is", "value": "soon"}], "actions": []}
    response = owner.client.post("/v1/rules", body, format="json")
    assert response.status_code == 400
    assert "value" in response.json()["details"]["triggers"]["0"]


# --- search -----------------------------------------------------------------------------------------------


def test_search_by_breach_and_by_due_time(owner):
    _policy(owner.license)
    with time_machine.travel(T0, tick=False):
        late = _create(owner.client)
    with time_machine.travel(T0 + timedelta(hours=5), tick=False):
        fresh = _create(owner.client)
    _create(owner.client, priority=10)  # no targets for priority 10: tracked by no clock
    assert owner.client.get("/v1/tickets?slaBreached=Y")["X-Total-Results"] == "0"
    sweep.record_breaches(now=T0 + timedelta(hours=5))
    # the sweep's write moves the search's totals too (a cached 0 is not served again)
    assert owner.client.get("/v1/tickets?slaBreached=Y")["X-Total-Results"] == "1"

    def ids(query):
        response = owner.client.get(f"/v1/tickets?{query}")
        assert response.status_code == 200, response.content
        return {t["ID"] for t in response.json()}

    assert ids("slaBreached=Y") == {late["ID"]}
    assert late["ID"] not in ids("slaBreached=N")
    # the nearest due time: the late one's next clock (resolution 16:00 UTC), the fresh one's first response (14:00)
    assert ids("slaDueFrom=2026-01-12T13:59:00Z&slaDueTo=2026-01-12T14:01:00Z") == {fresh["ID"]}
    assert ids("slaDueFrom=2026-01-12T15:59:00Z&slaDueTo=2026-01-12T16:01:00Z") == {late["ID"]}
    response = owner.client.get("/v1/tickets?slaBreached=maybe")
    assert response.status_code == 400
    assert "slaBreached" in response.json()["details"]


def test_policies_are_not_deleted_with_their_tickets_clocks(owner):
    policy = _policy(owner.license)
    ticket = _create(owner.client)
    assert owner.client.delete(f"/v1/slaPolicies/{policy.pk}").status_code == 204
    assert not SlaPolicy.objects.exists()
    # its clocks stay until the ticket's next write (one that records an event), which finds no policy
    assert owner.client.get(f"/v1/tickets/{ticket['ID']}").json()["sla"]["policyID"] == str(policy.pk)
    assert _patch(owner.client, ticket["ID"], {"priority": 10})["sla"] is None


# --- the admin --------------------------------------------------------------------------------------------


def test_the_ticket_change_page_shows_the_sla_clock_and_the_dashboard_the_nearest_breach(owner, superuser):
    _policy(owner.license, name="Gold")
    ticket = _create(owner.client, subject="Broken printer")
    page = superuser.get(f"/admin/tickets/ticket/{ticket['ID']}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Policy: Gold" in html
    assert "First response" in html and "due " in html
    index = superuser.get("/admin/").content.decode()
    assert "Nearest SLA breach" in index
    assert "Broken printer" in index.split("Nearest SLA breach", 1)[1]


def test_the_admin_writes_business_hours_through_the_service(superuser, license):
    response = superuser.post(
        "/admin/tickets/businesshours/add/",
        {"license": license.pk, "name": "Office", "timezone": "Mars/Olympus", "week": '{"mon": [["09:00", "17:00"]]}',
         "holidays": "[]"},
    )  # fmt: skip
    assert response.status_code == 200  # the form again, the refusal by its field
    assert "Unknown time zone" in error_text(response), error_text(response)
    assert not BusinessHours.objects.exists()
    response = superuser.post(
        "/admin/tickets/businesshours/add/",
        {"license": license.pk, "name": "Office", "timezone": "Europe/Warsaw",
         "week": '{"mon": [["09:00", "17:00"]]}', "holidays": "[]"},
    )  # fmt: skip
    assert response.status_code == 302
    assert BusinessHours.objects.get().timezone == "Europe/Warsaw"
