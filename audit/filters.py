"""The audit log's search parameters (contract: "Audit log query"), declared once."""

import django_filters

from audit.models import ACTIONS, TARGETS, AuditEntry
from helpdesk.api.filtersets import StrictFilterSet
from helpdesk.api.relative_dates import RelativeDateRange, TimezoneFilter
from helpdesk.context import AUTHOR_TYPES


def _choices(values):
    return [(value, value) for value in values]


class AuditEntryFilterSet(StrictFilterSet):
    timezone = TimezoneFilter()
    timeRange = RelativeDateRange("created_at", suffixes=(".from", ".to"))
    action = django_filters.ChoiceFilter(field_name="action", choices=_choices(ACTIONS))
    target = django_filters.ChoiceFilter(field_name="target", choices=_choices(TARGETS))
    authorType = django_filters.ChoiceFilter(field_name="author_type", choices=_choices(AUTHOR_TYPES))
    authorID = django_filters.UUIDFilter(field_name="author_id")

    class Meta:
        model = AuditEntry
        fields = []

    def get_form_class(self):
        return type("AuditEntryFilterForm", (super().get_form_class(),), {"clean": _refuse_empty_values})


def _refuse_empty_values(form):
    """A parameter that is present but empty (`?action=`) is a 400, as everywhere else, not "no filter"."""
    cleaned = super(type(form), form).clean()
    for name in form.fields:
        if name in form.data and not str(form.data.get(name, "")).strip():
            form.add_error(name, "This parameter may not be empty.")
    return cleaned
