"""E-mail templates: the HTML (or visual) and plain-text versions of every e-mail sent to an end user."""

import uuid

from django.db import models

from accounts.models import LicenseOwned, Stamped

TYPE_HTML, TYPE_VISUAL = "html", "visual"


def default_content() -> dict:
    return {"text": "", "html": "", "appearance": {}}


class Template(LicenseOwned, Stamped):
    """An e-mail template; `content` holds text, html and appearance ({key: {type, value}})."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    content = models.JSONField(default=default_content)
    type = models.CharField(
        max_length=10, choices=[(TYPE_HTML, "html"), (TYPE_VISUAL, "visual")], default=TYPE_HTML
    )
    attachments = models.ManyToManyField("accounts.Attachment", blank=True, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["license", "created_at"], name="template_license_created")]

    def __str__(self):
        return self.name
