"""Ticket output (plain dicts, built in bulk: the search path's hot loop) and strict input validation.

A DRF serializer per object costs ~26 µs; a page of 100 tickets would spend more in serializers than in
PostgreSQL. So the output is built by `ticket_dicts()`: one query for the page (with its assignment and
parent joined) and one UNION query for the teams, tags, followers and children of the whole page.
"""

from __future__ import annotations

import uuid

from django.db import connection
from django.db.models import CharField, Value
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import LicensedPrimaryKeyField
from accounts.models import Agent, Team
from helpdesk.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
    StrictListField,
    StrictUUIDField,
)
from helpdesk.api.renderers import iso
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from tickets.models import AUTHOR_TYPES, PRIORITIES, SILOS, STATUSES, Tag, Ticket

# --- ticket output --------------------------------------------------------------------------------------

# The columns a ticket dict needs (never search_text / search_vector), parent and assignment joined.
TICKET_COLUMNS = (
    "id", "license_id", "created_at", "updated_at", "created_by", "updated_by", "created_by_type", "short_id",
    "last_message_at", "status", "priority", "subject", "requester_email", "requester_name",
    "people_in_the_loop", "custom_fields", "rating_requeest_sent", "rating_score", "rating_comment", "rated_at",
    "silo", "language", "parent_id", "parent__short_id", "parent__subject",
    "assignment_team_id", "assignment_team__name", "assignment_agent_id", "assignment_agent__name",
)  # fmt: skip


def ticket_queryset(queryset):
    """The page query: plain rows (no model instances) with the parent and the assignment joined."""
    return queryset.values(*TICKET_COLUMNS)


def _uuid_str(value):
    return None if value is None else str(value)


# PostgreSQL: the page's IDs travel once, as an array, instead of four IN lists of bound parameters.
_RELATED_SQL = """
    SELECT 't', ticket_id, team_id, NULL, NULL FROM tickets_ticket_teams WHERE ticket_id = ANY(%(ids)s)
    UNION ALL SELECT 'g', ticket_id, tag_id, NULL, NULL FROM tickets_ticket_tags WHERE ticket_id = ANY(%(ids)s)
    UNION ALL SELECT 'f', ticket_id, agent_id, NULL, NULL FROM tickets_ticket_followers WHERE ticket_id = ANY(%(ids)s)
    UNION ALL SELECT 'c', parent_id, id, short_id, subject FROM tickets_ticket
        WHERE license_id = %(license)s AND parent_id = ANY(%(ids)s)
"""


def _related_rows(license_id, ticket_ids):
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_RELATED_SQL, {"ids": list(ticket_ids), "license": license_id})
            return cursor.fetchall()
    blank = Value("", output_field=CharField())

    def kind(letter):
        return Value(letter, output_field=CharField())

    through = {
        name: getattr(Ticket, name).through.objects.filter(ticket_id__in=ticket_ids)
        for name in ("teams", "tags", "followers")
    }
    return (
        through["teams"]
        .values_list(kind("t"), "ticket_id", "team_id", blank, blank)
        .union(
            through["tags"].values_list(kind("g"), "ticket_id", "tag_id", blank, blank),
            through["followers"].values_list(kind("f"), "ticket_id", "agent_id", blank, blank),
            Ticket.objects.filter(license_id=license_id, parent_id__in=ticket_ids).values_list(
                kind("c"), "parent_id", "id", "short_id", "subject"
            ),
            all=True,
        )
    )


def _related(license_id, ticket_ids) -> dict:
    """{ticket ID: {"t": teamIDs, "g": tagIDs, "f": followers, "c": children}} in one query."""
    related = {ticket_id: {"t": [], "g": [], "f": [], "c": []} for ticket_id in ticket_ids}
    if not ticket_ids:
        return related
    for letter, ticket_id, other_id, short_id, subject in _related_rows(license_id, ticket_ids):
        if letter == "c":
            related[ticket_id]["c"].append({"ID": str(other_id), "shortID": short_id, "subject": subject})
        else:
            related[ticket_id][letter].append(str(other_id))
    return related


def _sorted(values):
    return sorted(values) if len(values) > 1 else values


def _children(children):
    if len(children) > 1:
        children.sort(key=lambda c: int(c["shortID"]) if c["shortID"].isdigit() else 0)
    return children


