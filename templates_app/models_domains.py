"""A customer's own mail domain (`/v1/emailDomains`): the DKIM key our mail From that domain is signed with, and
the DNS records that prove the domain is theirs (templates_app.domains)."""

from __future__ import annotations

import uuid

from django.db import models

from accounts.models import LicenseOwned, Stamped


class EmailDomain(LicenseOwned, Stamped):
    """A domain (acme.example) a license sends mail From. `private_key` (PEM, RSA 2048) never leaves the server;
    the public half is published at `<selector>._domainkey.<name>`. Active (all records found in DNS) in one
    license at most: the partial unique index holds that against two verifications at once."""

    STATUS_NEW, STATUS_PENDING, STATUS_ACTIVE, STATUS_FAILED = (
        "new",
        "pendingVerification",
        "active",
        "setupFailed",
    )
    STATUSES = [STATUS_NEW, STATUS_PENDING, STATUS_ACTIVE, STATUS_FAILED]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=253)  # lower case, no trailing dot
    status = models.CharField(max_length=20, choices=[(s, s) for s in STATUSES], default=STATUS_NEW)
    selector = models.CharField(max_length=63)
    private_key = models.TextField()
    public_key = models.TextField()  # base64 DER (SubjectPublicKeyInfo): the DKIM record's p=
    token = models.CharField(max_length=64)  # the ownership token's TXT value
    verified_at = models.DateTimeField(null=True, blank=True)
    # the last verification: {"checkedAt": ..., "missing": [{"name", "value", "found": [...]}]}
    last_check = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint("license", "name", name="email_domain_unique_per_license"),
            models.UniqueConstraint(
                "name", condition=models.Q(status="active"), name="email_domain_active_once"
            ),
        ]
        indexes = [models.Index(fields=["license", "created_at"], name="email_domain_license_created")]

    def __str__(self):
        return self.name
