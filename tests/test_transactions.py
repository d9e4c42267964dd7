"""The unit of work (helpdesk.transactions): before-commit callbacks, and the audit entries it writes."""

import pytest
from django.db import connection, transaction
from django.db.models.signals import pre_save
from django.test.utils import CaptureQueriesContext

from accounts import services
from accounts.models import Team
from audit.models import AuditEntry
from helpdesk.transactions import FLUSH, before_commit, in_open_unit, on_rollback, unit_of_work
from tests.audit_helpers import entries_written
from tests.factories import AgentFactory, TeamFactory


def test_callbacks_run_before_the_commit_inside_the_transaction_in_order(license):
    # given
    ran = []
    # when
    with unit_of_work():
        team = TeamFactory(license=license, name="Before")
        before_commit(lambda: ran.append(("first", Team.objects.get(pk=team.pk).name)))
        Team.objects.filter(pk=team.pk).update(name="After")
        before_commit(lambda: ran.append(("second", transaction.get_connection().in_atomic_block)))
        assert ran == []
    # then
    assert ran == [("first", "After"), ("second", True)]


def test_a_callback_of_a_nested_unit_runs_when_the_outermost_one_commits(license):
    ran = []
    with unit_of_work():
        with unit_of_work():
            before_commit(lambda: ran.append("inner"))
        assert ran == []
    assert ran == ["inner"]


def test_a_failed_unit_drops_its_callbacks(license):
    ran = []
    with pytest.raises(RuntimeError), unit_of_work():
        before_commit(lambda: ran.append("never"))
        raise RuntimeError("boom")
    assert ran == []


def test_a_failing_callback_rolls_the_change_back(license):
    # given
    team = TeamFactory(license=license, name="Before")

    def fail():
        raise RuntimeError("refused before the commit")

    # when
    with pytest.raises(RuntimeError), unit_of_work():
        Team.objects.filter(pk=team.pk).update(name="After")
        before_commit(fail)
    # then
    assert Team.objects.get(pk=team.pk).name == "Before"


def test_a_callback_may_register_another_one(license):
    ran = []
    with unit_of_work():
        before_commit(lambda: before_commit(lambda: ran.append("second")) or ran.append("first"))
    assert ran == ["first", "second"]


def test_a_last_callback_runs_after_every_other_one_even_those_registered_after_it(license):
    ran = []
    with unit_of_work():
        before_commit(lambda: ran.append("last"), last=True)
        before_commit(lambda: before_commit(lambda: ran.append("third")) or ran.append("second"))
        before_commit(lambda: ran.append("first"))
    assert ran == ["second", "first", "third", "last"]


def test_flushes_run_after_every_consequence_and_before_the_last(license):
    ran = []
    with unit_of_work():
        before_commit(lambda: ran.append("last"), last=True)
        before_commit(lambda: before_commit(lambda: ran.append("flush 2"), stage=FLUSH) or ran.append("flush 1"),
                      stage=FLUSH)  # fmt: skip
        before_commit(
            lambda: before_commit(lambda: ran.append("consequence 2")) or ran.append("consequence 1")
        )
    assert ran == ["consequence 1", "consequence 2", "flush 1", "flush 2", "last"]


def test_on_rollback_runs_when_its_nested_unit_or_one_around_it_rolls_back(license):
    ran = []
    with unit_of_work():
        on_rollback(lambda: ran.append("outermost"))  # its unit commits: never run
        with unit_of_work():
            on_rollback(lambda: ran.append("kept"))  # committed to its savepoint: joins the outermost
        with pytest.raises(RuntimeError), unit_of_work():
            on_rollback(lambda: ran.append("second"))
            with unit_of_work():
                on_rollback(lambda: ran.append("first"))  # released, then rolled back with the unit around it
            raise RuntimeError("rolled back")
        with unit_of_work():
            on_rollback(lambda: ran.append("marked"))
            transaction.set_rollback(True)
        assert ran == ["first", "second", "marked"]
    assert ran == ["first", "second", "marked"]
    # and the outermost unit rolled back runs its own and those of the units it holds, a failing one logged
    ran.clear()
    with pytest.raises(RuntimeError), unit_of_work():
        on_rollback(lambda: ran.append("outer"))
        on_rollback(lambda: 1 / 0)
        with unit_of_work():
            on_rollback(lambda: ran.append("inner"))
        raise RuntimeError("rolled back")
    assert ran == ["inner", "outer"]
    with pytest.raises(transaction.TransactionManagementError):
        on_rollback(lambda: None)


