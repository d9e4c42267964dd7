"""`/v1/blockedEmails` and `/v1/trustedEmails` (`GET, POST` · `GET, PATCH, DELETE /{ID}`): owners write, everyone
reads. `{email}`: an address, or `@domain` for a whole domain (templates_app.senders)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from helpdesk.api.fields import StrictCharField
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from templates_app import senders
from templates_app.models import BlockedSender, TrustedSender

FIELDS = ["ID", "licenseID", "email", "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy"]


class SenderSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    email = serializers.CharField(read_only=True)

    class Meta:
        fields = FIELDS


# What templates_app.senders.normalized takes, said for the document (printable ASCII, no space): an address or
# `@domain`, a dotted domain without empty labels.
_LABEL = r"[!-\-/-?A-~]+"
SENDER_PATTERN = rf"^[!-?A-~]*@{_LABEL}(\.{_LABEL})+$"


@extend_schema_field({"type": "string", "maxLength": 254, "pattern": SENDER_PATTERN})
class SenderField(StrictCharField):
    pass


class SenderWriteSerializer(StrictSerializer):
    email = SenderField(max_length=254, help_text="An address (jo@example.com) or a domain (@example.com).")


class BlockedEmailViewSet(ResourceViewSet):
    resource_name = "blockedEmails"
    queryset = BlockedSender.objects.order_by("email", "id")
    serializer_class = SenderSerializer
    write_serializer_class = SenderWriteSerializer
    create_service = senders.blocked_sender_create
    update_service = senders.blocked_sender_update
    delete_service = senders.blocked_sender_delete
    lookup_url_kwarg = "blockedEmailID"
    pagination_class = None  # a license's list, all of it
    audit_target = "blockedEmails"
    webhook_events = True
    openapi_tag = (
        "Blocked e-mails",
        "Senders (an address, or @domain) whose new tickets by mail go to spam.",
    )
    noun = ("blocked e-mail", "blocked e-mails")


class TrustedEmailViewSet(ResourceViewSet):
    resource_name = "trustedEmails"
    queryset = TrustedSender.objects.order_by("email", "id")
    serializer_class = SenderSerializer
    write_serializer_class = SenderWriteSerializer
    create_service = senders.trusted_sender_create
    update_service = senders.trusted_sender_update
    delete_service = senders.trusted_sender_delete
    lookup_url_kwarg = "trustedEmailID"
    pagination_class = None  # a license's list, all of it
    audit_target = "trustedEmails"
    webhook_events = True
    openapi_tag = (
        "Trusted e-mails",
        "Senders (an address, or @domain) whose mail is never marked spam, unless also blocked.",
    )
    noun = ("trusted e-mail", "trusted e-mails")
