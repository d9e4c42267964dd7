"""The ticket sub-resources (contract, "Ticket sub-resources"), as actions of TicketViewSet: each a declaration
and one service call (tickets.sub_resources, or tickets.services for the silo).

    POST, DELETE /v1/tickets/{ID}/followers {agentIDs}      201 the ticket (ETag) · 204
    POST, DELETE /v1/tickets/{ID}/tags {tagIDs}             201 the ticket (ETag) · 204
    PUT /v1/tickets/{ID}/silo {silo}                        200 the ticket (ETag)
    POST /v1/tickets/{ID}/ratingRequests                    201 the ticket (ETag), the rating e-mail queued
    DELETE /v1/tickets/{ID}/childTickets/{childID}          204, the merge undone

Also the OpenAPI headers of collision detection (ETag on reads and writes, If-Match on PATCH).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from helpdesk.api.permissions import WRITERS
from tickets import services
from tickets import sub_resources as writes
from tickets.api.serializers import (
    RatingRequestSerializer,
    TicketDocSerializer,
    TicketFollowersSerializer,
    TicketSiloSerializer,
    TicketTagsSerializer,
)
from tickets.models import Ticket

ROLES = {
    "followers": WRITERS,
    "followers_remove": WRITERS,
    "tags": WRITERS,
    "tags_remove": WRITERS,
    "silo": WRITERS,
    "rating_requests": WRITERS,
    "child_ticket": WRITERS,
}

IF_MATCH = OpenApiParameter(
    "If-Match",
    {"type": "string", "pattern": r'^(\*|(W/)?"[0-9]+"( *, *(W/)?"[0-9]+")*)$'},
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Collision detection: the ETag of the ticket as you read it. If the ticket changed since, nothing is "
        "written and the answer is 409 `ticket_changed`, whose `details` carry the current `ETag`, `updatedAt` "
        "and the `events` since (newest 100, in the ticket events' shape). Without it, no check."
    ),
)


def etag_header(*statuses) -> OpenApiParameter:
    return OpenApiParameter(
        "ETag",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=list(statuses),
        description='The ticket\'s version (its updatedAt in microseconds, e.g. `"1764087318901234"`): send it '
        "back in If-Match with a PATCH.",
    )


_AGENT_ID = "2f3c6a1e-8b1d-4c55-9d0e-6a7b8c9d0e1f"
_TAG_ID = "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e"
_CHILD_ID = OpenApiParameter(
    "childID", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The ID of the merged child ticket."
)


def _set_schema(noun: str, field: str, example_id: str, *, adding: bool):
    body = {field: [example_id]}
    if adding:
        return extend_schema(
            summary=f"Add {noun}",
            description=f"Adds {noun} to the ticket (those it has stay; IDs of the license only, else 400). "
            f"Writes one `{noun}` event; adding what is there already changes nothing.",
            request={"application/json": _SERIALIZERS[noun]},
            responses={201: TicketDocSerializer},
            parameters=[etag_header(201)],
            examples=[OpenApiExample(f"Add {noun}", value=body, request_only=True)],
        )
    return extend_schema(
        summary=f"Remove {noun}",
        description=f"Takes {noun} off the ticket (IDs of the license only, else 400). Writes one `{noun}` "
        "event; removing what is not there changes nothing.",
        request={"application/json": _SERIALIZERS[noun]},
        responses={204: None},
        examples=[OpenApiExample(f"Remove {noun}", value=body, request_only=True)],
    )


_SERIALIZERS = {"followers": TicketFollowersSerializer, "tags": TicketTagsSerializer}


# Mixed into TicketViewSet, which supplies get_object, get_queryset and `_versioned` (no docstring here: the
# OpenAPI generator would read it as the description of every ticket operation).
class TicketSubResources:
    # DELETEs with a JSON body ({agentIDs}, {tagIDs}): helpdesk.api.autoschema documents it
    delete_bodies = ("followers_remove", "tags_remove")

    def _body(self, serializer_class) -> dict:
        serializer = serializer_class(data=self.request.data, context={"request": self.request})
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def _relation_change(self, relation: str, serializer_class, field: str, *, adding: bool) -> Response:
        ticket = self.get_object()
        objects = self._body(serializer_class)[field]
        writes.ticket_relation_change(
            ticket=ticket,
            relation=relation,
            author_agent=self.request.agent,
            **{"added" if adding else "removed": objects},
        )
        if adding:
            return self._versioned(ticket.pk, status.HTTP_201_CREATED)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @_set_schema("followers", "agentIDs", _AGENT_ID, adding=True)
    @action(detail=True, methods=["post"], url_path="followers")
    def followers(self, request, **kwargs):
        return self._relation_change("followers", TicketFollowersSerializer, "agentIDs", adding=True)

    @_set_schema("followers", "agentIDs", _AGENT_ID, adding=False)
    @followers.mapping.delete
    def followers_remove(self, request, **kwargs):
        return self._relation_change("followers", TicketFollowersSerializer, "agentIDs", adding=False)

    @_set_schema("tags", "tagIDs", _TAG_ID, adding=True)
    @action(detail=True, methods=["post"], url_path="tags")
    def tags(self, request, **kwargs):
        return self._relation_change("tags", TicketTagsSerializer, "tagIDs", adding=True)

    @_set_schema("tags", "tagIDs", _TAG_ID, adding=False)
    @tags.mapping.delete
    def tags_remove(self, request, **kwargs):
        return self._relation_change("tags", TicketTagsSerializer, "tagIDs", adding=False)

    @extend_schema(
        summary="Move ticket to silo",
        description="Moves the ticket to `tickets`, `archive`, `spam` or `trash` (as PATCH `{silo}` does; the "
        "only change a read-only silo allows). Writes one `silo` event.",
        request=TicketSiloSerializer,
        responses={200: TicketDocSerializer},
        parameters=[etag_header(200)],
        examples=[OpenApiExample("Archive the ticket", value={"silo": "archive"}, request_only=True)],
    )
    @action(detail=True, methods=["put"], url_path="silo")
    def silo(self, request, **kwargs):
        ticket = self.get_object()
        services.ticket_update(ticket=ticket, author_agent=request.agent, **self._body(TicketSiloSerializer))
        return self._versioned(ticket.pk)

    @extend_schema(
        summary="Send rating request",
        description="E-mails the requester the rating request now (two signed links, good and bad), and sets "
        "`ratingRequeestSent`. Asked again within the same hour, no second e-mail goes out. 409 "
        "`read_only_silo` in archive, spam and trash.",
        request=RatingRequestSerializer,
        responses={201: TicketDocSerializer},
        parameters=[etag_header(201)],
    )
    @action(detail=True, methods=["post"], url_path="ratingRequests")
    def rating_requests(self, request, **kwargs):
        ticket = self.get_object()
        self._body(RatingRequestSerializer)
        writes.ticket_rating_request(ticket=ticket)
        return self._versioned(ticket.pk, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Undo a merge",
        description="The child ticket stands alone again, with its own history and the status the merge "
        "closed it from (unless it changed since). The parent records an `unmerge` event. 404 when the "
        "ticket is not merged into this one.",
        request=None,
        responses={204: None},
        parameters=[_CHILD_ID],
    )
    @action(detail=True, methods=["delete"], url_path=r"childTickets/(?P<childID>[^/]+)")
    def child_ticket(self, request, childID, **kwargs):
        ticket = self.get_object()
        writes.ticket_unmerge(ticket=ticket, child=self._child(ticket, childID))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _child(self, ticket: Ticket, child_id: str) -> Ticket:
        try:
            return self.get_queryset().get(pk=child_id, parent_id=ticket.pk)
        except (Ticket.DoesNotExist, ValueError, DjangoValidationError):
            raise NotFound("That ticket is not merged into this one.") from None
