"""The e-mail app's actions on accounts' resources (accounts never imports this app):
POST /v1/licenses/{licenseID}/forwardingInstructions and POST /v1/agents/{agentID}/invite."""

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.api.serializers import AgentSerializer
from accounts.api.views import AgentViewSetBase, LicenseViewSetBase
from helpdesk.api.permissions import OWNERS
from templates_app.api.serializers import ForwardingInstructionsSerializer
from templates_app.forwarding import forwarding_instructions_send
from templates_app.invitations import agent_reinvite


class LicenseForwardingViewSet(LicenseViewSetBase):
    """A license is the tenant itself: an agent sees the licenses it is an active member of."""

    roles = {"forwarding_instructions": OWNERS}

    @extend_schema(request=ForwardingInstructionsSerializer, responses=str)
    @action(detail=True, methods=["post"], url_path="forwardingInstructions")
    def forwarding_instructions(self, request, **kwargs):
        license = self.get_object()
        serializer = ForwardingInstructionsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        confirmation = forwarding_instructions_send(
            license=license,
            email=serializer.validated_data["email"],
            agent=request.agent,
            request_key=request.headers.get("Idempotency-Key", "")[:100] or None,
        )
        return Response(confirmation)


class AgentInvitationViewSet(AgentViewSetBase):
    @extend_schema(request=None, responses=AgentSerializer)
    @action(detail=True, methods=["post"])
    def invite(self, request, **kwargs):
        """Send the invitation again (a new link; earlier links stop working)."""
        agent = self.get_object()
        agent_reinvite(agent=agent)
        return Response(AgentSerializer(self.get_queryset().get(pk=agent.pk)).data)