def test_the_search_totals_lock_last_after_the_audit_whatever_registered_first(license):
    # given a write whose totals' bookkeeping starts before anything is audited (a ticket write declares its
    # tickets first), and the statements the transaction runs
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tickets import totals
    from tickets.models import SearchGeneration

    generation_table = SearchGeneration._meta.db_table
    with CaptureQueriesContext(connection) as queries, unit_of_work():
        totals.changing(license.pk)
        TeamFactory(license=license, name="Audited")
    # then the generation is raised after the audit's chain head is written
    statements = [query["sql"] for query in queries.captured_queries]
    raised = max(i for i, sql in enumerate(statements) if generation_table in sql)
    chained = max(i for i, sql in enumerate(statements) if "audit_auditchainhead" in sql)
    assert chained < raised


def test_a_service_in_the_open_unit_makes_no_savepoint_and_its_callbacks_run_at_the_commit(license):
    ran = []

    @unit_of_work
    def rename(*, team, name):
        before_commit(lambda: ran.append(name))
        team.name = name
        team.save(update_fields=["name"])

    team = TeamFactory(license=license)
    with unit_of_work():
        with CaptureQueriesContext(connection) as queries:
            in_open_unit(rename, team=team, name="Kept")
        assert ran == []
    assert queries.captured_queries and not [
        query["sql"] for query in queries.captured_queries if "SAVEPOINT" in query["sql"].upper()
    ]
    assert ran == ["Kept"] and Team.objects.get(pk=team.pk).name == "Kept"
    # and a failure inside it rolls the whole unit back
    with pytest.raises(RuntimeError), unit_of_work():
        team.name = "Gone"
        team.save(update_fields=["name"])
        in_open_unit(lambda **kwargs: (_ for _ in ()).throw(RuntimeError("boom")))
    assert Team.objects.get(pk=team.pk).name == "Kept"
    # and outside a unit it is refused
    with pytest.raises(transaction.TransactionManagementError):
        in_open_unit(rename, team=team, name="Never")


def test_before_commit_outside_a_unit_of_work_is_refused(db):
    with pytest.raises(transaction.TransactionManagementError), transaction.atomic():
        before_commit(lambda: None)


def test_a_unit_of_work_decorates_a_function_and_each_call_is_its_own_unit(license):
    ran = []

    @unit_of_work
    def rename(team, name):
        before_commit(lambda: ran.append(name))
        team.name = name
        team.save()

    team = TeamFactory(license=license)
    rename(team, "One")
    rename(team, "Two")
    assert ran == ["One", "Two"]


def test_a_change_and_its_relations_in_one_unit_are_one_audit_entry(license):
    # given
    agent = AgentFactory(license=license)
    team = TeamFactory(license=license)
    # when
    with entries_written() as written, unit_of_work():
        agent.name = "Renamed"
        agent.save()
        agent.teams.add(team)
    # then
    entry = written.one()
    assert entry.action == "update"
    assert set(entry.changes) == {"name", "teamIDs"}


def test_an_audited_write_outside_any_unit_is_written_after_its_statement_not_lost(license):
    # given: a bare atomic block (a write path that forgot its unit of work)
    team = TeamFactory(license=license, name="Before")
    # when
    with entries_written() as written, transaction.atomic():
        Team.objects.get(pk=team.pk).save()  # nothing changed: no entry
        team.name = "After"
        team.save()
        # then: already written, inside the block's transaction
        assert AuditEntry.objects.filter(object_id=str(team.pk), action="update").count() == 1
    assert written.one().changes == {"name": {"before": "Before", "after": "After"}}


def test_a_rolled_back_bare_block_takes_its_statements_entries_with_it(license):
    team = TeamFactory(license=license, name="Before")
    with entries_written() as written, pytest.raises(RuntimeError), transaction.atomic():
        services.team_update(team=team, name="After")
        team.name = "Again"
        team.save()
        raise RuntimeError("boom")
    assert written == []


def test_django_is_not_patched():
    # the unit of work wraps transaction.atomic(); Atomic itself is Django's own
    assert transaction.Atomic.__exit__.__module__ == "django.db.transaction"
    assert transaction.Atomic.__exit__.__qualname__ == "Atomic.__exit__"


def test_outside_a_unit_a_failed_statement_leaves_no_stale_before(license):
    # given: a save outside any unit of work that fails after the audit noted its "before" (a later pre_save
    # receiver refuses it)
    team = TeamFactory(license=license, name="First")

    def refuse(**kwargs):
        raise RuntimeError("the save failed")

    pre_save.connect(refuse, sender=Team, dispatch_uid="refuse")
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            team.name = "Never"
            team.save()
    finally:
        pre_save.disconnect(sender=Team, dispatch_uid="refuse")
    # and the team renamed meanwhile in a unit of work
    services.team_update(team=Team.objects.get(pk=team.pk), name="Second")
    # when it changes again outside a unit
    with entries_written() as written:
        team = Team.objects.get(pk=team.pk)
        team.name = "Third"
        team.save()
    # then the entry's "before" is what the row held, not what the failed statement saw
    assert written.one().changes == {"name": {"before": "Second", "after": "Third"}}
