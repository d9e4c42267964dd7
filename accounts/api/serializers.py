"""Output shapes (the spec's names, letter for letter) and strict input validation for accounts."""

from rest_framework import serializers

from accounts.api.extensions import ExtensibleSerializer
from accounts.attachments import attachment_url
from accounts.models import LICENSE_SOURCE_FIELDS, ROLES, STATUS_ACTIVE, STATUS_INVITED, Agent, Team
from helpdesk.api.fields import (
    JSONArrayField,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
    StrictListField,
    StrictUUIDField,
)
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer, TimestampField

# --- output ---------------------------------------------------------------------------------------------


class AttachmentOutputSerializer(serializers.Serializer):
    url = serializers.SerializerMethodField()
    cid = serializers.CharField()
    name = serializers.CharField()
    type = serializers.CharField(source="content_type")
    sha256 = serializers.CharField()
    token = serializers.CharField()
    size = serializers.IntegerField()

    def get_url(self, obj) -> str:
        return attachment_url(obj)


class LicenseSettingsSerializer(StrictSerializer):
    companyName = StrictCharField(required=False, allow_blank=True, max_length=200)
    externalTickets = StrictBooleanField(required=False)
    ticketThread = StrictBooleanField(required=False)
    maxSubscriptionsPerSocket = StrictIntegerField(required=False, min_value=1, max_value=1000)
    defaultMailboxDescription = StrictCharField(required=False, allow_blank=True, max_length=500)
    maxChildTicketsPerTicket = StrictIntegerField(required=False, min_value=1, max_value=1000)
    poweredByFooter = StrictBooleanField(required=False)


class LicenseSourceSerializer(StrictSerializer):
    locals().update(
        {
            name: StrictCharField(required=False, allow_blank=True, max_length=2000)
            for name in LICENSE_SOURCE_FIELDS
        }
    )


class LicenseFlagsSerializer(serializers.Serializer):
    defaultInboxUsed = serializers.BooleanField()


class LicenseListSerializer(serializers.ListSerializer):
    def to_representation(self, data):
        licenses = list(data.all() if hasattr(data, "all") else data)
        self.child.load(licenses)  # the registered fields' data, for the whole list at once
        return super().to_representation(licenses)


class LicenseSerializer(ExtensibleSerializer, StampedOutputSerializer):
    ID = serializers.IntegerField(source="pk", read_only=True)
    defaultTeamID = serializers.UUIDField(source="default_team_id", read_only=True)
    defaultTemplateID = serializers.UUIDField(source="default_template_id", read_only=True, allow_null=True)
    flags = LicenseFlagsSerializer(read_only=True)
    settings = LicenseSettingsSerializer(read_only=True)
    source = LicenseSourceSerializer(read_only=True)
    detectedLanguages = serializers.ListField(
        source="detected_languages", child=serializers.CharField(), read_only=True
    )

    class Meta:
        fields = [
            "ID", "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy", "defaultTeamID",
            "defaultTemplateID", "flags", "settings", "source", "detectedLanguages",
            "subscription",  # ours, supplied by billing: the current subscription or null
        ]  # fmt: skip
        list_serializer_class = LicenseListSerializer


class TeamSettingsSerializer(StrictSerializer):
    notifyTeamAboutRequestersActivity = StrictBooleanField(required=False)
    notifyTeamAboutAssignedTicket = StrictBooleanField(required=False)
    unauthReplyCreatesNewTicket = StrictBooleanField(required=False)
    tagReminder = StrictBooleanField(required=False)


class TeamSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    settings = TeamSettingsSerializer(read_only=True)
    replyAddressID = serializers.UUIDField(source="reply_address_id", read_only=True, allow_null=True)
    replyName = serializers.CharField(source="reply_name", read_only=True)
    templateID = serializers.UUIDField(source="template_id", read_only=True, allow_null=True)
    integrations = serializers.DictField(read_only=True)

    class Meta:
        fields = [
            "ID", "licenseID", "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy", "name",
            "settings", "replyAddressID", "replyName", "templateID", "integrations",
        ]  # fmt: skip


class TeamDocSerializer(serializers.Serializer):
    doc = TeamSerializer(source="*")


