"""The declarative allowlist of the subscription list's search parameters."""

import django_filters

from billing.models import STATES, Subscription
from billing.plans import PLAN_CODES
from helpdesk.api.filtersets import StrictFilterSet, refusing_empty_values


class SubscriptionFilterSet(StrictFilterSet):
    state = django_filters.ChoiceFilter(choices=[(s, s) for s in STATES])

    class Meta:
        model = Subscription
        fields: list[str] = []

    def get_form_class(self):
        return refusing_empty_values(super().get_form_class())


# The contract's name carries the array suffix, which is not a Python identifier.
SubscriptionFilterSet.base_filters["planCodes[]"] = django_filters.MultipleChoiceFilter(
    field_name="plan_code", choices=[(c, c) for c in PLAN_CODES]
)
