from rest_framework import serializers

from helpdesk.api.serializers import TimestampField


class AuthorSerializer(serializers.Serializer):
    ID = serializers.UUIDField(source="author_id", allow_null=True)
    type = serializers.CharField(source="author_type")
    email = serializers.CharField(source="author_email")
    ip = serializers.CharField(source="author_ip")
    userAgent = serializers.CharField(source="author_user_agent")


class AuditEntrySerializer(serializers.Serializer):
    """The spec's audit log entry, letter for letter."""

    ID = serializers.UUIDField(source="pk")
    createdAt = TimestampField(source="created_at")
    action = serializers.CharField()
    target = serializers.CharField()
    author = AuthorSerializer(source="*")
    entityName = serializers.CharField(source="entity_name")