class AgentFlagsSerializer(StrictSerializer):
    visitedWelcomeTutorial = StrictBooleanField(required=False)


class AgentSettingsSerializer(StrictSerializer):
    emailNotificationsActive = StrictBooleanField(required=False)
    webpushNotificationsActive = StrictCharField(required=False, max_length=50)


class SignatureOutputSerializer(serializers.Serializer):
    text = serializers.CharField(source="signature_text")
    richTextObj = serializers.ListField(source="signature_rich_text", child=serializers.JSONField())
    attachments = serializers.SerializerMethodField()

    def get_attachments(self, agent) -> list:
        return AttachmentOutputSerializer(agent.signature_attachments.all(), many=True).data


class ProvenAccountIDField(serializers.UUIDField):
    """The agent's `accountID` once its person accepted; null while `invited`, so that adding an address tells
    nobody whether it already has an account (nor hands out that account's ID, half of its credentials)."""

    def __init__(self, **kwargs):
        super().__init__(source="account_id", read_only=True, allow_null=True, **kwargs)

    def get_attribute(self, agent):
        return None if agent.status == STATUS_INVITED else agent.account_id


class AgentSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    accountID = ProvenAccountIDField()
    roles = serializers.ListField(child=serializers.ChoiceField(choices=ROLES), read_only=True)
    teamIDs = serializers.SerializerMethodField()
    email = serializers.EmailField(read_only=True)
    name = serializers.CharField(read_only=True)
    status = serializers.CharField(read_only=True)
    avatar = serializers.CharField(read_only=True)
    jobTitle = serializers.CharField(source="job_title", read_only=True, allow_null=True)
    flags = AgentFlagsSerializer(read_only=True)
    settings = AgentSettingsSerializer(read_only=True)
    autoassignment = serializers.BooleanField(read_only=True)
    autoassignmentTeamIDs = serializers.SerializerMethodField()
    signature = SignatureOutputSerializer(source="*", read_only=True)

    class Meta:
        fields = [
            "ID", "licenseID", "accountID", "createdAt", "updatedAt", "createdBy", "updatedBy", "createdByType",
            "roles", "teamIDs", "email", "name", "status", "avatar", "jobTitle", "flags", "settings",
            "autoassignment", "autoassignmentTeamIDs", "signature",
        ]  # fmt: skip

    def get_teamIDs(self, agent) -> list[str]:
        return sorted(str(team.pk) for team in agent.teams.all())

    def get_autoassignmentTeamIDs(self, agent) -> list[str]:
        return sorted(str(team.pk) for team in agent.autoassignment_teams.all())


class AgentDocSerializer(serializers.Serializer):
    doc = AgentSerializer(source="*")


# --- input ----------------------------------------------------------------------------------------------


class LicensedPrimaryKeyField(serializers.PrimaryKeyRelatedField):
    """An ID that must name an object of the caller's license (else 400 naming the field)."""

    default_error_messages = {
        "does_not_exist": "'{pk_value}' does not exist in this license.",
        "incorrect_type": "Must be a UUID string.",
    }

    def get_queryset(self):
        request = self.context["request"]
        return self.queryset.for_license(request.license)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("incorrect_type", data_type=type(data).__name__)
        try:
            return self.get_queryset().get(pk=data)
        except Exception:
            self.fail("does_not_exist", pk_value=data)


def licensed_ids(queryset, **kwargs):
    return StrictListField(child=LicensedPrimaryKeyField(queryset=queryset), unique=True, **kwargs)


def _templates():
    """The templates (templates_app's model, reached through the foreign key: accounts does not import it)."""
    return Team._meta.get_field("template").related_model.objects


