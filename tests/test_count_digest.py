"""A search's total is cached under `TicketFilterSet.count_digest` (its applied values), not a digest of its SQL:
two searches share a digest only when they count with the same SQL, whatever the clock, the license's languages
or its custom fields' types (issue 34)."""

import datetime

import pytest
import time_machine
from django.http import QueryDict

from tests.factories import CustomFieldFactory, TagFactory, TeamFactory
from tickets import selectors
from tickets.totals import reading

pytestmark = pytest.mark.django_db


def _digest_and_sql(license, query: str) -> tuple[str, tuple[str, str]]:
    filterset, _ = selectors.ticket_filterset(license, QueryDict(query))
    digest = filterset.count_digest()
    assert digest is not None
    sql, params, _ = reading._prepared(filterset.count_queryset(filterset.qs))
    return digest, (sql, repr(tuple(params)))  # (psycopg's Jsonb compares by identity)


def _assert_digests_follow_sql(pairs) -> None:
    """One digest, one SQL (one SQL under two digests only costs a second count)."""
    by_digest = {}
    for digest, sql in pairs:
        assert by_digest.setdefault(digest, sql) == sql


def test_it_gives_one_digest_to_one_sql(owner):
    # given
    license = owner.license
    team, tag, other_tag = (
        TeamFactory(license=license),
        TagFactory(license=license),
        TagFactory(license=license),
    )
    CustomFieldFactory(license=license, api_key="plan")
    CustomFieldFactory(license=license, api_key="seats", type="number")
    CustomFieldFactory(license=license, api_key="due", type="date")
    queries = [
        "",
        "status=open",
        "status=solved",
        "sortBy=updatedAt",
        "page=2",
        f"teamIDs[]={team.pk}",
        f"teamIDs[]={team.pk}&status=pending",
        f"teamIDs[]={team.pk}&hasTags=N",
        f"tagIDs[]={tag.pk}",
        f"tagIDs[]={tag.pk}&tagIDs[]={other_tag.pk}",
        f"tagIDs[]={other_tag.pk}&tagIDs[]={tag.pk}",
        "priority=10",
        "priority=10&priorityOp=gte",
        "query=refund",
        "query=refund delayed",
        "customFields.plan=pro",
        "customFields.seats=12",
        "customFields.seats.from=3",
        "customFields.due.from=-0D",
        "customFields.due.from=-0D&timezone=Europe/Warsaw",
        "createdDateFrom=-30d",
        "createdDateFrom=-1D&createdDateTo=-0D",
        "createdDateFrom=-1D&createdDateTo=-0D&timezone=Europe/Warsaw",
        "spam=true",
        "silo=spam",
        "hasAssignee=N&rating=bad&language[]=pl&language[]=es",
    ]
    pairs = []
    # when: each search at two readings of the clock, a second apart and a day apart
    for moment in ("2026-05-01T10:00:00Z", "2026-05-01T10:00:01Z", "2026-05-02T10:00:00Z"):
        with time_machine.travel(datetime.datetime.fromisoformat(moment), tick=False):
            pairs += [_digest_and_sql(license, query) for query in queries]
    # then
    _assert_digests_follow_sql(pairs)
    assert len({digest for digest, _ in pairs}) > len(queries)  # the relative dates moved with the clock


def test_it_changes_with_the_license_languages_and_a_custom_fields_type(owner):
    # given
    license = owner.license
    field = CustomFieldFactory(license=license, api_key="seats")
    before = [_digest_and_sql(license, q) for q in ("query=payment", "customFields.seats=12")]
    # when
    license.detected_languages = ["de"]
    field.type = "number"
    field.save()
    after = [_digest_and_sql(license, q) for q in ("query=payment", "customFields.seats=12")]
    # then
    _assert_digests_follow_sql(before + after)
    assert {d for d, _ in before}.isdisjoint({d for d, _ in after})
