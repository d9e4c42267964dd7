"""Strict input validation of tickets, tags and transactions, and the Ticket document of the OpenAPI schema.

Responses are not built here: the output of the search hot path comes from `tickets.output`.
"""

from __future__ import annotations

import uuid

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
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from tickets.models import AUTHOR_TYPES, PRIORITIES, SILOS, STATUSES, Tag, Ticket


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
    createdBy = serializers.UUIDField()
    updatedBy = serializers.UUIDField()
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