class LicenseUpdateSerializer(StrictSerializer):
    defaultTeamID = LicensedPrimaryKeyField(queryset=Team.objects, source="default_team", required=False)
    defaultTemplateID = LicensedPrimaryKeyField(queryset=None, source="default_template", required=False)
    settings = LicenseSettingsSerializer(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["defaultTemplateID"].queryset = _templates()


class SignatureInputSerializer(StrictSerializer):
    text = StrictCharField(required=False, allow_blank=True, max_length=10000, source="signature_text")
    richTextObj = JSONArrayField(required=False, source="signature_rich_text")


class AgentWriteSerializer(StrictSerializer):
    """Fields of the spec's create and update agent bodies (both optional here; create adds required ones)."""

    name = StrictCharField(required=False, allow_blank=True, max_length=200)
    roles = StrictListField(
        child=serializers.ChoiceField(choices=ROLES), min_length=1, unique=True, required=False
    )
    teamIDs = licensed_ids(Team.objects, source="teams", required=False)
    avatar = StrictCharField(required=False, allow_blank=True, max_length=500)
    jobTitle = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=200, source="job_title"
    )
    flags = AgentFlagsSerializer(required=False)
    settings = AgentSettingsSerializer(required=False)
    autoassignment = StrictBooleanField(required=False)
    autoassignmentTeamIDs = licensed_ids(Team.objects, source="autoassignment_teams", required=False)
    signature = SignatureInputSerializer(required=False)
    transactionID = StrictUUIDField(required=False, source="transaction_id")

    def validate(self, attrs):
        signature = attrs.pop("signature", None)
        if signature:
            attrs.update(signature)
        return attrs


class AgentCreateSerializer(AgentWriteSerializer):
    email = StrictEmailField()
    roles = StrictListField(child=serializers.ChoiceField(choices=ROLES), min_length=1, unique=True)
    status = serializers.ChoiceField(choices=[STATUS_ACTIVE, STATUS_INVITED], required=False)


# What a normal agent may change in its own profile (contract's roles table).
OWN_PROFILE_FIELDS = {"name", "avatar", "jobTitle", "signature", "settings", "flags", "transactionID"}


class AgentBulkFieldsSerializer(StrictSerializer):
    teamIDs = licensed_ids(Team.objects, source="teams", required=False)
    flags = AgentFlagsSerializer(required=False)
    settings = AgentSettingsSerializer(required=False)


class AgentBulkUpdateSerializer(StrictSerializer):
    ids = StrictListField(
        child=LicensedPrimaryKeyField(queryset=Agent.objects), min_length=1, max_length=100, unique=True
    )
    fields = AgentBulkFieldsSerializer()


class TeamWriteSerializer(StrictSerializer):
    name = StrictCharField(required=False, max_length=200)
    settings = TeamSettingsSerializer(required=False)
    replyAddressID = StrictUUIDField(required=False, allow_null=True, source="reply_address_id")
    replyName = StrictCharField(required=False, allow_blank=True, max_length=200, source="reply_name")
    templateID = LicensedPrimaryKeyField(queryset=None, required=False, allow_null=True, source="template")
    autoassignmentAgentIDs = licensed_ids(Agent.objects, source="autoassignment_agents", required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["templateID"].queryset = _templates()


class TeamCreateSerializer(TeamWriteSerializer):
    name = StrictCharField(max_length=200)


class TeamBulkFieldsSerializer(StrictSerializer):
    replyAddressID = StrictUUIDField(required=False, allow_null=True, source="reply_address_id")
    replyName = StrictCharField(required=False, allow_blank=True, max_length=200, source="reply_name")
    settings = TeamSettingsSerializer(required=False)
    templateID = LicensedPrimaryKeyField(queryset=None, required=False, allow_null=True, source="template")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["templateID"].queryset = _templates()


class TeamBulkUpdateSerializer(StrictSerializer):
    ids = StrictListField(
        child=LicensedPrimaryKeyField(queryset=Team.objects), min_length=1, max_length=100, unique=True
    )
    fields = TeamBulkFieldsSerializer()


class TokenSerializer(serializers.Serializer):
    ID = serializers.UUIDField(source="pk")
    name = serializers.CharField()
    hint = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    createdAt = TimestampField(source="created_at")
    lastUsedAt = TimestampField(source="last_used_at", allow_null=True)


class LicenseCreateSerializer(ExtensibleSerializer, StrictSerializer):
    source = LicenseSourceSerializer(required=False)

    class Meta:
        # planCode and couponCode are billing's (the trial it starts): it supplies them at ready().
        fields = ["planCode", "couponCode", "source"]
