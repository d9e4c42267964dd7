from __future__ import annotations

import uuid

from django.db import models

from accounts.models import Agent, LicenseOwned, Stamped

SHARED, PRIVATE = "shared", "private"
VISIBILITIES = [SHARED, PRIVATE]


class Macro(LicenseOwned, Stamped):
    """A named list of actions (tickets.actions) applied to a ticket in one write. `shared` macros are the
    owners' and every agent sees them; a `private` one is its `agent`'s alone (no one else sees it)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    visibility = models.CharField(max_length=10, choices=[(v, v) for v in VISIBILITIES], default=PRIVATE)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    actions = models.JSONField(default=list)

    class Meta:
        indexes = [
            models.Index(fields=["license", "created_at", "id"], name="macro_license_created"),
            models.Index(fields=["license", "agent"], name="macro_license_agent"),
        ]

    def __str__(self):
        return self.name
