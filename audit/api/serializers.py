from rest_framework import serializers

from helpdesk.api.serializers import TimestampField
from helpdesk.context import SYSTEM_ACTOR_ID


class AuthorIDField(serializers.UUIDField):
    """Never null (the spec types it as uuid): entries of the system written before SYSTEM_ACTOR_ID existed
    hold null, and mean the system."""

    def get_attribute(self, instance):  # DRF skips to_representation() for None
        return super().get_attribute(instance) or SYSTEM_ACTOR_ID


class AuthorSerializer(serializers.Serializer):
    ID = AuthorIDField(source="author_id")
    # The person's account (what Basic authentication names), null for the system; ID is the agent.
    accountID = serializers.UUIDField(source="author_account_id", allow_null=True)
    type = serializers.CharField(source="author_type")
    email = serializers.CharField(source="author_email")
    ip = serializers.CharField(source="author_ip")
    userAgent = serializers.CharField(source="author_user_agent")
    # The OAuth app acting for the person: only on entries written through a Bearer token.
    appName = serializers.CharField(source="author_app_name", allow_null=True, required=False)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if data["appName"] is None:
            del data["appName"]  # entries of people and the system keep the spec's shape
        return data


class AuditEntrySerializer(serializers.Serializer):
    """The spec's audit log entry, letter for letter (plus `author.accountID` and `author.appName`)."""

    ID = serializers.UUIDField(source="pk")
    createdAt = TimestampField(source="created_at")
    action = serializers.CharField()
    target = serializers.CharField()
    author = AuthorSerializer(source="*")
    entityName = serializers.CharField(source="entity_name")
