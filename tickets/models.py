"""Tickets, their messages, tags, and the per-license short-ID sequence.

The search path (`GET /v1/tickets`) is the hottest path of the product, so the indexes here mirror its queries:
every one starts with the license, then the silo and status that every search carries (defaults `tickets` and
`open`), then the sort column and the ID (the cursor's composite key), so that a page is an index range scan and
a count is index-only. The PostgreSQL-only parts (tsvector column, GIN indexes) are created by a migration that
does nothing on SQLite.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from accounts.models import Agent, AttachmentTransaction, License, LicenseOwned, Stamped, Team

STATUSES = ["open", "pending", "onhold", "solved", "closed"]
PRIORITIES = [-10, 0, 10, 20]
PRIORITY_LABELS = {-10: "Low", 0: "Normal", 10: "High", 20: "Urgent"}  # what people read (admin, mail)
SILOS = ["tickets", "archive", "spam", "trash"]
READ_ONLY_SILOS = {"archive", "spam", "trash"}
RATINGS = ["good", "bad"]
AUTHOR_TYPES = ["agent", "client", "system"]
NO_LANGUAGE = "none"


class Tag(LicenseOwned, Stamped):
    """A label on tickets; names are unique per license (case-insensitive)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)

    class Meta:
        constraints = [models.UniqueConstraint("license", Lower("name"), name="tag_name_unique_per_license")]

    def __str__(self):
        return self.name


class TicketSequence(LicenseOwned):
    """The last short ID handed out in a license (one row per license, incremented under its row lock)."""

    last_number = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint("license", name="ticket_sequence_one_per_license")]


class SearchGeneration(models.Model):
    """A license's ticket search generation, the key of its cached search totals (tickets/totals/): raised at
    the end of every transaction that changes the license's tickets. A row of its own, locked only by those
    raises and always last, after any ticket row: a path that locks the license row and then tickets (a team's
    or an agent's deletion, whose cascades update tickets) waits for a ticket write instead of deadlocking with
    it. A license whose tickets were never written has no row yet (generation 0)."""

    license = models.OneToOneField(
        License, on_delete=models.CASCADE, primary_key=True, related_name="search_generation"
    )
    value = models.BigIntegerField(default=0)

    def __str__(self):
        return f"License {self.license_id}: generation {self.value}"


_DUE_INDEXES = {
    "updated_at": "ticket_due_updated",
    "last_message_at": "ticket_due_lastmsg",
    "status_changed_at": "ticket_due_status",
    "last_client_message_at": "ticket_due_client",
    "last_agent_message_at": "ticket_due_agent",
}


def _search_index(name: str, *fields: str) -> models.Index:
    return models.Index(fields=["license", "silo", "status", *fields, "id"], name=name)


def _license_fk(related_name: str):
    # The composite indexes below all lead with the license; a separate single-column index would only
    # cost writes.
    return models.ForeignKey(License, on_delete=models.CASCADE, related_name=related_name, db_index=False)