def ticket_dicts(rows) -> list[dict]:
    """The contract's Ticket objects for `rows` (from `ticket_queryset`), in order."""
    rows = list(rows)
    related = _related(rows[0]["license_id"] if rows else None, [row["id"] for row in rows])
    out = []
    for t in rows:
        more = related[t["id"]]
        team_id, agent_id, parent_id = t["assignment_team_id"], t["assignment_agent_id"], t["parent_id"]
        out.append(
            {
                "ID": str(t["id"]),
                "licenseID": t["license_id"],
                "createdAt": iso(t["created_at"]),
                "updatedAt": iso(t["updated_at"]),
                "createdBy": _uuid_str(t["created_by"]),
                "updatedBy": _uuid_str(t["updated_by"]),
                "createdByType": t["created_by_type"],
                "shortID": t["short_id"],
                "lastMessageAt": iso(t["last_message_at"]),
                "parent": None
                if parent_id is None
                else {
                    "ID": str(parent_id),
                    "shortID": t["parent__short_id"],
                    "subject": t["parent__subject"],
                },
                "children": _children(more["c"]),
                "status": t["status"],
                "priority": t["priority"],
                "subject": t["subject"],
                "teamIDs": _sorted(more["t"]),
                "requester": {"email": t["requester_email"], "name": t["requester_name"]},
                "peopleInTheLoop": t["people_in_the_loop"],
                "tagIDs": _sorted(more["g"]),
                "followers": _sorted(more["f"]),
                "assignment": {
                    "team": None
                    if team_id is None
                    else {"ID": str(team_id), "name": t["assignment_team__name"]},
                    "agent": None
                    if agent_id is None
                    else {"ID": str(agent_id), "name": t["assignment_agent__name"]},
                },
                "customFields": t["custom_fields"],
                "ratingRequeestSent": t["rating_requeest_sent"],
                "rating": None
                if not t["rating_score"]
                else {
                    "score": t["rating_score"],
                    "comment": t["rating_comment"],
                    "ratedAt": iso(t["rated_at"]),
                },
                "silo": t["silo"],
                "language": t["language"],
            }
        )
    return out


class _RefDoc(serializers.Serializer):
    ID = serializers.UUIDField()
    shortID = serializers.CharField()
    subject = serializers.CharField()


class _NamedDoc(serializers.Serializer):
    ID = serializers.UUIDField()
    name = serializers.CharField()


class _AssignmentDoc(serializers.Serializer):
    team = _NamedDoc(allow_null=True)
    agent = _NamedDoc(allow_null=True)


class _PersonDoc(serializers.Serializer):
    email = serializers.EmailField()
    name = serializers.CharField()


class _RatingDoc(serializers.Serializer):
    score = serializers.ChoiceField(choices=["good", "bad"])
    comment = serializers.CharField()
    ratedAt = serializers.DateTimeField()


class TicketDocSerializer(serializers.Serializer):
    """The Ticket object for the OpenAPI document only (responses are built by ticket_dicts())."""

    ID = serializers.UUIDField()
    licenseID = serializers.IntegerField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    createdBy = serializers.UUIDField(allow_null=True)
    updatedBy = serializers.UUIDField(allow_null=True)
    createdByType = serializers.ChoiceField(choices=AUTHOR_TYPES)
    shortID = serializers.CharField()
    lastMessageAt = serializers.DateTimeField()
    parent = _RefDoc(allow_null=True)
    children = _RefDoc(many=True)
    status = serializers.ChoiceField(choices=STATUSES)
    priority = serializers.ChoiceField(choices=PRIORITIES)
    subject = serializers.CharField()
    teamIDs = serializers.ListField(child=serializers.UUIDField())
    requester = _PersonDoc()
    peopleInTheLoop = _PersonDoc(many=True)
    tagIDs = serializers.ListField(child=serializers.UUIDField())
    followers = serializers.ListField(child=serializers.UUIDField())
    assignment = _AssignmentDoc()
    customFields = serializers.DictField()
    ratingRequeestSent = serializers.BooleanField()
    rating = _RatingDoc(allow_null=True)
    silo = serializers.ChoiceField(choices=SILOS)
    language = serializers.CharField()

    class Meta:
        ref_name = "Ticket"


# --- ticket input ---------------------------------------------------------------------------------------


class PersonSerializer(StrictSerializer):
    email = StrictEmailField()
    name = StrictCharField(required=False, allow_blank=True, max_length=200)


class MessageInputSerializer(StrictSerializer):
    text = StrictCharField(max_length=100_000)
    isPrivate = StrictBooleanField(required=False)


