"""`TicketFilterSet`: the declarative allowlist of ticket search parameters (`GET /v1/tickets`).

Parameter names are the contract's, letter for letter, including `[]` and `.` (`teamIDs[]`, `assignment.agentID`):
such names cannot be Python attributes, so they are declared through the class namespace (`locals().update`),
which the FilterSet metaclass reads like any other declaration. Every invalid value is a 400 naming the
parameter (the form's errors, raised by DjangoFilterBackend). Absent parameters filter nothing, except `status`
(absent: `open`) and `silo` (absent: `tickets`). Pagination parameters belong to the paginator.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import re
import uuid

import django_filters
from django import forms
from django.db import connection
from django.db.models import BooleanField, Expression, Q
from django.utils import timezone as dj_timezone
from django_filters.constants import EMPTY_VALUES
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework.exceptions import ValidationError

from accounts.models import Agent, Team
from helpdesk.api import relative_dates
from helpdesk.api.filtersets import StrictFilterSet
from helpdesk.api.forms import cleaned_without_form, shared_fields
from helpdesk.api.relative_dates import RelativeDateRange, TimezoneFilter
from tickets import search
from tickets.custom_fields.models import CustomField
from tickets.models import PRIORITIES, SILOS, STATUSES, Tag, Ticket, TicketSearchCopy, TicketTeam

NONE = "none"
FLAGS = {"Y": True, "1": True, "N": False, "0": False}
PRIORITY_OPS = {"eq": "exact", "gt": "gt", "lt": "lt", "gte": "gte", "lte": "lte"}
RATINGS = ["good", "bad", "none", "rated"]
CUSTOM_FIELDS_PREFIX = "customFields."
API_KEY = re.compile(r"[A-Za-z0-9_-]{1,100}")
MAX_LIST_ITEMS = 100
_UUID_ARRAY = {"type": "array", "items": {"type": "string", "format": "uuid"}}
_STR_ARRAY = {"type": "array", "items": {"type": "string"}}
# In every total's cache key (count_digest): change it when the SQL a filter compiles to changes.
COUNT_KEY_VERSION = "filters-1"

# --- form fields ------------------------------------------------------------------------------------------


class ChoiceWithDefault(forms.ChoiceField):
    """An enum; absent → `default` (present but empty is invalid like any other wrong value)."""

    def __init__(self, *, choices, default=None, **kwargs):
        super().__init__(choices=[(c, c) for c in choices], required=False, **kwargs)
        self.default = default

    def clean(self, value):
        if value is None:
            return self.default
        if value == "":
            raise forms.ValidationError(f"Must be one of: {', '.join(str(c) for c, _ in self.choices)}.")
        return super().clean(value)


class BooleanParam(forms.Field):
    TRUE, FALSE = {"true", "1", "y", "yes"}, {"false", "0", "n", "no"}

    def clean(self, value):
        if value is None:
            return None
        lowered = value.strip().lower()
        if lowered in self.TRUE:
            return True
        if lowered in self.FALSE:
            return False
        raise forms.ValidationError("Must be true or false.")


class FlagParam(forms.Field):
    """hasAssignee/hasParent/hasTags: `Y`, `N`, `0`, `1`."""

    def clean(self, value):
        if value is None:
            return None
        if value not in FLAGS:
            raise forms.ValidationError("Must be one of: Y, N, 0, 1.")
        return FLAGS[value]


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        raise forms.ValidationError(f"'{value}' is not a valid UUID.") from None


class UUIDParam(forms.Field):
    """A UUID, or also `none` when `allow_none`."""

    def __init__(self, *, allow_none=False, **kwargs):
        super().__init__(required=False, **kwargs)
        self.allow_none = allow_none

    def clean(self, value):
        if value is None:
            return None
        if self.allow_none and value == NONE:
            return NONE
        return _uuid(value)


class ListParam(forms.Field):
    """An array parameter (`name[]=a&name[]=b`): each item validated by `item`; absent → None."""

    widget = forms.MultipleHiddenInput

    def __init__(self, *, item, **kwargs):
        super().__init__(required=False, **kwargs)
        self.item = item

    def clean(self, value):
        if not value:
            return None
        if len(value) > MAX_LIST_ITEMS:
            raise forms.ValidationError(f"At most {MAX_LIST_ITEMS} values.")
        return list(dict.fromkeys(self.item(v) for v in value))


def _language(value: str) -> str:
    if value not in search.LANGUAGE_CHOICES:
        raise forms.ValidationError(f"'{value}' is not a language code of the spec's list (or 'none').")
    return value


def _api_key(value: str) -> str:
    if not API_KEY.fullmatch(value):
        raise forms.ValidationError(f"'{value}' is not a custom field apiKey.")
    return value


class CustomFieldsWidget(forms.Widget):
    """Collects every `customFields.<apiKey>=<value>` of the query string as (apiKey, value) pairs."""

    def value_from_datadict(self, data, files, name):
        prefix = name + "."
        pairs = [
            (key[len(prefix) :], value)
            for key in data
            if key.startswith(prefix)
            for value in data.getlist(key)
        ]
        return pairs or None


RANGE_SUFFIXES = (".from", ".to")


class CustomFieldsParam(forms.Field):
    """(apiKey, suffix, value) triples: `customFields.<apiKey>` exact (suffix ""), `.from` / `.to` a range."""

    widget = CustomFieldsWidget

    def clean(self, value):
        if not value:
            return None
        triples = []
        for key, text in value:
            suffix = next((s for s in RANGE_SUFFIXES if key.endswith(s)), "")
            triples.append((_api_key(key[: len(key) - len(suffix)]), suffix, text))
        return triples


def _number(param: str, text: str) -> int | float:
    try:
        number = float(text)
    except ValueError:
        raise ValidationError({param: ["Expected a number."]}) from None
    if not math.isfinite(number):
        raise ValidationError({param: ["Expected a number."]})
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _custom_value(param: str, kind: str | None, text: str):
    """The JSON value `customFields.<apiKey>=<text>` stands for, by the field's type."""
    if kind == "number":
        return _number(param, text)
    if kind == "checkbox":
        if text.lower() not in BooleanParam.TRUE | BooleanParam.FALSE:
            raise ValidationError({param: ["Must be true or false."]})
        return text.lower() in BooleanParam.TRUE
    return text


