"""What tickets/filters.py relies on of django-filter's internals, pinned: an upgrade that changes any of it
fails here, loudly, instead of silently sharing per-request state between searches.

TicketFilterSet keeps django-filter's constructor and changes only what it copies: its `base_filters` are
`SharedFilters`, whose deep copy is a dict of shallow copies sharing their form fields (bench/README.md,
session 6: 1.7 ms of CPU per search). That is safe as long as
1. `BaseFilterSet.__init__(data, queryset, *, request, prefix)` deep-copies `base_filters` and sets `model`
   and `parent` on the copies (and on nothing else);
2. `Filter.field` builds its form field once and caches it (`_field`), so the copies share it;
3. setting `Filter.method` binds a new FilterMethod to the filter it is set on, which resolves the method on
   that filter's `parent`.
"""

import copy
import inspect

import django_filters
from django.http import QueryDict
from django_filters.filters import FilterMethod
from django_filters.filterset import BaseFilterSet

from accounts.models import License
from tickets.filters import SharedFilters, TicketFilterSet
from tickets.models import Ticket


def _filterset(query=""):
    return TicketFilterSet(
        QueryDict(query), Ticket.objects.all(), license=License(pk=1, detected_languages=[])
    )


def test_the_constructor_takes_the_arguments_ticket_filter_set_passes_on():
    parameters = inspect.signature(BaseFilterSet.__init__).parameters
    assert [(name, p.kind, p.default) for name, p in parameters.items()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("data", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("queryset", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("request", inspect.Parameter.KEYWORD_ONLY, None),
        ("prefix", inspect.Parameter.KEYWORD_ONLY, None),
    ]


def test_the_constructor_deep_copies_the_base_filters_and_sets_model_and_parent_on_the_copies():
    # when
    filterset = _filterset()
    # then the class's filters are SharedFilters, copied per filterset, sharing their form fields
    shared = TicketFilterSet.__dict__["base_filters"]
    assert isinstance(shared, SharedFilters)
    assert list(filterset.filters) == list(shared)
    for name, filter_ in filterset.filters.items():
        assert filter_ is not shared[name]
        assert filter_.field is shared[name].field, name
        assert (filter_.model, filter_.parent) == (Ticket, filterset)
        assert not hasattr(shared[name], "parent"), name  # nothing per request on the shared filter


def test_a_form_field_is_built_once_and_cached():
    filter_ = django_filters.CharFilter(field_name="subject")
    assert filter_.field is filter_.field
    assert filter_._field is filter_.field


def test_setting_method_binds_a_filter_method_to_the_filter_it_is_set_on():
    # given a filter with a method, and a shallow copy of it
    original = django_filters.CharFilter(method="filter_it")
    copied = copy.copy(original)
    assert copied.filter.f is original  # copied with the original's binding
    # when
    copied.method = copied.method
    # then
    assert isinstance(copied.filter, FilterMethod) and copied.filter.f is copied
    assert original.filter.f is original


def test_two_searches_at_once_each_filter_with_their_own_parameters():
    # given two filtersets built one after the other from the same shared filters
    with_spam, without = _filterset("spam=true"), _filterset("")
    assert with_spam.is_valid() and without.is_valid()
    # then each method ran on its own filterset (filter_silo reads the `spam` parameter of its parent)
    assert with_spam.filters["silo"].filter.method.__self__ is with_spam
    assert "spam" in str(with_spam.qs.query) and "spam" not in str(without.qs.query)
