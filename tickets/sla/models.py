"""A license's business hours and SLA policies (loaded from tickets/models.py, like the rules)."""

from __future__ import annotations

import uuid

from django.db import models

from accounts.models import LicenseOwned, Stamped


class BusinessHours(LicenseOwned, Stamped):
    """When a license works: an IANA time zone, each weekday's intervals in local wall time (`{"mon":
    [["09:00", "17:00"]], ...}`) and holidays (local dates). SLA policies count their targets in it
    (tickets.sla.clock)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64)
    week = models.JSONField(default=dict)
    holidays = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name_plural = "business hours"
        indexes = [models.Index(fields=["license", "created_at", "id"], name="business_hours_lic_created")]

    def __str__(self):
        return self.name


class SlaPolicy(LicenseOwned, Stamped):
    """Targets for the first response, the next response and the resolution, per priority (`{"20":
    {"firstResponseMinutes", "nextResponseMinutes", "resolutionMinutes"}}`), counted in business hours (null:
    24/7). The first active policy in `ordering` whose `conditions` (the rules' conditions, all of them) hold for a
    ticket applies to it (tickets.sla.apply)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    ordering = models.IntegerField(default=0)
    conditions = models.JSONField(default=list, blank=True)
    targets = models.JSONField(default=dict, blank=True)
    business_hours = models.ForeignKey(
        BusinessHours, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )

    class Meta:
        verbose_name = "SLA policy"
        verbose_name_plural = "SLA policies"
        indexes = [
            models.Index(fields=["license", "created_at", "id"], name="sla_policy_lic_created"),
            models.Index(fields=["license", "ordering"], name="sla_policy_lic_ordering"),
            models.Index(fields=["business_hours"], name="sla_policy_hours"),
        ]

    def __str__(self):
        return self.name
