"""`/v1/cannedResponses`: the serializers and the declared viewset, with `POST .../{ID}/render`."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db.models import Q
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.api.serializers import AttachmentOutputSerializer, LicensedPrimaryKeyField
from accounts.models import Team, TeamMembership
from helpdesk.api.fields import JSONObjectField, StrictCharField, StrictListField, StrictUUIDField
from helpdesk.api.permissions import WRITERS
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from helpdesk.errors import field_error
from tickets import placeholders
from tickets.canned_responses import services
from tickets.canned_responses.models import CannedResponse
from tickets.models import Ticket

FIELDS = ["ID", "licenseID", "text", "richTextObj", "shortcuts", "teamID", "attachments"]
STAMPS = ["createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy"]


class CannedResponseSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    text = serializers.CharField(read_only=True)
    richTextObj = serializers.JSONField(source="rich_text_obj", read_only=True, allow_null=True)
    shortcuts = serializers.ListField(child=serializers.CharField(), read_only=True)
    teamID = serializers.UUIDField(source="team_id", read_only=True, allow_null=True)
    attachments = AttachmentOutputSerializer(many=True, read_only=True)

    class Meta:
        fields = [*FIELDS, *STAMPS]


_shortcut = StrictCharField(max_length=50, validators=[RegexValidator(r"^\S+$", "A shortcut has no spaces.")])


class CannedResponseUpdateSerializer(StrictSerializer):
    text = StrictCharField(max_length=services.MAX_TEXT, required=False, trim_whitespace=False)
    richTextObj = JSONObjectField(source="rich_text_obj", required=False, allow_null=True)
    shortcuts = StrictListField(
        child=_shortcut, unique=True, required=False, max_length=services.MAX_SHORTCUTS
    )
    teamID = LicensedPrimaryKeyField(queryset=Team.objects, source="team", required=False, allow_null=True)
    transactionID = StrictUUIDField(source="transaction_id", required=False)


class CannedResponseCreateSerializer(CannedResponseUpdateSerializer):
    text = StrictCharField(max_length=services.MAX_TEXT, trim_whitespace=False)


class RenderSerializer(StrictSerializer):
    ticketID = StrictUUIDField()


class RenderedMessageSerializer(serializers.Serializer):
    text = serializers.CharField()
    richTextHtml = serializers.CharField()


class CannedResponseViewSet(ResourceViewSet):
    resource_name = "cannedResponses"
    queryset = CannedResponse.objects.prefetch_related("attachments").order_by("created_at", "id")
    serializer_class = CannedResponseSerializer
    write_serializer_class = CannedResponseUpdateSerializer
    create_serializer_class = CannedResponseCreateSerializer
    create_service = services.canned_response_create
    update_service = services.canned_response_update
    delete_service = services.canned_response_delete
    writers = WRITERS  # the contract: normal agents may create and edit them
    lookup_url_kwarg = "cannedResponseID"
    audit_target = "cannedResponses"
    webhook_events = True
    openapi_tag = (
        "Canned responses",
        "Saved answers with shortcuts and the templates' placeholders ({{ticket.shortID}}, {{requester.name}}, "
        "{{agent.name}}, ...), for the whole license or one team.",
    )
    noun = ("canned response", "canned responses")
    descriptions = {
        "create": """Create a canned response. `shortcuts` are unique in the license (400 naming the one taken);
        an unknown placeholder in `text` is a 400 naming it; `teamID` null: the whole license sees it, else
        that team's members and the owners; `transactionID` attaches the transaction's files.""",
    }

    def get_queryset(self):
        queryset = super().get_queryset()
        agent = getattr(self.request, "agent", None)
        if agent is None or agent.is_owner:
            return queryset
        teams = TeamMembership.objects.filter(agent=agent).values("team_id")
        return queryset.filter(Q(team__isnull=True) | Q(team_id__in=teams))

    def perform_create(self, data):
        return self.create_service(license=self.request.license, actor=self.request.agent, **data)

    def perform_update(self, instance, data):
        return self.update_service(canned_response=instance, actor=self.request.agent, **data)

    @extend_schema(
        summary="Render a canned response for a ticket",
        request=RenderSerializer,
        responses=RenderedMessageSerializer,
        examples=[
            OpenApiExample(
                "Rendered",
                value={
                    "text": "Hello Jane, ticket 42 is on its way.",
                    "richTextHtml": "<p>Hello Jane, ...</p>",
                },
                response_only=True,
            )
        ],
    )
    @action(detail=True, methods=["post"], url_path="render")
    def render_for_ticket(self, request, **kwargs):
        """The text with the ticket's values and the caller's name and signature: `{text, richTextHtml}`.
        A `ticketID` that is not of this license is a 400."""
        canned_response = self.get_object()
        body = RenderSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ticket_id = body.validated_data["ticketID"]
        ticket = (
            Ticket.objects.for_license(request.license).select_related("license").filter(pk=ticket_id).first()
        )
        if ticket is None:
            raise field_error("ticketID", f"'{ticket_id}' does not exist in this license.")
        text, html = placeholders.render(text=canned_response.text, ticket=ticket, agent=request.agent)
        return Response({"text": text, "richTextHtml": html})
