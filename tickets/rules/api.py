"""`/v1/rules` (the declared viewset) and `POST /v1/rules/{ruleID}/test`."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from helpdesk.api.fields import JSONArrayField, StrictBooleanField, StrictCharField, StrictIntegerField
from helpdesk.api.permissions import WRITERS
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from helpdesk.errors import NotFound
from tickets import actions as ticket_actions
from tickets.actions import MAX_ACTIONS
from tickets.models import Ticket
from tickets.rules import conditions, engine, services
from tickets.rules.conditions import MAX_CONDITIONS
from tickets.rules.models import QUANTIFIERS, TYPES, Rule
from tickets.rules.services import ACTION_TYPES

TRIGGERS_HELP = (
    "Conditions `{type, op, value}`: event (created, statusChanged, priorityChanged, assignmentChanged, "
    "clientMessage, agentMessage, tagsChanged), status, priority, teamIDs, agentID, tagIDs, subject, messageText, "
    "requesterEmail, customField (+ apiKey), source, language, silo, hoursSince (+ field); ops is, isNot, "
    "contains, notContains, gt, lt."
)
ACTIONS_HELP = (
    "Actions `{type, value}`: setStatus, setPriority, addTags, removeTags, addFollowers, assignTeam, assignAgent, "
    "setCustomField `{apiKey, value}`, moveToSilo, sendMessage `{text, isPrivate}`, autoassign (null), "
    "notifyAgents (agent IDs, or assignee / team)."
)
EXAMPLE = {
    "name": "VIP to Priority",
    "ordering": 10,
    "quantifier": "all",
    "triggers": [
        {"type": "event", "op": "is", "value": "created"},
        {"type": "requesterEmail", "op": "contains", "value": "@vip.example"},
    ],
    "actions": [
        {"type": "assignTeam", "value": "6f1c7a55-2b5e-4c1e-9c55-0d7f5bb3b0aa"},
        {"type": "setPriority", "value": 20},
    ],
}


class RuleSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    description = serializers.CharField(read_only=True)
    active = serializers.BooleanField(read_only=True)
    ordering = serializers.IntegerField(read_only=True)
    quantifier = serializers.ChoiceField(choices=QUANTIFIERS, read_only=True)
    triggers = serializers.JSONField(read_only=True, help_text=TRIGGERS_HELP)
    actions = serializers.JSONField(read_only=True, help_text=ACTIONS_HELP)
    type = serializers.ChoiceField(choices=TYPES, read_only=True)
    useCounter = serializers.IntegerField(source="use_counter", read_only=True)
    limitPerTicket = serializers.IntegerField(source="limit_per_ticket", read_only=True)

    class Meta:
        fields = [
            "ID", "licenseID", "name", "description", "active", "ordering", "quantifier", "triggers", "actions",
            "type", "useCounter", "limitPerTicket", "createdAt", "createdBy", "createdByType", "updatedAt",
            "updatedBy",
        ]  # fmt: skip


@extend_schema_field(conditions.json_schema())
class TriggersField(JSONArrayField):
    """The conditions: their shapes in the document; checked by tickets.rules.conditions (index and key named)."""

    def __init__(self, **kwargs):
        super().__init__(max_size=MAX_CONDITIONS * 8 * 1024, help_text=TRIGGERS_HELP, **kwargs)


@extend_schema_field(ticket_actions.json_schema(ACTION_TYPES))
class RuleActionsField(JSONArrayField):
    """The actions a rule may run: their shapes in the document; checked by tickets.actions."""

    def __init__(self, **kwargs):
        super().__init__(max_size=MAX_ACTIONS * 70 * 1024, help_text=ACTIONS_HELP, **kwargs)


class RuleUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    description = StrictCharField(max_length=2000, required=False, allow_blank=True)
    active = StrictBooleanField(required=False)
    ordering = StrictIntegerField(required=False, min_value=-1_000_000, max_value=1_000_000)
    quantifier = serializers.ChoiceField(choices=QUANTIFIERS, required=False)
    type = serializers.ChoiceField(choices=TYPES, required=False)
    limitPerTicket = StrictIntegerField(
        source="limit_per_ticket", required=False, min_value=1, max_value=1000
    )
    # Checked item by item (the index and key named); the size bound first.
    triggers = TriggersField(required=False)
    actions = RuleActionsField(required=False)


class RuleCreateSerializer(RuleUpdateSerializer):
    name = StrictCharField(max_length=200)
    triggers = TriggersField()
    actions = RuleActionsField()


class RuleTestSerializer(StrictSerializer):
    ticketID = serializers.UUIDField()


class RuleTestResultSerializer(serializers.Serializer):
    fires = serializers.BooleanField(help_text="Whether the rule would fire on the ticket now.")
    reason = serializers.CharField(help_text="Why it would not fire (empty when it would).")
    changes = serializers.JSONField(help_text="What its actions would change: field -> new value.")


class RuleViewSet(ResourceViewSet):
    resource_name = "rules"
    queryset = Rule.objects.order_by("created_at", "id")
    serializer_class = RuleSerializer
    write_serializer_class = RuleUpdateSerializer
    create_serializer_class = RuleCreateSerializer
    create_service = services.rule_create
    update_service = services.rule_update
    delete_service = services.rule_delete
    lookup_url_kwarg = "ruleID"
    audit_target = "rules"
    webhook_events = True
    roles = {"test": WRITERS}
    openapi_tag = (
        "Rules",
        "Conditions and actions run on a ticket inside the write that triggered them (in `ordering`), or by a "
        "sweep every minute for time conditions.",
    )
    noun = ("rule", "rules")
    descriptions = {
        "create": """Create a rule. Each condition and action is validated now: an unknown type, op or field, or an
        ID of another license, is a 400 naming `triggers` or `actions`, the index and the key.""",
    }

    def perform_create(self, data):
        return self.create_service(license=self.request.license, **data)

    def perform_update(self, instance, data):
        return self.update_service(rule=instance, **data)

    def perform_destroy(self, instance):
        self.delete_service(rule=instance)

    @extend_schema(
        summary="Test a rule on a ticket",
        request=RuleTestSerializer,
        responses={200: RuleTestResultSerializer},
        examples=[
            OpenApiExample(
                "A rule that would fire",
                value={"fires": True, "reason": "", "changes": {"priority": 20}},
                response_only=True,
            )
        ],
    )
    @action(detail=True, methods=["post"])
    def test(self, request, **kwargs):
        """Whether the rule would fire on the ticket now (its event conditions taken as met) and what its actions
        would change. Nothing is written."""
        rule = self.get_object()
        body = RuleTestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ticket = (
            Ticket.objects.for_license(request.license).filter(pk=body.validated_data["ticketID"]).first()
        )
        if ticket is None:
            raise NotFound()
        return Response(engine.dry_run(rule=rule, ticket=ticket))