class Ticket(LicenseOwned, Stamped):
    """A customer request: who asked, what about, who handles it, where it is (silo) and how it stands (status).

    `last_*_at`, `status_changed_at` and `language` are maintained by tickets.services on every write.
    `search_text` holds what full-text search reads (subject, requester, shortID, message text); on
    PostgreSQL `search_vector` is its tsvector, refreshed in the same transaction.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    license = _license_fk("tickets")
    number = models.BigIntegerField()
    short_id = models.CharField(max_length=20)
    status = models.CharField(max_length=10, choices=[(s, s) for s in STATUSES], default="open")
    priority = models.SmallIntegerField(choices=list(PRIORITY_LABELS.items()), default=0)
    silo = models.CharField(max_length=10, choices=[(s, s) for s in SILOS], default="tickets")
    subject = models.CharField(max_length=500)
    requester_email = models.EmailField(max_length=254)
    requester_name = models.CharField(max_length=200, blank=True)
    people_in_the_loop = models.JSONField(default=list, blank=True)
    assignment_team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    assignment_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    custom_fields = models.JSONField(default=dict, blank=True)
    rating_requeest_sent = models.BooleanField(default=False)
    rating_score = models.CharField(max_length=4, blank=True, default="", choices=[(r, r) for r in RATINGS])
    rating_comment = models.TextField(blank=True)
    rated_at = models.DateTimeField(null=True, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children", db_index=False
    )
    language = models.CharField(max_length=8, default=NO_LANGUAGE)
    status_changed_at = models.DateTimeField(default=timezone.now)
    # Not null (the cursor's sort key): the time of the last public message, or the creation time before one.
    last_message_at = models.DateTimeField(default=timezone.now)
    last_agent_message_at = models.DateTimeField(null=True, blank=True)
    last_client_message_at = models.DateTimeField(null=True, blank=True)
    search_text = models.TextField(blank=True, default="")
    # PostgreSQL only (a plain unused column on SQLite); written by tickets.search.reindex().
    search_vector = SearchVectorField(null=True, editable=False)
    # The SLA (tickets.sla): the document's `sla`, the clocks behind it, the nearest due time of a running clock
    # not breached yet (the breach sweep's and the search's), and whether any clock breached (the search's).
    sla = models.JSONField(null=True, blank=True, editable=False)
    sla_clock = models.JSONField(null=True, blank=True, editable=False)
    sla_due_at = models.DateTimeField(null=True, blank=True, editable=False)
    sla_breached = models.BooleanField(default=False, editable=False)
    teams = models.ManyToManyField(Team, related_name="tickets", blank=True, through="TicketTeam")
    tags = models.ManyToManyField(Tag, related_name="tickets", blank=True, db_table="tickets_ticket_tags")
    followers = models.ManyToManyField(
        Agent, related_name="followed_tickets", blank=True, db_table="tickets_ticket_followers"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint("license", "short_id", name="ticket_short_id_unique_per_license"),
            models.UniqueConstraint("license", "number", name="ticket_number_unique_per_license"),
        ]
        indexes = [
            _search_index("ticket_lic_silo_st_created", "created_at"),
            _search_index("ticket_lic_silo_st_updated", "updated_at"),
            _search_index("ticket_lic_silo_st_lastmsg", "last_message_at"),
            # "my tickets" and "team inbox": assignment first, then the inbox's columns
            models.Index(
                fields=["license", "assignment_agent", "silo", "status", "created_at", "id"],
                name="ticket_lic_agent_created",
            ),
            models.Index(
                fields=["license", "assignment_team", "silo", "status", "created_at", "id"],
                name="ticket_lic_team_created",
            ),
            models.Index(fields=["license", "parent"], name="ticket_lic_parent"),
            # Narrow indexes that PostgreSQL combines (bitmap AND) for rare filter combinations, where an
            # ordered scan would read a whole license looking for 20 matches.
            models.Index(fields=["license", "priority", "silo", "status"], name="ticket_lic_priority"),
            models.Index(fields=["license", "language", "silo", "status"], name="ticket_lic_language"),
            models.Index(fields=["license", "rating_score", "silo", "status"], name="ticket_lic_rating"),
            # the reports (tickets/reports/): new tickets of a range in any status, and ratings given in one
            models.Index(fields=["license", "created_at"], name="ticket_lic_created"),
            models.Index(
                fields=["license", "rated_at"],
                name="ticket_lic_rated",
                condition=models.Q(rated_at__isnull=False),
            ),
            # the SLA: the breach sweep's walk across licenses, the search's due range and breached tickets; only
            # tickets under a policy are in them
            models.Index(
                fields=["sla_due_at", "id"],
                name="ticket_sla_due",
                condition=models.Q(sla_due_at__isnull=False),
            ),
            models.Index(
                fields=["license", "sla_due_at", "id"],
                name="ticket_lic_sla_due",
                condition=models.Q(sla_due_at__isnull=False),
            ),
            models.Index(
                fields=["license", "silo", "status", "id"],
                name="ticket_lic_sla_breached",
                condition=models.Q(sla_breached=True),
            ),
            # the time rules' sweep (tickets/rules/sweep.py): a license's tickets whose time field passed a
            # moment, in (field, id) order, one index range per rule and run (createdAt: ticket_lic_created)
            *[
                models.Index(fields=["license", field, "id"], name=name, condition=models.Q(silo="tickets"))
                for field, name in _DUE_INDEXES.items()
            ],
            # the auto-close's walk across licenses (tickets/auto_close.py): only solved tickets, small
            models.Index(
                fields=["status_changed_at", "id"],
                name="ticket_solved_changed",
                condition=models.Q(silo="tickets", status="solved"),
            ),
        ]

    def __str__(self):
        return f"#{self.short_id} {self.subject}"

    @property
    def is_read_only(self) -> bool:
        return self.silo in READ_ONLY_SILOS


class TicketTeam(models.Model):
    """A ticket visible to a team, with the ticket's license, silo and status copied onto the link.

    The copies serve one search: a team's inbox (`teamIDs[]`, with the default or any one status and silo, nothing
    else). Its exact total is then an index-only count of the team's links, `(license, team, silo, status,
    ticket)`, instead of a join of the team's links with all the license's open tickets (~1.8 ms instead of ~55 ms
    for a team of 15,000 open tickets among 220,000; see TicketFilterSet.count_queryset). tickets.services keeps
    the copies equal to the ticket's in the transaction of every write (`sync_team_links`).
    """

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE)
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    license = models.ForeignKey(License, on_delete=models.CASCADE, related_name="+", db_index=False)
    silo = models.CharField(max_length=10, choices=[(s, s) for s in SILOS])
    status = models.CharField(max_length=10, choices=[(s, s) for s in STATUSES])

    class Meta:
        db_table = "tickets_ticket_teams"
        unique_together = [("ticket", "team")]
        indexes = [
            models.Index(fields=["license", "team", "silo", "status", "ticket"], name="ticket_team_inbox"),
            models.Index(fields=["team", "ticket"], name="ticket_teams_team_ticket"),  # from migration 0005
        ]

    def __str__(self):
        return f"{self.ticket_id} → {self.team_id}"


class TicketSearchCopy(models.Model):
    """A ticket's license, silo, status and search vector, in a narrow table that full-text totals count.

    A full-text search's total (`query` with nothing else but the status and silo, TicketFilterSet.count_queryset)
    is a bitmap scan, and PostgreSQL 15 visits every heap page that holds a match to check its visibility. In
    `tickets_ticket` (~1.4 KB a row, ~5 rows a page) `query=payment` in a 300,000-ticket license visits 67,000
    pages; here a row is ~120 bytes (the vector lives in the TOAST table, which the count does not read): 15,200
    pages for the whole table, which stays in shared buffers (bench/README.md, issue 34 "a common word's cold
    total").

    PostgreSQL only: triggers on tickets_ticket keep it equal to the tickets in the same statement as every
    write (whatever writes: services, `QuerySet.update()`, a cascade, SQL), and its migration (0028) makes the
    vector leave the row (`pad`, see there). On SQLite the table exists and stays empty: nothing reads it.
    """

    ticket = models.OneToOneField(
        Ticket, on_delete=models.DO_NOTHING, db_constraint=False, primary_key=True, related_name="+"
    )
    license = models.ForeignKey(
        License, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    silo = models.CharField(max_length=10)
    status = models.CharField(max_length=10)
    search_vector = SearchVectorField(null=True)

    class Meta:
        indexes = [models.Index(fields=["license", "silo", "status"], name="ticket_search_copy_lss")]

    def __str__(self):
        return f"{self.ticket_id} ({self.silo}, {self.status})"


class Message(LicenseOwned):
    """One message of a ticket's thread; public ones move the ticket's lastMessageAt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    license = _license_fk("messages")
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="messages", db_index=False)
    text = models.TextField()
    is_private = models.BooleanField(default=False)
    author_type = models.CharField(max_length=10, choices=[(a, a) for a in AUTHOR_TYPES], default="agent")
    author_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    transaction = models.ForeignKey(
        AttachmentTransaction,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    # Already sanitized HTML (the e-mail channel's HTML part); the text above is what search reads.
    rich_text_html = models.TextField(blank=True, default="")
    # Why no automatic answer may answer this message (a client's mail that is itself automatic: an auto-reply,
    # a bulk or null-return-path mail, or one past the auto-reply storm limits; set by the inbound service), ""
    # when one may: a rule's public message never answers it (tickets.rules.engine).
    no_auto_reply = models.CharField(max_length=200, blank=True, default="")
    # [{"date", "status", "recipient"}] of the e-mail that carried it (tickets.services.message_delivery_record).
    delivery_status = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["license", "ticket", "created_at"], name="message_lic_ticket_created")
        ]

    def __str__(self):
        return f"{self.author_type} message on {self.ticket_id}"


EVENT_TYPES = [
    "message", "status", "priority", "assignment", "silo", "tags", "followers", "teams", "merge", "rating",
    "unmerge",
    "rule",
    "sla",
]  # fmt: skip
# `web`: a customer on one of the public pages (the rating page), reached from a link their e-mail carried.
SOURCE_TYPES = ["api", "email", "admin", "system", "web", "form"]  # form: a contact form's post


class TicketEvent(LicenseOwned):
    """One entry of a ticket's history (the contract's `events`), written by tickets.services in the
    transaction of the change it records (tickets.events).

    Who and from where are snapshots (`author_name`, the source): the history stays true when an agent is
    renamed or deleted. A `message` event points at its Message, whose text, attachments and delivery status
    are read live; the other types keep their `old`/`new` or `added`/`removed` in `payload`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    license = _license_fk("ticket_events")
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="events", db_index=False)
    type = models.CharField(max_length=12, choices=[(t, t) for t in EVENT_TYPES])
    created_at = models.DateTimeField(default=timezone.now)
    # The order of the events of one write (they share its time): history is ordered by (created_at, position).
    position = models.SmallIntegerField(default=0)
    author_type = models.CharField(max_length=10, choices=[(a, a) for a in AUTHOR_TYPES])
    # Not a constraint: the history keeps who did it after the agent is deleted (the ID and name snapshot stay),
    # and deleting an agent does not scan every event of every license to clear it.
    author_agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        db_index=False,
    )
    author_name = models.CharField(max_length=254, blank=True)
    source_type = models.CharField(max_length=10, choices=[(s, s) for s in SOURCE_TYPES])
    detailed_source = models.CharField(max_length=30, blank=True)
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    payload = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            # a ticket's history, and the purge's license-scoped delete
            models.Index(fields=["license", "ticket", "created_at"], name="event_lic_ticket_created"),
            # deleting a message (the collector's cascade) finds its event without a scan
            models.Index(fields=["message"], name="event_message", condition=models.Q(message__isnull=False)),
        ]

    def __str__(self):
        return f"{self.type} event on {self.ticket_id}"


# The purge's run records live in their own module; importing them here registers them with the app.
from tickets.canned_responses.models import CannedResponse  # noqa: E402, F401
from tickets.custom_fields.models import CustomField  # noqa: E402, F401
from tickets.macros.models import Macro  # noqa: E402, F401
from tickets.models_purge import PurgedFile, PurgeRun  # noqa: E402, F401
from tickets.reports.models import TicketMetrics, TicketResolution  # noqa: E402, F401
from tickets.rules.models import Rule, RuleFiring  # noqa: E402, F401
from tickets.saved_views.models import View  # noqa: E402, F401
from tickets.sla.models import BusinessHours, SlaPolicy  # noqa: E402, F401
from tickets.webhooks.models import Webhook, WebhookDelivery  # noqa: E402, F401