class AuthorSerializer(StrictSerializer):
    type = serializers.ChoiceField(choices=AUTHOR_TYPES)


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "properties": {"ID": {"type": "string", "format": "uuid"}},
        "required": ["ID"],
    }
)
class RefField(serializers.Field):
    """`{"ID": "<uuid>"}` naming an object of the caller's license, or null."""

    default_error_messages = {
        "invalid": 'Expected an object {"ID": "<uuid>"} or null.',
        "does_not_exist": "'{pk}' does not exist in this license.",
    }

    def __init__(self, queryset, **kwargs):
        self.queryset = queryset
        super().__init__(allow_null=True, required=False, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict) or set(data) != {"ID"} or not isinstance(data["ID"], str):
            self.fail("invalid")
        try:
            return self.queryset.for_license(self.context["request"].license).get(pk=data["ID"])
        except Exception:
            self.fail("does_not_exist", pk=data["ID"])

    def to_representation(self, value):
        return {"ID": str(value.pk)}


@extend_schema_field({"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": True})
class LicensedIDsField(serializers.Field):
    """A JSON array of unique UUID strings naming objects of the caller's license, resolved in one query."""

    default_error_messages = {
        "invalid": "Expected an array of UUID strings.",
        "not_unique": "Items must be unique.",
        "does_not_exist": "'{pk}' does not exist in this license.",
    }

    def __init__(self, queryset, **kwargs):
        self.queryset = queryset
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, list) or not all(isinstance(item, str) for item in data) or len(data) > 100:
            self.fail("invalid")
        try:
            ids = [uuid.UUID(item) for item in data]
        except ValueError:
            self.fail("invalid")
        if len(set(ids)) != len(ids):
            self.fail("not_unique")
        found = self.queryset.for_license(self.context["request"].license).in_bulk(ids)
        for pk, item in zip(ids, data, strict=True):
            if pk not in found:
                self.fail("does_not_exist", pk=item)
        return [found[pk] for pk in ids]

    def to_representation(self, value):
        return [str(obj.pk) for obj in value]


class AssignmentSerializer(StrictSerializer):
    team = RefField(Team.objects)
    agent = RefField(Agent.objects)


class PriorityField(StrictIntegerField):
    default_error_messages = {"choice": "Must be one of -10, 0, 10, 20."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in PRIORITIES:
            self.fail("choice")
        return value


class TicketWriteSerializer(StrictSerializer):
    """Fields shared by create and update (all optional here)."""

    subject = StrictCharField(required=False, max_length=500)
    status = serializers.ChoiceField(choices=STATUSES, required=False)
    priority = PriorityField(required=False)
    teamIDs = LicensedIDsField(Team.objects, source="teams", required=False)
    assignment = AssignmentSerializer(required=False)
    tagIDs = LicensedIDsField(Tag.objects, source="tags", required=False)
    followers = LicensedIDsField(Agent.objects, required=False)
    customFields = serializers.DictField(source="custom_fields", required=False)
    message = MessageInputSerializer(required=False)
    author = AuthorSerializer(required=False)
    transactionID = StrictUUIDField(source="transaction_id", required=False)

    def validate(self, attrs):
        author = attrs.pop("author", None)
        if author is not None:
            attrs["author_type"] = author["type"]
        return attrs


class TicketCreateSerializer(TicketWriteSerializer):
    subject = StrictCharField(max_length=500)
    requester = PersonSerializer()
    message = MessageInputSerializer()
    peopleInTheLoop = StrictListField(child=PersonSerializer(), source="people_in_the_loop", required=False)


class TicketUpdateSerializer(TicketWriteSerializer):
    silo = serializers.ChoiceField(choices=SILOS, required=False)


class MergeSerializer(StrictSerializer):
    childTicketID = LicensedPrimaryKeyField(queryset=Ticket.objects, source="child")


# --- tags -----------------------------------------------------------------------------------------------


class TagSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)

    class Meta:
        fields = [
            "ID",
            "licenseID",
            "name",
            "createdAt",
            "createdBy",
            "createdByType",
            "updatedAt",
            "updatedBy",
        ]

    def get_fields(self):
        fields = super().get_fields()
        return {name: fields[name] for name in self.Meta.fields}


class TransactionSerializer(serializers.Serializer):
    ID = serializers.UUIDField(source="pk", read_only=True)


class TagWriteSerializer(StrictSerializer):
    name = StrictCharField(max_length=100)
