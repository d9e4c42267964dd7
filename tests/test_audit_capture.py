"""Capture rules (rollback, no-op, coalescing, relations) and the authors outside requests."""

import pytest
from django.core.management import call_command
from django.db import transaction

from accounts import services
from accounts.models import License, Team
from audit.context import as_payment_provider
from helpdesk.celery import app as celery_app
from helpdesk.context import HELPDESK_SYSTEM, PAYMENT_PROVIDER, SCHEDULED_TASK, SYSTEM_ACTOR_ID
from tests.audit_helpers import assert_license_creation, entries_written
from tests.factories import AgentFactory, TeamFactory


def test_a_rolled_back_change_leaves_no_entry(license):
    # given
    team = TeamFactory(license=license, name="Before")
    # when
    with entries_written() as written, pytest.raises(RuntimeError), transaction.atomic():
        services.team_update(team=team, name="Renamed")
        raise RuntimeError("boom")
    # then
    assert written == []
    assert Team.objects.get(pk=team.pk).name == "Before"


def test_a_rolled_back_savepoint_leaves_only_the_outer_change(license):
    # given
    first, second = TeamFactory(license=license), TeamFactory(license=license)
    # when
    with entries_written() as written, transaction.atomic():
        services.team_update(team=first, name="Kept")
        try:
            with transaction.atomic():
                services.team_update(team=second, name="Dropped")
                raise RuntimeError("boom")
        except RuntimeError:
            pass
    # then
    assert [(e.object_id, e.changes["name"]["after"]) for e in written] == [(str(first.pk), "Kept")]


def test_a_save_that_changes_nothing_writes_nothing(license):
    # given
    team = TeamFactory(license=license)
    # when the stamps change but nothing else
    with entries_written() as written:
        services.team_update(team=team, name=team.name)
        Team.objects.get(pk=team.pk).save()
    # then
    assert written == []


def test_a_change_without_context_is_authored_by_the_helpdesk_system(license):
    # when
    with entries_written() as written:
        services.team_create(license=license, name="Nightly")
    # then
    entry = written.one()
    assert (entry.author_type, entry.author_id, entry.author_ip) == (HELPDESK_SYSTEM, SYSTEM_ACTOR_ID, "")
    assert entry.author_account_id is None


def test_payment_events_are_authored_by_the_payment_provider(license):
    # when
    with entries_written() as written, as_payment_provider():
        services.license_update(license=license, data={"settings": {"companyName": "Paid Inc."}})
    # then
    assert written.one().author_type == PAYMENT_PROVIDER


@celery_app.task(name="tests.rename_team")
def rename_team(team_id, name):
    services.team_update(team=Team.objects.get(pk=team_id), name=name)


def test_celery_tasks_are_authored_as_scheduled_tasks(license):
    # given
    team = TeamFactory(license=license)
    # when the task runs (in-process, with the worker's prerun/postrun signals)
    with entries_written() as written:
        rename_team.apply(args=[str(team.pk), "By task"])
    # then
    assert written.one().author_type == SCHEDULED_TASK


def test_template_service_writes_are_audited(license):
    from templates_app import services as template_services

    with entries_written() as written:
        template = template_services.template_create(license=license, name="Svc", content={"text": "a"})
        template_services.template_update(template=template, name="Svc 2")
        template_services.template_delete(template=template)
    assert [(e.action, e.target, e.entity_name) for e in written] == [
        ("create", "emailTemplates", "Svc"),
        ("update", "emailTemplates", "Svc 2"),
        ("delete", "emailTemplates", "Svc 2"),
    ]
    assert written[1].changes == {"name": {"before": "Svc", "after": "Svc 2"}}


def test_create_license_writes_one_entry_per_created_object(db):
    # when
    with entries_written() as written:
        call_command(
            "create_license", "--owner-email", "boss@example.com", "--company", "Boss Inc.", "--json"
        )
    # then the license (with its defaults), its default team and template, and its owner: no token hash anywhere
    license = License.objects.get(agents__email="boss@example.com")
    assert_license_creation(written, license, HELPDESK_SYSTEM)
    assert not any("token" in str(e.changes).lower() for e in written)


def test_issuing_a_token_is_not_an_audited_license_change(owner):
    # when
    with entries_written() as written:
        call_command("issue_token", "--email", owner.account.email, "--json")
    # then (tokens belong to an account, not to a license; their hashes never reach the log)
    assert written == []


def test_a_membership_changed_from_the_unaudited_side_is_in_each_agents_entry(license):
    # given (Team does not audit its members; Agent audits teamIDs)
    team = TeamFactory(license=license)
    first, second = AgentFactory(license=license), AgentFactory(license=license)
    # when
    with entries_written() as written:
        with transaction.atomic():
            team.agents.add(first, second)
        with transaction.atomic():
            team.agents.clear()
    # then one entry per agent and change, none for the team
    added, removed = written[:2], written[2:]
    for entries, before, after in ((added, [], [str(team.pk)]), (removed, [str(team.pk)], [])):
        assert sorted(e.object_id for e in entries) == sorted([str(first.pk), str(second.pk)])
        assert all(e.target == "agents" for e in entries)
        assert all(e.changes == {"teamIDs": {"before": before, "after": after}} for e in entries)


def test_an_autoassignment_change_is_audited_on_the_side_it_was_made_from(license):
    # given (both sides audit the relation)
    team, agent = TeamFactory(license=license), AgentFactory(license=license)
    # when
    with entries_written() as written:
        services.agent_update(agent=agent, autoassignment_teams=[team])
    # then only the agent's entry
    entry = written.one()
    assert (entry.target, entry.changes) == (
        "agents",
        {"autoassignmentTeamIDs": {"before": [], "after": [str(team.pk)]}},
    )


def test_renewals_are_authored_by_the_scheduled_task(owner):
    import datetime

    import time_machine

    from billing.tasks import renew_subscriptions

    # given a subscription whose period has ended
    subscription_id = owner.client.post(
        "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
    ).json()["subscriptionID"]
    # when the renewal task runs after the period
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=40)
    with time_machine.travel(later, tick=False), entries_written() as written:
        renew_subscriptions.apply()
    # then every step it took is authored by the scheduled task
    assert written and all(e.object_id == subscription_id for e in written)
    assert all(e.author_type == SCHEDULED_TASK and e.author_ip == "" for e in written)
    assert "currentPeriodStartedAt" in written[-1].changes
