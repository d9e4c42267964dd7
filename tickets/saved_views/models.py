"""A saved ticket search."""

from __future__ import annotations

import uuid

from django.db import models

from accounts.models import Agent, LicenseOwned, Stamped


class View(LicenseOwned, Stamped):
    """A saved ticket search: `filters` are search parameters (`GET /v1/tickets`, all but `timezone` and
    paging) as `{name: value or [values]}`, checked by the search itself when saved. `agent` null: shared with
    the license; else private to that agent (deleted with it). `ordering`: its place in the list of views."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    name = models.CharField(max_length=200)
    filters = models.JSONField(default=dict, blank=True)
    ordering = models.IntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["license", "agent", "ordering"], name="view_lic_agent_ordering")]

    def __str__(self):
        return self.name
