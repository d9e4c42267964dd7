from __future__ import annotations

import uuid

from django.db import models

from accounts.models import LicenseOwned, Stamped, Team


class CannedResponse(LicenseOwned, Stamped):
    """A saved answer: `text` with the templates' placeholders, `shortcuts` unique in the license (compared
    case-insensitively), seen by the whole license (`team` null) or by one team's members and the owners;
    its files (`attachments`) come from an attachment transaction."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    text = models.TextField()
    rich_text_obj = models.JSONField(null=True, blank=True)
    shortcuts = models.JSONField(default=list, blank=True)
    # A team's own answers go with the team.
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    attachments = models.ManyToManyField("accounts.Attachment", blank=True, related_name="+")

    class Meta:
        indexes = [
            models.Index(fields=["license", "created_at", "id"], name="canned_license_created"),
            models.Index(fields=["license", "team"], name="canned_license_team"),
        ]

    def __str__(self):
        if self.shortcuts:
            return self.shortcuts[0]
        return self.text[:50]
