"""Contact forms: a public page (`/forms/<ID>`) where a customer writes in without an account."""

from __future__ import annotations

import uuid

from django.db import models

from accounts.models import LicenseOwned, Stamped, Team


class ContactForm(LicenseOwned, Stamped):
    """A public form whose posts become tickets in `team` (null: the license's default team) through the
    inbound service (templates_app.contact_forms). `fields` are the owner's extra questions, `[{key, label,
    type, required, customFieldKey?}]`; the customer's e-mail, name, subject and message are always asked.
    An inactive form's page is a 404."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    fields = models.JSONField(default=list, blank=True)
    active = models.BooleanField(default=True)

    class Meta:
        indexes = [models.Index(fields=["license", "created_at", "id"], name="contactform_license_created")]

    def __str__(self):
        return self.name
