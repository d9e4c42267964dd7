from __future__ import annotations

import uuid

from django.db import models

from accounts.models import LicenseOwned, Stamped

ALL, ANY = "all", "any"
QUANTIFIERS = [ALL, ANY]
TYPES = ["tickets"]


class Rule(LicenseOwned, Stamped):
    """Conditions (`triggers`) and actions (tickets.actions) run on a ticket inside the write that triggered them
    (tickets.rules.engine), in `ordering`; a rule with an `hoursSince` condition is a time rule, run by the beat
    sweep instead. `use_counter` counts firings (written by the engine, never by a client)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    active = models.BooleanField(default=True)
    ordering = models.IntegerField(default=0)
    quantifier = models.CharField(max_length=3, choices=[(q, q) for q in QUANTIFIERS], default=ALL)
    type = models.CharField(max_length=10, choices=[(t, t) for t in TYPES], default="tickets")
    triggers = models.JSONField(default=list)
    actions = models.JSONField(default=list)
    use_counter = models.PositiveIntegerField(default=0)
    limit_per_ticket = models.PositiveIntegerField(default=1)
    # Derived at save from `triggers`: a rule with an hoursSince condition runs only in the time sweep.
    is_time_rule = models.BooleanField(default=False)
    # A time rule's sweep (tickets.rules.sweep): the moment up to which its due tickets were handled.
    swept_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["license", "created_at", "id"], name="rule_license_created"),
            models.Index(fields=["license", "active", "ordering"], name="rule_license_active"),
            models.Index(fields=["is_time_rule", "active"], name="rule_time_active"),
        ]

    def __str__(self):
        return self.name


class RuleFiring(LicenseOwned):
    """How often a rule fired on a ticket: one row per rule and ticket, locked while a rule fires, so a rule never
    fires more than `limit_per_ticket` times on a ticket, under retries and concurrent writes alike."""

    id = models.BigAutoField(primary_key=True)
    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="+", db_index=False)
    ticket = models.ForeignKey("tickets.Ticket", on_delete=models.CASCADE, related_name="+", db_index=False)
    count = models.PositiveIntegerField(default=0)
    last_fired_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint("rule", "ticket", name="rule_firing_unique")]
        indexes = [models.Index(fields=["license", "ticket"], name="rule_firing_lic_ticket")]

    def __str__(self):
        return f"{self.rule_id} on {self.ticket_id}"
