"""`/v1/macros` (the declared viewset) and `POST /v1/tickets/{ticketID}/macros/{macroID}` (the application)."""

from __future__ import annotations

import uuid

from django.db.models import Q
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from helpdesk.api.fields import JSONArrayField, StrictCharField
from helpdesk.api.permissions import WRITERS
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from helpdesk.api.tenancy import LicenseScopedViewSet
from helpdesk.errors import NotFound
from tickets.actions import MAX_ACTIONS, json_schema
from tickets.api.serializers import TicketDocSerializer
from tickets.macros import services
from tickets.macros.models import PRIVATE, SHARED, VISIBILITIES, Macro
from tickets.models import Ticket
from tickets.output import ticket_document

ACTIONS_HELP = (
    "Up to 100 actions `{type, value}`: setStatus, setPriority, addTags, removeTags, addFollowers, assignTeam, "
    "assignAgent, setCustomField `{apiKey, value}`, moveToSilo, sendMessage `{text, isPrivate}`, reply "
    "`{text | cannedResponseID, isPrivate}` (one message per macro)."
)
EXAMPLE = {
    "name": "Shipping question",
    "visibility": "shared",
    "actions": [
        {"type": "setStatus", "value": "pending"},
        {"type": "addTags", "value": ["6f1c7a55-2b5e-4c1e-9c55-0d7f5bb3b0aa"]},
        {
            "type": "reply",
            "value": {"cannedResponseID": "0b8e2a51-8f39-4c3b-a1f4-5d2b9f7e8c11", "isPrivate": False},
        },
    ],
}


@extend_schema_field(json_schema())
class ActionsField(JSONArrayField):
    """The actions: their shapes in the document; checked by tickets.actions (the index and key named)."""

    def __init__(self, **kwargs):
        super().__init__(max_size=MAX_ACTIONS * 70 * 1024, help_text=ACTIONS_HELP, **kwargs)


class MacroSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    visibility = serializers.ChoiceField(choices=VISIBILITIES, read_only=True)
    agentID = serializers.UUIDField(source="agent_id", read_only=True, allow_null=True)
    actions = ActionsField(read_only=True)

    class Meta:
        fields = [
            "ID", "licenseID", "name", "visibility", "agentID", "actions",
            "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy",
        ]  # fmt: skip


class MacroUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    visibility = serializers.ChoiceField(choices=VISIBILITIES, required=False)
    actions = ActionsField(required=False)


class MacroCreateSerializer(MacroUpdateSerializer):
    name = StrictCharField(max_length=200)
    actions = ActionsField()


def visible_macros(queryset, agent):
    """Shared macros, and the caller's own private ones (no one else's, owners included)."""
    return queryset.filter(Q(visibility=SHARED) | Q(visibility=PRIVATE, agent=agent))


class MacroViewSet(ResourceViewSet):
    resource_name = "macros"
    queryset = Macro.objects.order_by("created_at", "id")
    serializer_class = MacroSerializer
    write_serializer_class = MacroUpdateSerializer
    create_serializer_class = MacroCreateSerializer
    create_service = services.macro_create
    update_service = services.macro_update
    delete_service = services.macro_delete
    writers = WRITERS  # owners manage shared macros, every writer its private ones (the service decides)
    lookup_url_kwarg = "macroID"
    audit_target = "macros"
    webhook_events = True
    openapi_tag = (
        "Macros",
        "Named lists of actions applied to a ticket in one write: shared (owners manage them) or private to "
        "their agent.",
    )
    noun = ("macro", "macros")
    descriptions = {
        "create": """Create a macro: `visibility` `private` (the default: the caller's own, `agentID` is the
        caller) or `shared` (owners only). Each action is validated now: an unknown type, a bad value or an ID
        of another license is a 400 naming `actions`, the index and the key.""",
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Macro.objects.none()
        return visible_macros(super().get_queryset(), self.request.agent)

    def perform_create(self, data):
        return self.create_service(license=self.request.license, actor=self.request.agent, **data)

    def perform_update(self, instance, data):
        return self.update_service(macro=instance, actor=self.request.agent, **data)

    def perform_destroy(self, instance):
        self.delete_service(macro=instance, actor=self.request.agent)


class MacroApplicationViewSet(LicenseScopedViewSet):
    """`POST /v1/tickets/{ticketID}/macros/{macroID}`: the ticket, its license's, changed by every action."""

    queryset = Ticket.objects.all()
    serializer_class = TicketDocSerializer
    lookup_url_kwarg = "ticketID"
    roles = {"apply": WRITERS}

    @extend_schema(
        tags=["Tickets"],
        operation_id="tickets_macros_apply",
        summary="Apply a macro to a ticket",
        request=None,
        responses={200: TicketDocSerializer},
    )
    def apply(self, request, **kwargs):
        """Every action of the macro in one write (one transaction, one batch of events, one `tickets.update`
        webhook). An action that cannot apply (a tag deleted since, an agent not in the team, a ticket in a
        read-only silo) is a 409 `action_not_applicable` naming it, and nothing changes."""
        ticket = self.get_object()
        macro = visible_macros(Macro.objects.for_license(request.license), request.agent)
        macro = macro.filter(pk=_uuid_or_none(kwargs["macroID"])).first()
        if macro is None:
            raise NotFound()
        services.macro_apply(macro=macro, ticket=ticket, agent=request.agent)
        return Response(ticket_document(self.get_queryset(), ticket.pk, license_id=request.license.pk))


def _uuid_or_none(value: str):
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
