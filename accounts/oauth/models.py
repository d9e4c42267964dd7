"""A license's OAuth apps (the developer console). Loaded from accounts/models.py.

DOT's own Application row holds what OAuth needs (client ID, hashed secret, redirect URIs); this
license-owned wrapper ties it to a license, so tenancy stays where it is for every other resource
(`for_license` and the base viewset) rather than in a swapped DOT model.
"""

import uuid

from django.db import models
from oauth2_provider.settings import oauth2_settings

from accounts.models import LicenseOwned, Stamped


class LicenseApp(LicenseOwned, Stamped):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    application = models.OneToOneField(
        oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="license_app"
    )
    scopes = models.JSONField(default=list)  # the scopes the app may request

    class Meta:
        indexes = [models.Index(fields=["license", "created_at"], name="licenseapp_license_created")]

    def __str__(self):
        return self.application.name
