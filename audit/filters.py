"""The audit log's search parameters (contract: "Audit log query"), declared once."""

import django_filters
from django.db.models import Q

from accounts.models import Agent
from audit.models import ACTIONS, TARGETS, AuditEntry
from helpdesk.api.filtersets import StrictFilterSet, refusing_empty_values
from helpdesk.api.relative_dates import RelativeDateRange, TimezoneFilter
from helpdesk.context import AUTHOR_TYPES, SYSTEM_ACTOR_ID


def _choices(values):
    return [(value, value) for value in values]


class AuditEntryFilterSet(StrictFilterSet):
    timezone = TimezoneFilter()
    timeRange = RelativeDateRange("created_at", suffixes=(".from", ".to"))
    action = django_filters.ChoiceFilter(field_name="action", choices=_choices(ACTIONS))
    target = django_filters.ChoiceFilter(field_name="target", choices=_choices(TARGETS))
    authorType = django_filters.ChoiceFilter(field_name="author_type", choices=_choices(AUTHOR_TYPES))
    authorID = django_filters.UUIDFilter(method="filter_author")

    class Meta:
        model = AuditEntry
        fields = []

    def filter_author(self, queryset, name, value):
        """An agent ID (what /v1/agents lists) or an account ID finds the same person's entries: newer entries
        name the agent, older ones the account. SYSTEM_ACTOR_ID also finds the system's older null ones."""
        if value == SYSTEM_ACTOR_ID:
            return queryset.filter(Q(author_id=value) | Q(author_id__isnull=True))
        license = getattr(self.request, "license", None)
        agents = Agent.objects.filter(license=license).filter(Q(pk=value) | Q(account_id=value))
        ids = {value}
        for agent_id, account_id in agents.values_list("pk", "account_id"):
            ids |= {agent_id, account_id}
        return queryset.filter(author_id__in=sorted(ids))

    def get_form_class(self):
        return refusing_empty_values(super().get_form_class())
