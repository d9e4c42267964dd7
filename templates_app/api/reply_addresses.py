"""`GET, POST /v1/replyAddresses` · `DELETE /v1/replyAddresses/{ID}`: owners write, everyone reads."""

from rest_framework import serializers

from helpdesk.api.fields import StrictCharField, StrictEmailField
from helpdesk.api.resources import CreateMixin, DestroyMixin, ReadOnlyResourceViewSet
from helpdesk.api.serializers import StrictSerializer
from templates_app import reply_addresses
from templates_app.models import ReplyAddress


class ReplyAddressSerializer(serializers.Serializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    email = serializers.EmailField(read_only=True)
    name = serializers.CharField(read_only=True)
    verified = serializers.BooleanField(read_only=True)
    verifiedAt = serializers.DateTimeField(source="verified_at", read_only=True, allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    createdBy = serializers.UUIDField(source="created_by", read_only=True, allow_null=True)


class ReplyAddressCreateSerializer(StrictSerializer):
    email = StrictEmailField(max_length=254)
    name = StrictCharField(required=False, allow_blank=True, max_length=200)


class ReplyAddressViewSet(CreateMixin, DestroyMixin, ReadOnlyResourceViewSet):
    resource_name = "replyAddresses"
    queryset = ReplyAddress.objects.order_by("created_at", "id")
    serializer_class = ReplyAddressSerializer
    create_serializer_class = ReplyAddressCreateSerializer
    create_service = reply_addresses.reply_address_create
    delete_service = reply_addresses.reply_address_delete
    lookup_url_kwarg = "replyAddressID"
    pagination_class = None
    audit_target = "replyAddresses"
    openapi_tag = (
        "Reply addresses",
        "Verified addresses of your domain that customer replies are sent from.",
    )
    noun = ("reply address", "reply addresses")
    descriptions = {
        "create": """
            Add an address of your own domain; a confirmation link is e-mailed to it. Until it is confirmed,
            teams using it send from the inbound address with it as Reply-To.
        """,
        "destroy": "Delete the address; teams that used it send from the inbound address again.",
    }
