"""A license's custom field definitions."""

from __future__ import annotations

import uuid

from django.db import models

from accounts.models import LicenseOwned, Stamped, Team

TYPES = ["singleLine", "multiLine", "date", "url", "number", "dropdown", "checkbox"]
ROLE_LEVELS = ["owner", "normal", "readOnly"]
STATUS_ACTIVE, STATUS_DEACTIVATED = "active", "deactivated"
STATUSES = [STATUS_ACTIVE, STATUS_DEACTIVATED]


class CustomField(LicenseOwned, Stamped):
    """What a ticket's `customFields[api_key]` may hold: its `type` (and `options` for a dropdown), who sets it
    (`role_level`), the teams whose tickets carry it (none: every ticket), and whether it is still written
    (`status`: a deactivated field stays on the tickets that have it, read, never written)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    api_key = models.CharField(max_length=100)
    display_name = models.CharField(max_length=200)
    type = models.CharField(max_length=12, choices=[(t, t) for t in TYPES])
    role_level = models.CharField(max_length=10, choices=[(r, r) for r in ROLE_LEVELS], default="normal")
    status = models.CharField(max_length=12, choices=[(s, s) for s in STATUSES], default=STATUS_ACTIVE)
    options = models.JSONField(default=list, blank=True)
    teams = models.ManyToManyField(Team, related_name="+", blank=True, db_table="tickets_customfield_teams")

    class Meta:
        constraints = [
            models.UniqueConstraint("license", "api_key", name="custom_field_api_key_unique_per_license")
        ]

    def __str__(self):
        return self.api_key
