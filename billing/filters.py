"""The declarative allowlist of the subscription list's search parameters."""

import django_filters

from billing.models import STATES, Subscription
from billing.plans import PLAN_CODES
from helpdesk.api.filtersets import StrictFilterSet


class SubscriptionFilterSet(StrictFilterSet):
    state = django_filters.ChoiceFilter(choices=[(s, s) for s in STATES])

    class Meta:
        model = Subscription
        fields: list[str] = []


# The contract's name carries the array suffix, which is not a Python identifier.
SubscriptionFilterSet.base_filters["planCodes[]"] = django_filters.MultipleChoiceFilter(
    field_name="plan_code", choices=[(c, c) for c in PLAN_CODES]
)
