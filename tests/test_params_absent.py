"""helpdesk.api.forms.cleaned_without_form copies the value of a parameter the query lacks instead of cleaning it
again (issue 34): the cleaned values are those of every field cleaned, parameter by parameter, as before."""

import uuid

import pytest
from django.core.exceptions import ValidationError
from django.http import QueryDict

from helpdesk.api.forms import cleaned_without_form
from helpdesk.api.pagination import _params_form
from tickets.filters import TicketFilterSet, parse_params
from tickets.selectors import SORT_FIELDS

ID = str(uuid.uuid4())
QUERIES = [
    "",
    "status=open&sortBy=lastMessageAt",
    "status=",
    "status=bogus",
    "hasTags=N",
    "hasTags=maybe",
    "createdDateFrom=-30d&timezone=Europe/Warsaw",
    "createdDateFrom=-30x",
    "timezone=",
    "priority=10&priorityOp=gte",
    "priority=11",
    "rating=none&eventsScope=all&silo=spam&spam=true",
    f"teamIDs[]={ID}&teamIDs[]={ID}&tagIDs[]={ID}&language[]=en&language[]=pl",
    "teamIDs[]=nope",
    "language[]=xx",
    f"assignment.agentID=none&assignment.teamID={ID}&follower={ID}&parentTicketID={ID}",
    "customFields.plan=gold&customFields.due.from=-1D&customFieldsExist[]=plan",
    "query=payment&subject=printer&shortID=ABC-1",
    "pageSize=100&page=2&order=asc",
    "pageSize=0",
    "page=x&sortBy=updatedAt",
    "order=sideways",
]


def _every_field_cleaned(fields, data):
    """cleaned_without_form as it was: each field's widget reads its value and the field cleans it."""
    cleaned = {}
    try:
        for name, field in fields.items():
            cleaned[name] = field.clean(field.widget.value_from_datadict(data, {}, name))
    except ValidationError:
        return None
    return cleaned


@pytest.mark.parametrize("query", QUERIES)
def test_the_filters_values_are_those_of_every_field_cleaned(query):
    # given
    data = QueryDict(query)
    parse_params(TicketFilterSet, QueryDict(""))  # the fields built, and their absent values computed
    fields = TicketFilterSet._parse_fields
    # when
    cleaned = parse_params(TicketFilterSet, data)
    # then: the same values, in the same order (the totals' digest is made in it)
    expected = _every_field_cleaned(fields, data)
    assert cleaned == expected
    assert cleaned is None or list(cleaned.items()) == list(expected.items())


@pytest.mark.parametrize("query", QUERIES)
def test_the_pages_values_are_those_of_every_field_cleaned(query):
    # given
    fields = _params_form(tuple(SORT_FIELDS), 100).base_fields
    data = QueryDict(query)
    # then
    assert cleaned_without_form(fields, data) == _every_field_cleaned(fields, data)