# --- filters ----------------------------------------------------------------------------------------------


class ParamFilter(django_filters.Filter):
    """A filter whose form field is given as an instance factory (so each carries its own options)."""

    def __init__(self, field, *args, **kwargs):
        self._field_factory = field
        super().__init__(*args, **kwargs)

    @property
    def field(self):
        if not hasattr(self, "_field"):
            self._field = self._field_factory()
            self._field.label = self.field_name
        return self._field


class Linked(Expression):
    """`EXISTS (SELECT 1 FROM <ticket's many-to-many table> WHERE it links the ticket [to one of ids])`.

    What `Exists(Ticket.tags.through.objects.filter(ticket_id=OuterRef("pk"), ...))` compiles to, with
    the same plan, without its cost: Exists resolves and compiles a whole subquery, and a search compiles its
    conditions twice (the count's cache key, then the page). Measured against Exists (session 6, bench/README.md):
    0.7 ms of CPU saved for `hasTags=N`, 1.0-1.4 ms for two `tagIDs[]`, 0.4-0.6 ms for one `teamIDs[]`, i.e.
    7-25% of such a request's CPU, so it stays. Negate it with `~`.
    """

    output_field = BooleanField()
    conditional = True

    def __init__(self, relation: str, ids=(), alias=None):
        super().__init__()
        self.relation, self.ids, self.alias = relation, tuple(ids), alias

    def resolve_expression(self, query=None, allow_joins=True, reuse=None, summarize=False, for_save=False):
        clone = self.copy()
        clone.alias = query.get_initial_alias()  # the tickets table of the query that filters
        return clone

    def relabeled_clone(self, change_map):
        clone = self.copy()
        clone.alias = change_map.get(self.alias, self.alias)
        return clone

    def get_group_by_cols(self):
        return []

    def as_sql(self, compiler, connection):
        field = Ticket._meta.get_field(self.relation)
        quote = connection.ops.quote_name
        table, target = quote(field.m2m_db_table()), quote(field.m2m_reverse_name())
        sql = (
            f"EXISTS (SELECT 1 FROM {table} WHERE {table}.{quote(field.m2m_column_name())} = "
            f"{compiler.quote_name_unless_alias(self.alias)}.{quote(Ticket._meta.pk.column)}"
        )
        related_pk = field.related_model._meta.pk
        params = [related_pk.get_db_prep_value(pk, connection) for pk in self.ids]
        if len(params) == 1:
            sql += f" AND {table}.{target} = %s"
        elif params:
            sql += f" AND {table}.{target} IN ({', '.join(['%s'] * len(params))})"
        return sql + ")", params


