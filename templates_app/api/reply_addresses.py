"""`GET, POST /v1/replyAddresses` · `DELETE /v1/replyAddresses/{ID}`: owners write, everyone reads."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.response import Response

from helpdesk.api.fields import StrictCharField, StrictEmailField
from helpdesk.api.serializers import StrictSerializer
from helpdesk.api.tenancy import LicenseScopedViewSet
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


class ReplyAddressViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, LicenseScopedViewSet):
    queryset = ReplyAddress.objects.order_by("created_at", "id")
    serializer_class = ReplyAddressSerializer
    lookup_url_kwarg = "replyAddressID"

    @extend_schema(request=ReplyAddressCreateSerializer, responses={201: ReplyAddressSerializer})
    def create(self, request):
        """Add an address of your own domain; a confirmation link is e-mailed to it. Until it is confirmed,
        teams using it send from the inbound address with it as Reply-To."""
        serializer = ReplyAddressCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        address = reply_addresses.reply_address_create(license=request.license, **serializer.validated_data)
        return Response(ReplyAddressSerializer(address).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, **kwargs):
        """Delete the address; teams that used it send from the inbound address again."""
        reply_addresses.reply_address_delete(address=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
