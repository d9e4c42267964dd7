"""Strict input validation of tickets, tags and transactions, and the Ticket document of the OpenAPI schema.

Responses are not built here: tickets.output builds them from the table that `TicketDocSerializer` is derived
from (tickets.document.DOCUMENT).
"""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import LicensedPrimaryKeyField
from accounts.models import Agent, Team
from helpdesk.api.fields import (
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
    StrictListField,
    StrictUUIDField,
)
from helpdesk.api.serializers import LeafFieldsCopied, StampedOutputSerializer, StrictSerializer
from tickets import document, events_output
from tickets.models import AUTHOR_TYPES, PRIORITIES, SILOS, STATUSES, Tag, Ticket

TicketEventDocSerializer = events_output.event_serializer()


class TicketDocSerializer(serializers.Serializer):
    """A ticket."""

    # Derived from the table that tickets.output builds the responses from.
    locals().update(document.schema_fields(document.DOCUMENT))
    events = TicketEventDocSerializer(
        many=True, required=False, help_text="Single reads; in search only with eventsScope=all."
    )

    class Meta:
        ref_name = "Ticket"


# --- ticket input ---------------------------------------------------------------------------------------


class PersonSerializer(LeafFieldsCopied, StrictSerializer):
    email = StrictEmailField()
    name = StrictCharField(required=False, allow_blank=True, max_length=200)


class MessageInputSerializer(LeafFieldsCopied, StrictSerializer):
    text = StrictCharField(max_length=100_000)
    isPrivate = StrictBooleanField(required=False)


class AuthorSerializer(LeafFieldsCopied, StrictSerializer):
    type = serializers.ChoiceField(choices=AUTHOR_TYPES)


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "additionalProperties": False,
        "required": ["ID"],
        "properties": {"ID": {"type": "string", "format": "uuid", "nullable": True}},
    }
)
class RefField(serializers.Field):
    """`{"ID": "<uuid>"}` naming an object of the caller's license; null or `{"ID": null}` clears it."""

    # DRF's fail() runs these through str.format: literal braces are doubled.
    default_error_messages = {
        "invalid": 'Expected an object {{"ID": "<uuid>"}} or null.',
        "does_not_exist": "'{pk}' does not exist in this license.",
    }

    def __init__(self, queryset, **kwargs):
        self.queryset = queryset
        super().__init__(allow_null=True, required=False, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict) or set(data) != {"ID"}:
            self.fail("invalid")
        if data["ID"] is None:
            return None
        if not isinstance(data["ID"], str):
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


class AssignmentSerializer(LeafFieldsCopied, StrictSerializer):
    team = RefField(Team.objects)
    agent = RefField(Agent.objects)


@extend_schema_field({"type": "integer", "enum": list(PRIORITIES)})
class PriorityField(StrictIntegerField):
    default_error_messages = {"choice": "Must be one of -10, 0, 10, 20."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in PRIORITIES:
            self.fail("choice")
        return value


class TicketWriteSerializer(LeafFieldsCopied, StrictSerializer):
    """Fields shared by create and update (all optional here)."""

    subject = StrictCharField(required=False, max_length=500)
    status = serializers.ChoiceField(choices=STATUSES, required=False)
    priority = PriorityField(required=False)
    teamIDs = LicensedIDsField(Team.objects, source="teams", required=False)
    assignment = AssignmentSerializer(required=False)
    tagIDs = LicensedIDsField(Tag.objects, source="tags", required=False)
    followers = LicensedIDsField(Agent.objects, required=False)
    customFields = JSONObjectField(source="custom_fields", required=False)
    message = MessageInputSerializer(required=False)
    author = AuthorSerializer(required=False)
    transactionID = StrictUUIDField(source="transaction_id", required=False)

    def validate(self, attrs):
        author = attrs.pop("author", None)
        if author is not None:
            attrs["author_type"] = author["type"]
            if author["type"] == "client" and (attrs.get("message") or {}).get("isPrivate"):
                # a private note is the team's; the customer's own words are never hidden from them
                raise serializers.ValidationError(
                    {"message": {"isPrivate": ["A client's message cannot be private."]}}
                )
        return attrs


class TicketCreateSerializer(TicketWriteSerializer):
    subject = StrictCharField(max_length=500)
    requester = PersonSerializer()
    message = MessageInputSerializer()
    peopleInTheLoop = StrictListField(child=PersonSerializer(), source="people_in_the_loop", required=False)


class TicketUpdateSerializer(TicketWriteSerializer):
    silo = serializers.ChoiceField(choices=SILOS, required=False)
    # Solve even when a team's tagReminder asks for a tag first (else 409 `tag_required`).
    force = StrictBooleanField(required=False)


class MergeSerializer(StrictSerializer):
    childTicketID = LicensedPrimaryKeyField(queryset=Ticket.objects, source="child")


# --- ticket sub-resources -------------------------------------------------------------------------------


@extend_schema_field(
    {"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": True, "minItems": 1}
)
class SomeLicensedIDsField(LicensedIDsField):
    """At least one ID."""

    def to_internal_value(self, data):
        found = super().to_internal_value(data)
        if not found:
            raise serializers.ValidationError("Name at least one.")
        return found


class TicketFollowersSerializer(StrictSerializer):
    """Agents of the license to add to (POST) or take from (DELETE) the ticket's followers."""

    agentIDs = SomeLicensedIDsField(Agent.objects)


class TicketTagsSerializer(StrictSerializer):
    """Tags of the license to put on (POST) or take off (DELETE) the ticket."""

    tagIDs = SomeLicensedIDsField(Tag.objects)


class TicketSiloSerializer(StrictSerializer):
    silo = serializers.ChoiceField(choices=SILOS)


class RatingRequestSerializer(StrictSerializer):
    """No fields: the request is the ticket's (an empty body, or none)."""


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


class TransactionSerializer(serializers.Serializer):
    ID = serializers.UUIDField(source="pk", read_only=True)


class TagWriteSerializer(StrictSerializer):
    name = StrictCharField(max_length=100)