class SharedFilters(dict):
    """A FilterSet's `base_filters` whose deep copy is a dict of shallow copies sharing their form fields.

    django-filter's `BaseFilterSet.__init__` deep-copies `base_filters` per request, and so every filter's form
    field, then sets each copy's `model` and `parent`. These filters keep no per-request state but those two,
    and their form fields, built once from the class alone (no request-dependent queryset, as a
    ModelChoiceFilter would have), none while cleaning, so shallow copies will do; a copy's `method` is set
    again so that its FilterMethod resolves the method on the copy's own parent. Measured (session 6,
    bench/README.md): django-filter's own copies and form class cost 1.7 ms more CPU per search, about a third
    of the request; the shared form fields alone 0.7-0.8 ms. What this relies on of django-filter (the deep
    copy in the constructor, `Filter.field` cached once built, `Filter.method` binding a FilterMethod to the
    filter it is set on) is pinned by tests/test_filter_internals.py.
    """

    def __deepcopy__(self, memo):
        copies = {}
        for name, shared in self.items():
            # What copy.copy makes of these plain objects (a new instance, the same __dict__), without its
            # generic __reduce_ex__ path. Measured (issue 34, 3x2,000 copies alternately, process CPU): the 41
            # filters' copies 62-64 us -> 24-26 us per search (~0.08 M instructions of ~9 M).
            filter_ = object.__new__(type(shared))
            filter_.__dict__.update(shared.__dict__)
            if filter_.method is not None:
                filter_.method = filter_.method  # a FilterMethod bound to this copy
            copies[name] = filter_
        return copies


class ParsedForm:
    """What a TicketFilterSet reads of its form (`is_valid`, `errors`, `cleaned_data`) when `parse_params`
    accepted every parameter: the values the form would have cleaned, without the form."""

    errors: dict = {}

    def __init__(self, cleaned_data: dict):
        self.cleaned_data = cleaned_data

    def is_valid(self) -> bool:
        return True


def parse_params(filterset_class, data) -> dict | None:
    """The cleaned value of every filter of `filterset_class` from the query `data`, or None if any is invalid.

    What the FilterSet's form does, with the declared filters' own form fields (helpdesk.api.forms
    `cleaned_without_form`), without building a form and its bound fields per request. On an invalid value
    the caller builds the form after all, so a 400 says exactly what it said. Measured (bench/README.md,
    issue 34, bench/cpu.py --instructions, 10 requests): the inbox search 10.40 M -> 9.88 M instructions.
    """
    fields = filterset_class.__dict__.get("_parse_fields")
    if fields is None:
        fields = {name: filter_.field for name, filter_ in filterset_class.base_filters.items()}
        filterset_class._parse_fields = fields
    return cleaned_without_form(fields, data)


