"""Tickets (search and writes), tags and attachment transactions. Declarations; writes go to tickets.services."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from accounts.api.serializers import AttachmentOutputSerializer
from accounts.models import AttachmentTransaction
from helpdesk.api.errors import PayloadTooLarge
from helpdesk.api.filtersets import StrictFilterBackend
from helpdesk.api.pagination import KeysetPagination
from helpdesk.api.permissions import WRITERS
from helpdesk.api.tenancy import LicenseScopedViewSet
from tickets import counts, services
from tickets.api.serializers import (
    MergeSerializer,
    TagSerializer,
    TagWriteSerializer,
    TicketCreateSerializer,
    TicketDocSerializer,
    TicketUpdateSerializer,
    TransactionSerializer,
)
from tickets.filters import TicketFilterSet
from tickets.models import Tag, Ticket
from tickets.output import ticket_document, ticket_page

DEFAULT_MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
# What the filter really reads: one parameter per custom field, not a string named `customFields`.
CUSTOM_FIELDS_PARAMETER = OpenApiParameter(
    "customFields",
    type={"type": "object", "additionalProperties": {"type": "string"}},
    location=OpenApiParameter.QUERY,
    style="deepObject",
    explode=True,
    required=False,
    description=(
        "Custom field values, all required to match: `customFields.<apiKey>=<value>` "
        "(e.g. `customFields.region=EU`), or the deepObject form `customFields[<apiKey>]=<value>`. "
        "`customFields=<value>` alone is a 400."
    ),
)


class TicketPagination(KeysetPagination):
    """Keyset pagination whose exact totals come from the per-license count cache (tickets.counts) and whose
    page is fetched as finished documents (tickets.output): items are `{"id", <sort field>, "doc"}`."""

    count_queryset = None  # the filtered tickets without the output joins (set by the view)

    def get_count(self, queryset) -> int:
        queryset = self.count_queryset if self.count_queryset is not None else queryset
        return counts.cached_count(queryset, self.request.license)

    with_events = False  # eventsScope=all (set by the view)

    def fetch_page(self, page_queryset) -> list:
        return ticket_page(
            page_queryset, self.sort_field, events=self.with_events, license_id=self.request.license.pk
        )


class TicketFilterBackend(StrictFilterBackend):
    """StrictFilterBackend that leaves its FilterSet on the view, for the check that needs the total."""

    def get_filterset(self, request, queryset, view):
        view.filterset = super().get_filterset(request, queryset, view)
        return view.filterset


class TicketViewSet(LicenseScopedViewSet):
    queryset = Ticket.objects.all()
    serializer_class = TicketDocSerializer  # the OpenAPI document's shape; responses come from tickets.output
    filterset_class = TicketFilterSet
    filter_backends = [TicketFilterBackend]
    pagination_class = TicketPagination
    sort_fields = {"createdAt": "created_at", "updatedAt": "updated_at", "lastMessageAt": "last_message_at"}
    roles = {"create": WRITERS, "partial_update": WRITERS, "destroy": WRITERS, "child_tickets": WRITERS}
    lookup_url_kwarg = "ticketID"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI generator's request has no license
            return Ticket.objects.none()
        return super().get_queryset()

    def _one(self, ticket_id):
        return ticket_document(self.get_queryset(), ticket_id, license_id=self.request.license.pk)

    @extend_schema(responses={200: TicketDocSerializer(many=True)}, parameters=[CUSTOM_FIELDS_PARAMETER])
    def list(self, request):
        queryset = self.filter_queryset(self.get_queryset())
        # Count the filtered rows alone (an index-only scan, not the page's joins), or a team inbox's links.
        self.paginator.count_queryset = self.filterset.count_queryset(queryset)
        self.paginator.with_events = self.filterset.form.cleaned_data.get("eventsScope") == "all"
        page = self.paginate_queryset(queryset)
        self.filterset.check_related(matched=self.paginator.count > 0)
        return self.get_paginated_response([item["doc"] for item in page])

    @extend_schema(responses={200: TicketDocSerializer})
    def retrieve(self, request, **kwargs):
        return Response(self._one(self.get_object().pk))

    @extend_schema(request=TicketCreateSerializer, responses={201: TicketDocSerializer})
    def create(self, request):
        serializer = TicketCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        ticket = services.ticket_create(
            license=request.license, author_agent=request.agent, **serializer.validated_data
        )
        return Response(self._one(ticket.pk), status=status.HTTP_201_CREATED)

    @extend_schema(request=TicketUpdateSerializer, responses={200: TicketDocSerializer})
    def partial_update(self, request, **kwargs):
        ticket = self.get_object()
        serializer = TicketUpdateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        services.ticket_update(ticket=ticket, author_agent=request.agent, **serializer.validated_data)
        return Response(self._one(ticket.pk))

    def destroy(self, request, **kwargs):
        services.ticket_delete(ticket=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=MergeSerializer, responses={201: TicketDocSerializer})
    @action(detail=True, methods=["post"], url_path="childTickets")
    def child_tickets(self, request, **kwargs):
        ticket = self.get_object()
        serializer = MergeSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        services.ticket_merge(ticket=ticket, child=serializer.validated_data["child"])
        return Response(self._one(ticket.pk), status=status.HTTP_201_CREATED)


class TagViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, LicenseScopedViewSet):
    queryset = Tag.objects.order_by("name", "id")
    serializer_class = TagSerializer
    roles = {"create": WRITERS, "partial_update": WRITERS, "destroy": WRITERS}
    lookup_url_kwarg = "tagID"

    @extend_schema(request=TagWriteSerializer, responses={201: TagSerializer})
    def create(self, request):
        serializer = TagWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        tag = services.tag_create(license=request.license, **serializer.validated_data)
        return Response(TagSerializer(tag).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=TagWriteSerializer, responses=TagSerializer)
    def partial_update(self, request, **kwargs):
        tag = self.get_object()
        serializer = TagWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        tag = services.tag_update(tag=tag, **serializer.validated_data)
        return Response(TagSerializer(tag).data)

    def destroy(self, request, **kwargs):
        services.tag_delete(tag=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class TransactionViewSet(LicenseScopedViewSet):
    """`POST /v1/transactions` → `{ID}`; `POST /v1/transactions/{ID}/attachments` (multipart `attachments`)."""

    queryset = AttachmentTransaction.objects.all()
    serializer_class = TransactionSerializer
    roles = {"create": WRITERS, "attachments": WRITERS}
    lookup_url_kwarg = "transactionID"

    @extend_schema(request=None, responses={201: TransactionSerializer})
    def create(self, request):
        txn = services.transaction_create(license=request.license)
        return Response({"ID": str(txn.pk)}, status=status.HTTP_201_CREATED)

    @extend_schema(responses={201: AttachmentOutputSerializer(many=True)})
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def attachments(self, request, **kwargs):
        txn = self.get_object()
        files = request.FILES.getlist("attachments")
        if not files:
            raise ValidationError(
                {"attachments": ["Send one or more files in the multipart field 'attachments'."]}
            )
        limit = getattr(settings, "HELPDESK_MAX_ATTACHMENT_BYTES", DEFAULT_MAX_ATTACHMENT_BYTES)
        for upload in files:
            if upload.size > limit:
                raise PayloadTooLarge(f"'{upload.name}' is larger than the limit of {limit} bytes.")
        stored = services.attachments_add(txn=txn, files=files)
        return Response(AttachmentOutputSerializer(stored, many=True).data, status=status.HTTP_201_CREATED)
