"""`POST /v1/invitations/accept`: the invited person follows the e-mailed link (no Authorization needed).

Accepting is a write: credentials, when sent, must be able to write (a read-only personal token cannot), and no
OAuth token can (no scope covers it: an app never joins its user to another license)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from helpdesk.api.fields import StrictCharField
from helpdesk.api.permissions import CredentialsOptional
from helpdesk.api.serializers import StrictSerializer
from templates_app.invitations import invitation_accept


class InvitationAcceptSerializer(StrictSerializer):
    token = StrictCharField(max_length=500)
    password = StrictCharField(required=False, trim_whitespace=False, max_length=200)


class InvitationAcceptedSerializer(serializers.Serializer):
    accountID = serializers.UUIDField()
    agentID = serializers.UUIDField()
    licenseID = serializers.IntegerField()
    token = serializers.CharField(
        allow_null=True, help_text="The first personal access token (new accounts only)."
    )


class InvitationAcceptView(APIView):
    # AllowAny: anyone with the link (and the OpenAPI document says so); CredentialsOptional: credentials, when
    # sent, must be able to write (both must pass).
    permission_classes = [AllowAny, CredentialsOptional]
    license_required = False  # an account without a membership yet accepts its first one

    @extend_schema(request=InvitationAcceptSerializer, responses=InvitationAcceptedSerializer)
    def post(self, request):
        serializer = InvitationAcceptSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        agent, token = invitation_accept(caller=request.user, **serializer.validated_data)
        return Response(
            {
                "accountID": agent.account_id,
                "agentID": agent.pk,
                "licenseID": agent.license_id,
                "token": token,
            }
        )
