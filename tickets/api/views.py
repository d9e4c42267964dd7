"""Tickets (search and writes), tags and attachment transactions. Declarations; writes go to tickets.services."""

from __future__ import annotations

import uuid

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from accounts.api.serializers import AttachmentOutputSerializer
from accounts.models import AttachmentTransaction
from helpdesk.api.errors import PayloadTooLarge
from helpdesk.api.filtersets import StrictFilterBackend
from helpdesk.api.pagination import KeysetPagination
from helpdesk.api.permissions import WRITERS
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.tenancy import LicenseScopedViewSet
from helpdesk.replicas import read_from_replica
from helpdesk.versioned import read_together
from tickets import collisions, selectors, services
from tickets.api import sub_resources
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
from tickets.output import license_ticket_read

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
        "(e.g. `customFields.region=EU`; a `number` field's value is a number, a `checkbox`'s `true` or `false`), "
        "or the deepObject form `customFields[<apiKey>]=<value>`. For `date` and `number` fields also "
        "half-open ranges: `customFields.<apiKey>.from` (inclusive) and `customFields.<apiKey>.to` "
        "(exclusive), RelativeDates for dates (e.g. `customFields.dueDate.from=-0D`, compared as days in "
        "`timezone`), numbers for numbers; a range on another type is a 400. "
        "`customFields=<value>` alone is a 400."
    ),
)


class TicketViewSet(sub_resources.TicketSubResources, LicenseScopedViewSet):
    queryset = Ticket.objects.all()
    # The search runs in tickets.selectors.ticket_search; these declare its parameters and response to OpenAPI.
    serializer_class = TicketDocSerializer
    filterset_class = TicketFilterSet
    filter_backends = [StrictFilterBackend]
    pagination_class = KeysetPagination
    sort_fields = selectors.SORT_FIELDS
    roles = {
        "create": WRITERS,
        "partial_update": WRITERS,
        "destroy": WRITERS,
        "child_tickets": WRITERS,
        **sub_resources.ROLES,
    }
    lookup_url_kwarg = "ticketID"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI generator's request has no license
            return Ticket.objects.none()
        return super().get_queryset()

    def _versioned(self, ticket_id, status_code=status.HTTP_200_OK) -> Response:
        """The ticket's document with its ETag (tickets.collisions), read in one statement."""
        doc, updated_at = license_ticket_read(self.request.license.pk, ticket_id)
        return Response(doc, status=status_code, headers={"ETag": collisions.etag(updated_at)})

    @extend_schema(responses={200: TicketDocSerializer(many=True)}, parameters=[CUSTOM_FIELDS_PARAMETER])
    @read_from_replica
    def list(self, request):
        search = selectors.ticket_search(request.license, request.query_params)
        return Response(search.documents, headers=search.headers(request))

    @extend_schema(responses={200: TicketDocSerializer}, parameters=[sub_resources.etag_header(200)])
    def retrieve(self, request, **kwargs):
        return self._versioned(self.get_object().pk)

    @extend_schema(
        request=TicketCreateSerializer,
        responses={201: TicketDocSerializer},
        parameters=[sub_resources.etag_header(201)],
    )
    def create(self, request):
        serializer = TicketCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        # the versions of the license's copies (rules, SLA policies, webhooks, own addresses) in one read, not
        # four, as mail in reads them (helpdesk.versioned): create 20.38 -> 20.01 M instructions (bench/README.md)
        with read_together():
            ticket = services.ticket_create(
                license=request.license, author_agent=request.agent, **serializer.validated_data
            )
        return self._versioned(ticket.pk, status.HTTP_201_CREATED)

    @extend_schema(
        request=TicketUpdateSerializer,
        responses={200: TicketDocSerializer},
        parameters=[sub_resources.IF_MATCH, sub_resources.etag_header(200)],
    )
    def partial_update(self, request, **kwargs):
        # The ticket is read once, by the service under its row lock (scoped to the license: another's is a
        # 404 there); the view's own read is left to a refused request, which must still answer 404 for a
        # ticket that is not there before 400 for its body. Issue 34: a statement less per PATCH (bench/README.md
        # "Issue 34: writes, continued").
        ticket = Ticket(pk=self._ticket_pk(), license=request.license)
        try:
            serializer = TicketUpdateSerializer(data=request.data, context={"request": request})
            serializer.is_valid(raise_exception=True)
            expected = collisions.expected_versions(request.headers.get("If-Match"))
        except Exception:
            self.get_object()
            raise
        services.ticket_update(
            ticket=ticket, author_agent=request.agent, expected_versions=expected, **serializer.validated_data
        )
        return self._versioned(ticket.pk)

    def _ticket_pk(self) -> uuid.UUID:
        """The URL's ticket ID as get_object() reads it (the UUID field's parsing); not one → 404."""
        try:
            return uuid.UUID(str(self.kwargs[self.lookup_url_kwarg]))
        except ValueError:
            raise NotFound() from None

    def destroy(self, request, **kwargs):
        services.ticket_delete(ticket=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=MergeSerializer,
        responses={201: TicketDocSerializer},
        parameters=[sub_resources.etag_header(201)],
    )
    @action(detail=True, methods=["post"], url_path="childTickets")
    def child_tickets(self, request, **kwargs):
        ticket = self.get_object()
        serializer = MergeSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        services.ticket_merge(ticket=ticket, child=serializer.validated_data["child"])
        return self._versioned(ticket.pk, status.HTTP_201_CREATED)


class TagViewSet(ResourceViewSet):
    resource_name = "tags"
    queryset = Tag.objects.order_by("name", "id")
    serializer_class = TagSerializer
    write_serializer_class = TagWriteSerializer
    create_service = services.tag_create
    update_service = services.tag_update
    delete_service = services.tag_delete
    writers = WRITERS
    lookup_url_kwarg = "tagID"
    pagination_class = None  # a license's tags, all of them
    audit_target = "tags"
    openapi_tag = ("Tags", "Labels put on tickets.")
    noun = ("tag", "tags")


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
