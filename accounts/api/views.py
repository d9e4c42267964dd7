"""Licenses, agents and teams. Viewsets are declarations; writes go to accounts.services."""

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response

from accounts import services
from accounts.api.serializers import (
    OWN_PROFILE_FIELDS,
    AgentBulkUpdateSerializer,
    AgentCreateSerializer,
    AgentDocSerializer,
    AgentSerializer,
    AgentWriteSerializer,
    LicenseCreateSerializer,
    LicenseSerializer,
    LicenseUpdateSerializer,
    TeamBulkUpdateSerializer,
    TeamCreateSerializer,
    TeamDocSerializer,
    TeamSerializer,
    TeamWriteSerializer,
)
from accounts.models import STATUS_ACTIVE, Agent, License, Team
from helpdesk.api.permissions import EVERYONE, OWNERS, WRITERS
from helpdesk.api.tenancy import LicenseScopedViewSet


class LicenseViewSetBase(viewsets.GenericViewSet):
    # The base of the views on /v1/licenses, here and in the apps that add actions to a license (the e-mail
    # app's forwardingInstructions). Their docstrings are the schema's description of their operations.
    serializer_class = LicenseSerializer
    lookup_url_kwarg = "licenseID"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return License.objects.filter(
            agents__account=self.request.user, agents__status=STATUS_ACTIVE
        ).order_by("pk")

    def get_object(self):
        # Only the license the request is scoped to: another (even the caller's other one) is a 404.
        if str(self.request.license.pk) != self.kwargs["licenseID"]:
            raise NotFound()
        return self.request.license

    @property
    def license_required(self):
        return self.action not in ("list", "create")


class LicenseViewSet(mixins.ListModelMixin, LicenseViewSetBase):
    """A license is the tenant itself: an agent sees the licenses it is an active member of."""

    roles = {"partial_update": OWNERS}

    def retrieve(self, request, licenseID=None):
        return Response(LicenseSerializer(self.get_object()).data)

    @extend_schema(request=LicenseCreateSerializer, responses={201: LicenseSerializer})
    def create(self, request):
        """First login: the caller's license, default team, default template, owner agent and trial."""
        serializer = LicenseCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account = request.user
        license = services.license_create(
            owner_email=account.email,
            owner_name=account.name,
            first_license_only=True,
            **serializer.validated_data,
        )
        return Response(LicenseSerializer(license).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=LicenseUpdateSerializer, responses=LicenseSerializer)
    def partial_update(self, request, licenseID=None):
        license = self.get_object()
        serializer = LicenseUpdateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        license = services.license_update(license=license, data=serializer.validated_data)
        return Response(LicenseSerializer(license).data)


def _agent_queryset():
    return Agent.objects.prefetch_related(
        Prefetch("teams", queryset=Team.objects.only("id")),
        Prefetch("autoassignment_teams", queryset=Team.objects.only("id")),
        "signature_attachments",
    ).order_by("created_at", "id")


class AgentViewSetBase(LicenseScopedViewSet):
    # The base of the views on /v1/agents, here and in the apps that add actions to an agent (invite).
    queryset = _agent_queryset()
    serializer_class = AgentSerializer
    lookup_url_kwarg = "agentID"


class AgentViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, AgentViewSetBase
):
    roles = {"partial_update": WRITERS}  # normal agents: own profile only, checked below

    @extend_schema(request=AgentCreateSerializer, responses={201: AgentSerializer})
    def create(self, request):
        serializer = AgentCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        agent = services.agent_create(license=request.license, **serializer.validated_data)
        return Response(
            AgentSerializer(self.get_queryset().get(pk=agent.pk)).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(request=AgentWriteSerializer, responses=AgentSerializer)
    def partial_update(self, request, **kwargs):
        agent = self.get_object()
        if not request.agent.is_owner:
            if agent.pk != request.agent.pk:
                raise PermissionDenied("Only owners can change other agents.")
            forbidden = (
                sorted(set(request.data) - OWN_PROFILE_FIELDS) if isinstance(request.data, dict) else []
            )
            if forbidden:
                raise PermissionDenied(f"Only owners can change {', '.join(forbidden)}.")
        serializer = AgentWriteSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        services.agent_update(agent=agent, **serializer.validated_data)
        return Response(AgentSerializer(self.get_queryset().get(pk=agent.pk)).data)

    @extend_schema(
        operation_id="agents_bulk_update",
        request=AgentBulkUpdateSerializer,
        responses=AgentDocSerializer(many=True),
    )
    def bulk_update(self, request):
        serializer = AgentBulkUpdateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        agents = services.agents_bulk_update(
            agents=serializer.validated_data["ids"], fields=serializer.validated_data["fields"]
        )
        fresh = self.get_queryset().in_bulk([agent.pk for agent in agents])
        return Response(AgentDocSerializer([fresh[agent.pk] for agent in agents], many=True).data)

    def perform_destroy(self, instance):
        services.agent_delete(agent=instance)


class TeamViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, LicenseScopedViewSet
):
    queryset = Team.objects.order_by("created_at", "id")
    serializer_class = TeamSerializer
    lookup_url_kwarg = "teamID"
    roles = {"list": EVERYONE, "retrieve": EVERYONE}

    @extend_schema(request=TeamCreateSerializer, responses={201: TeamSerializer})
    def create(self, request):
        serializer = TeamCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        team = services.team_create(license=request.license, **serializer.validated_data)
        return Response(TeamSerializer(team).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=TeamWriteSerializer, responses=TeamSerializer)
    def partial_update(self, request, **kwargs):
        team = self.get_object()
        serializer = TeamWriteSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        team = services.team_update(team=team, **serializer.validated_data)
        return Response(TeamSerializer(team).data)

    @extend_schema(
        operation_id="teams_bulk_update",
        request=TeamBulkUpdateSerializer,
        responses=TeamDocSerializer(many=True),
    )
    def bulk_update(self, request):
        serializer = TeamBulkUpdateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        teams = services.teams_bulk_update(
            license=request.license,
            teams=serializer.validated_data["ids"],
            fields=serializer.validated_data["fields"],
        )
        return Response(TeamDocSerializer(teams, many=True).data)

    def perform_destroy(self, instance):
        services.team_delete(team=instance)