def _share_filters(filterset_class) -> None:
    """On first use: the class's form fields built, once, and its `base_filters` made SharedFilters."""
    if isinstance(filterset_class.__dict__.get("base_filters"), SharedFilters):
        return
    for filter_ in filterset_class.base_filters.values():
        filter_.field  # noqa: B018 - builds and caches the form field
    filterset_class.base_filters = SharedFilters(filterset_class.base_filters)


def count_digest(data: dict, now: datetime.datetime | None, recorded: list) -> str | None:
    """`TicketFilterSet.count_digest` of the cleaned values `data`, the clock reading `now` its RelativeDates
    resolve at (None: not resolved) and the parts its filters `recorded` (`_count_key_parts`)."""
    tz = data.get("timezone") or datetime.UTC
    parts = [COUNT_KEY_VERSION]
    for name, value in data.items():
        if value in EMPTY_VALUES or name in TicketFilterSet.NOT_COUNTED:
            continue
        if isinstance(value, relative_dates.RelativeDate):
            if now is None:  # not resolved by its filter: no moment to name
                return None
            value = value.resolve(tz=tz, now=now)
        parts.append((name, value))
    parts += recorded
    text = repr(parts)
    if " at 0x" in text:
        return None
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


class TicketFilterSet(StrictFilterSet):
    prefix_params = ("customFields",)  # customFields.<apiKey>=<value>
    bracket_synonyms = frozenset({"customFields", "assignment"})  # customFields[<apiKey>], assignment[teamID]
    status = ParamFilter(lambda: ChoiceWithDefault(choices=STATUSES, default="open"), field_name="status")
    spam = ParamFilter(BooleanParam, method="filter_nothing")
    silo = ParamFilter(lambda: ChoiceWithDefault(choices=SILOS, default="tickets"), method="filter_silo")
    subject = ParamFilter(lambda: forms.CharField(required=False, max_length=500), lookup_expr="icontains")
    hasAssignee = ParamFilter(FlagParam, field_name="assignment_agent", method="filter_has")
    hasParent = ParamFilter(FlagParam, field_name="parent", method="filter_has")
    hasTags = ParamFilter(FlagParam, method="filter_has_tags")
    shortID = ParamFilter(lambda: forms.CharField(required=False, max_length=20), field_name="short_id")
    query = ParamFilter(lambda: forms.CharField(required=False, max_length=500), method="filter_query")
    parentTicketID = ParamFilter(UUIDParam, field_name="parent_id")
    follower = ParamFilter(UUIDParam, method="filter_follower")
    rating = ParamFilter(lambda: ChoiceWithDefault(choices=RATINGS), method="filter_rating")
    priority = ParamFilter(
        lambda: forms.TypedChoiceField(
            choices=[(str(p), str(p)) for p in PRIORITIES], coerce=int, required=False
        ),
        method="filter_priority",
    )
    priorityOp = ParamFilter(
        lambda: ChoiceWithDefault(choices=list(PRIORITY_OPS), default="eq"), method="filter_nothing"
    )
    timezone = TimezoneFilter()
    # Whether each ticket carries its `events` (tickets.output); filters nothing.
    eventsScope = ParamFilter(
        lambda: ChoiceWithDefault(choices=["none", "all"], default="none"), method="filter_events_scope"
    )
    createdDate = RelativeDateRange("created_at")
    updatedDate = RelativeDateRange("updated_at")
    lastMessage = RelativeDateRange("last_message_at")
    statusChangedDate = RelativeDateRange("status_changed_at")
    lastAgentMessage = RelativeDateRange("last_agent_message_at")
    lastClientMessage = RelativeDateRange("last_client_message_at")
    # tickets.sla: whether a clock breached, and the nearest due time of a running one (indexed, partial)
    slaBreached = ParamFilter(FlagParam, method="filter_sla_breached")
    slaDue = RelativeDateRange("sla_due_at")
    customFields = ParamFilter(CustomFieldsParam, method="filter_custom_fields")
    locals().update(
        {
            "customFieldsExist[]": ParamFilter(
                lambda: ListParam(item=_api_key), method="filter_custom_fields_exist"
            ),
            "teamIDs[]": ParamFilter(lambda: ListParam(item=_uuid), method="filter_teams"),
            "tagIDs[]": ParamFilter(lambda: ListParam(item=_uuid), method="filter_tags"),
            "language[]": ParamFilter(
                lambda: ListParam(item=_language), field_name="language", lookup_expr="in"
            ),
            "assignment.teamID": ParamFilter(
                lambda: UUIDParam(allow_none=True), field_name="assignment_team", method="filter_assignment"
            ),
            "assignment.agentID": ParamFilter(
                lambda: UUIDParam(allow_none=True), field_name="assignment_agent", method="filter_assignment"
            ),
        }
    )

    class Meta:
        model = Ticket
        fields: list[str] = []

    # IDs named by these parameters must exist in the caller's license (else 400 naming the parameter,
    # tickets.selectors).
    RELATED = {
        "teamIDs[]": Team,
        "assignment.teamID": Team,
        "tagIDs[]": Tag,
        "follower": Agent,
        "assignment.agentID": Agent,
    }

    def __init__(self, data=None, queryset=None, *, request=None, prefix=None, license=None):
        self.license = license  # whose search (the full-text languages)
        _share_filters(type(self))
        super().__init__(data, queryset, request=request, prefix=prefix)

    @classmethod
    def parsed(cls, data, queryset, *, license, cleaned: dict):
        """The FilterSet of the query `data` whose values `parse_params` already cleaned (`cleaned`)."""
        filterset = cls(data, queryset, license=license)
        filterset._form = ParsedForm(cleaned)
        return filterset

    @property
    def form(self):
        """The parsed parameters (`parse_params`), or, when one is invalid, django-filter's form and its errors."""
        if not hasattr(self, "_form"):
            cleaned = parse_params(type(self), self.data) if self.is_bound else None
            self._form = ParsedForm(cleaned) if cleaned is not None else super().form
        return self._form

    def filter_queryset(self, queryset):
        # django-filter's loop without the filters of absent parameters: every filter here returns the
        # queryset unchanged for a value in EMPTY_VALUES (Filter.filter, FilterMethod, RelativeDateFilter).
        for name, value in self.form.cleaned_data.items():
            if value not in EMPTY_VALUES:
                queryset = self.filters[name].filter(queryset, value)
        return queryset

    def get_form_class(self):
        cls = type(self)
        if cls.__dict__.get("_form_class") is None:
            cls._form_class = shared_fields(super().get_form_class())
        return cls._form_class

    # Parameters that leave a team inbox a team inbox (see count_queryset).
    INBOX_PARAMS = {"teamIDs[]", "status", "silo", "spam", "timezone", "priorityOp", "eventsScope"}
    _ABSENT = (None, "", [])

    def count_queryset(self, queryset):
        """What the search's total counts: the filtered tickets, for a team inbox the team's links, and for a
        full-text search with nothing else but the status and silo the tickets' narrow copy on PostgreSQL
        (`_text_count_queryset`).

        A team inbox is `teamIDs[]` with nothing else but the status and silo (their defaults or any one value).
        Counting it from the tickets joins the team's links with every ticket of that status and silo in the
        license (~55 ms for 15,000 of 220,000 open tickets). The links (TicketTeam) carry copies of their ticket's
        license, silo and status, so the same number is an index-only count of the team's own links (~1.8 ms);
        with several teams, of their distinct tickets.
        """
        data = self.form.cleaned_data
        silos = ["spam", data["silo"]] if data.get("spam") else [data["silo"]]
        team_ids = data.get("teamIDs[]")
        if (
            not team_ids
            and connection.vendor == "postgresql"
            and (data.get("query") or "").strip()
            and all(value in self._ABSENT for name, value in data.items() if name not in self.TEXT_PARAMS)
        ):
            return self._text_count_queryset(data["query"].strip(), silos, data["status"])
        if not team_ids or any(
            value not in self._ABSENT for name, value in data.items() if name not in self.INBOX_PARAMS
        ):
            return queryset
        links = TicketTeam.objects.filter(
            license=self.license, team_id__in=team_ids, silo__in=sorted(set(silos)), status=data["status"]
        )
        return links if len(team_ids) == 1 else links.values("ticket_id").distinct()

    # Parameters that leave a full-text search countable from the tickets' narrow copy (see count_queryset).
    TEXT_PARAMS = {"query", "status", "silo", "spam", "timezone", "priorityOp", "eventsScope"}

    def _text_count_queryset(self, query: str, silos: list[str], status: str):
        """A full-text search's total from TicketSearchCopy (PostgreSQL): the same tickets as the search's
        filters (the copy holds the ticket's license, silo, status and vector, kept equal by triggers in the
        statement of every write), in 15,200 heap pages instead of the tickets' 67,000 for a common word in a
        300,000-ticket license: the count's median 1.74 s -> 0.20 s on the 2-core box at load 20-24 (bench/README.md,
        issue 34 "a common word's cold total").
        The languages were recorded for the digest by filter_query, which ran first."""
        languages = self.license.detected_languages or []
        copies = TicketSearchCopy.objects.filter(
            license=self.license, silo__in=sorted(set(silos)), status=status
        )
        return copies.filter(search.query_q(query, languages, TicketSearchCopy._meta.db_table))

    recorded = False  # whether what the filters record for count_digest is recorded without them running

    # What the documents carry, not which tickets are counted: a search with its events shares the total of the
    # same search without them (as when the key was the counted SQL's digest).
    NOT_COUNTED = frozenset({"eventsScope"})

    def count_digest(self) -> str | None:
        """What the total's cache key names this search by: a digest of the filter values it applied, or None
        (the caller then digests the counted SQL, as before).

        Equal digests must mean equal counted SQL. The SQL is a function of the license (in the key beside),
        the cleaned values, and what the filters read besides: the clock, for RelativeDates (their resolved
        moments are digested), and what a method records in `_count_key_parts` (the license's languages for
        `query`, the custom fields' types for `customFields`). A value whose repr is not its content (an
        object's address) gives None. Measured (bench/README.md, issue 34, bench/cpu.py --instructions, 10
        requests): compiling the count's SQL only to digest it cost the inbox search 0.7 M (9.88 M -> 9.17 M)."""
        if not self.recorded:  # (tickets.search_shapes records them without running the filters)
            self.qs  # noqa: B018 - the filters have run: moments resolved, parts recorded
        return count_digest(
            self.form.cleaned_data,
            getattr(self, "_relative_dates_now", None),
            getattr(self, "_count_key_parts", []),
        )

    def _key_part(self, part) -> None:
        self.__dict__.setdefault("_count_key_parts", []).append(part)

    # --- methods (each gets the cleaned value; None/empty never reaches them) ---

    @extend_schema_field(OpenApiTypes.STR)
    def filter_nothing(self, queryset, name, value):
        return queryset

    @extend_schema_field({"type": "string", "enum": ["all", "none"], "default": "none"})
    def filter_events_scope(self, queryset, name, value):
        return queryset  # read by tickets.selectors: whether the documents carry their events

    @extend_schema_field(OpenApiTypes.STR)
    def filter_silo(self, queryset, name, value):
        silos = {value}
        if self.form.cleaned_data.get("spam"):
            silos.add("spam")
        return queryset.filter(silo=value) if len(silos) == 1 else queryset.filter(silo__in=sorted(silos))

    @extend_schema_field(OpenApiTypes.STR)
    def filter_has(self, queryset, name, value):
        return queryset.filter(**{f"{name}__isnull": not value})

    @extend_schema_field(OpenApiTypes.STR)
    def filter_has_tags(self, queryset, name, value):
        tagged = Linked("tags")
        return queryset.filter(tagged if value else ~tagged)

    @extend_schema_field(OpenApiTypes.STR)
    def filter_sla_breached(self, queryset, name, value):
        return queryset.filter(sla_breached=value)

    @extend_schema_field(OpenApiTypes.STR)
    def filter_query(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        languages = self.license.detected_languages or []
        self._key_part(("languages", languages))
        return queryset.filter(search.query_q(value, languages))

    @extend_schema_field(OpenApiTypes.UUID)
    def filter_follower(self, queryset, name, value):
        return queryset.filter(Linked("followers", [value]))

    @extend_schema_field(OpenApiTypes.STR)
    def filter_rating(self, queryset, name, value):
        if value == "none":
            return queryset.filter(rating_score="")
        if value == "rated":
            return queryset.exclude(rating_score="")
        return queryset.filter(rating_score=value)

    @extend_schema_field(OpenApiTypes.INT)
    def filter_priority(self, queryset, name, value):
        op = PRIORITY_OPS[self.form.cleaned_data.get("priorityOp") or "eq"]
        return queryset.filter(**{f"priority__{op}": value})

    @extend_schema_field(OpenApiTypes.STR)
    def filter_custom_fields(self, queryset, name, triples):
        """Exact values (as the field's type: a number field's `12` is the number 12), and for `date` and
        `number` fields half-open ranges (`.from` inclusive, `.to` exclusive; a date's bounds are
        RelativeDates, compared as days in `timezone`). A key no definition describes matches as a string."""
        types = dict(
            CustomField.objects.for_license(self.license)
            .filter(api_key__in={key for key, _, _ in triples})
            .values_list("api_key", "type")
        )
        self._key_part(("customFieldTypes", sorted(types.items())))
        condition = Q()
        for key, suffix, text in triples:
            param = f"customFields.{key}{suffix}"
            kind = types.get(key)
            if not suffix:
                condition &= Q(**{f"custom_fields__{key}": _custom_value(param, kind, text)})
                continue
            if kind not in ("date", "number"):
                raise ValidationError({param: ["Ranges are for date and number custom fields."]})
            bound = _number(param, text) if kind == "number" else self._day(param, text)
            self._key_part((param, bound))  # a date's bound moves with the clock
            # JSON comparisons: numbers as numbers; dates as their YYYY-MM-DD strings, which sort as days
            condition &= Q(**{f"custom_fields__{key}__{'gte' if suffix == '.from' else 'lt'}": bound})
        return queryset.filter(condition)

    def _day(self, param: str, text: str) -> str:
        """A RelativeDate bound as the `YYYY-MM-DD` of its moment in the search's time zone."""
        tz = self.form.cleaned_data.get("timezone") or datetime.UTC
        if getattr(self, "_relative_dates_now", None) is None:
            self._relative_dates_now = dj_timezone.now()
        try:
            moment = relative_dates.resolve(text, tz=tz, now=self._relative_dates_now)
        except relative_dates.RelativeDateError as error:
            raise ValidationError({param: [str(error)]}) from None
        return moment.astimezone(tz).date().isoformat()

    @extend_schema_field(_STR_ARRAY)
    def filter_custom_fields_exist(self, queryset, name, keys):
        return queryset.filter(custom_fields__has_keys=keys)

    @extend_schema_field(_UUID_ARRAY)
    def filter_teams(self, queryset, name, team_ids):
        return queryset.filter(Linked("teams", team_ids))

    @extend_schema_field(_UUID_ARRAY)
    def filter_tags(self, queryset, name, tag_ids):
        for tag_id in tag_ids:
            queryset = queryset.filter(Linked("tags", [tag_id]))
        return queryset

    @extend_schema_field(OpenApiTypes.STR)
    def filter_assignment(self, queryset, name, value):
        if value == NONE:
            return queryset.filter(**{f"{name}__isnull": True})
        return queryset.filter(**{f"{name}_id": value})
