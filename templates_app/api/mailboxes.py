"""`/v1/mailboxes` (`GET, POST` · `GET, PATCH, DELETE /{ID}`): owners write, everyone reads (templates_app.mailboxes;
the polling: templates_app/inbound/imap.py)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import LicensedPrimaryKeyField
from accounts.models import Team
from helpdesk.api.fields import StrictCharField, StrictEmailField, StrictIntegerField
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from helpdesk.timestamps import iso
from templates_app import mailboxes
from templates_app.models import Mailbox, MailboxState, ReplyAddress

FIELDS = [
    "ID", "licenseID", "name", "email", "inboundAddress", "teamID", "replyAddressID", "imap", "status",
    "lastFetchedAt", "lastError",
]  # fmt: skip
STAMPS = ["createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy"]
SECURITY = ["ssl", "starttls"]
STATUSES = ["active", "failing", "disabled"]


class ImapOutputSerializer(serializers.Serializer):
    host = serializers.CharField(source="imap_host", read_only=True)
    port = serializers.IntegerField(source="imap_port", read_only=True)
    security = serializers.ChoiceField(SECURITY, source="imap_security", read_only=True)
    username = serializers.CharField(source="imap_username", read_only=True)
    folder = serializers.CharField(source="imap_folder", read_only=True)

    def get_attribute(self, instance):
        return instance if instance.imap_host else None


class MailboxSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    email = serializers.EmailField(read_only=True)
    inboundAddress = serializers.EmailField(
        source="inbound_address", read_only=True, help_text="Forward the support address's mail here."
    )
    teamID = serializers.UUIDField(source="team_id", read_only=True, allow_null=True)
    replyAddressID = serializers.UUIDField(source="reply_address_id", read_only=True, allow_null=True)
    imap = ImapOutputSerializer(
        read_only=True, allow_null=True, help_text="The IMAP account polled; the password is never shown."
    )
    status = serializers.SerializerMethodField()
    lastFetchedAt = serializers.SerializerMethodField()
    lastError = serializers.SerializerMethodField()

    class Meta:
        fields = [*FIELDS, *STAMPS]

    @staticmethod
    def _state(mailbox) -> MailboxState:
        try:
            return mailbox.state
        except MailboxState.DoesNotExist:  # never polled (a row written before its state): nothing to say yet
            return MailboxState(mailbox=mailbox)

    @extend_schema_field({"type": "string", "enum": STATUSES})
    def get_status(self, mailbox) -> str:
        if mailbox.disabled:
            return "disabled"
        return "failing" if self._state(mailbox).failing else "active"

    @extend_schema_field({"type": "string", "format": "date-time", "nullable": True})
    def get_lastFetchedAt(self, mailbox) -> str | None:  # noqa: N802  (the spec's spelling)
        fetched = self._state(mailbox).last_fetched_at
        return iso(fetched) if fetched else None

    @extend_schema_field({"type": "string"})
    def get_lastError(self, mailbox) -> str:  # noqa: N802
        return self._state(mailbox).last_error


class ImapWriteSerializer(StrictSerializer):
    host = StrictCharField(max_length=253)
    port = StrictIntegerField(
        required=False, min_value=1, max_value=65535, help_text="Default: 993 (ssl), 143 (starttls)."
    )
    security = serializers.ChoiceField(SECURITY)
    username = StrictCharField(max_length=254)
    password = StrictCharField(
        max_length=500,
        required=False,
        write_only=True,
        trim_whitespace=False,
        help_text="Write-only; required the first time, kept when left out later.",
    )
    folder = StrictCharField(max_length=200, required=False, help_text="Default: INBOX.")


class MailboxUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    email = StrictEmailField(max_length=254, required=False)
    teamID = LicensedPrimaryKeyField(queryset=Team.objects, source="team", required=False)
    replyAddressID = LicensedPrimaryKeyField(
        queryset=ReplyAddress.objects, source="reply_address", required=False, allow_null=True
    )
    imap = ImapWriteSerializer(required=False, allow_null=True)
    status = serializers.ChoiceField(["active", "disabled"], required=False)


class MailboxCreateSerializer(MailboxUpdateSerializer):
    name = StrictCharField(max_length=200)
    email = StrictEmailField(max_length=254)


class MailboxViewSet(ResourceViewSet):
    resource_name = "mailboxes"
    queryset = Mailbox.objects.select_related("state").order_by("created_at", "id")
    serializer_class = MailboxSerializer
    write_serializer_class = MailboxUpdateSerializer
    create_serializer_class = MailboxCreateSerializer
    create_service = mailboxes.mailbox_create
    update_service = mailboxes.mailbox_update
    delete_service = mailboxes.mailbox_delete
    lookup_url_kwarg = "mailboxID"
    pagination_class = None  # a license's few mailboxes, all of them
    audit_target = "mailboxes"
    webhook_events = True
    openapi_tag = (
        "Mailboxes",
        "Your support addresses: each has an inbound address to forward it to (tickets land in its team), and "
        "optionally an IMAP account we poll instead.",
    )
    noun = ("mailbox", "mailboxes")
