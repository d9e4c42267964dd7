"""Subscriptions: owners only, every action (the contract's roles table). Writes go to billing.services."""

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from billing import idempotency, services
from billing.api.serializers import (
    EmptyBodySerializer,
    SubscriptionCreateSerializer,
    SubscriptionSerializer,
    SubscriptionUpdateSerializer,
)
from billing.filters import SubscriptionFilterSet
from billing.models import Subscription
from helpdesk.api.errors import api_exception
from helpdesk.api.permissions import OWNERS
from helpdesk.api.tenancy import LicenseScopedViewSet
from helpdesk.errors import DomainError

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    location=OpenApiParameter.HEADER,
    required=False,
    description="The same key replays the first response and charges nothing more; other parameters → 409.",
)


@extend_schema_view(
    list=extend_schema(description="The license's subscriptions, oldest first (owners only).")
)
class SubscriptionViewSet(mixins.ListModelMixin, LicenseScopedViewSet):
    queryset = Subscription.objects.order_by("created_at", "id")
    serializer_class = SubscriptionSerializer
    filterset_class = SubscriptionFilterSet
    lookup_url_kwarg = "subscriptionID"
    roles = {action: OWNERS for action in ("list", "create", "partial_update", "cancel", "reactivate")}

    @classmethod
    def as_view(cls, actions=None, **initkwargs):
        # A charge intent must be committed before the gateway is called: never one transaction per request,
        # even if ATOMIC_REQUESTS is turned on.
        return transaction.non_atomic_requests(super().as_view(actions, **initkwargs))

    def _idempotent(self, request, handler) -> Response:
        """Run `handler(record)` under the request's Idempotency-Key (see billing/idempotency.py)."""
        started = idempotency.begin(request)
        if isinstance(started, Response):
            return started
        try:
            response = handler(started)
        except (APIException, DomainError) as exc:
            exc = api_exception(exc) if isinstance(exc, DomainError) else exc
            code = exc.get_codes() if isinstance(exc.get_codes(), str) else None
            idempotency.settle(started, exc.status_code, idempotency.exception_body(exc), code)
            raise
        except BaseException:
            idempotency.settle(started, None)
            raise
        idempotency.settle(started, response.status_code, response.data)
        return response

    @extend_schema(
        request=SubscriptionCreateSerializer,
        responses={201: SubscriptionSerializer},
        parameters=[IDEMPOTENCY_KEY],
    )
    def create(self, request):
        """Charge `quantity × unit × months` of the plan (less a coupon), then activate (201)."""

        def handler(record):
            serializer = SubscriptionCreateSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            subscription = services.subscription_create(
                license=request.license, request=record, **serializer.validated_data
            )
            return Response(SubscriptionSerializer(subscription).data, status=status.HTTP_201_CREATED)

        return self._idempotent(request, handler)

    @extend_schema(
        request=SubscriptionUpdateSerializer, responses=SubscriptionSerializer, parameters=[IDEMPOTENCY_KEY]
    )
    def partial_update(self, request, **kwargs):
        """A dearer plan or more seats: the prorated difference for the rest of the period is charged and applied
        now. A cheaper plan or fewer seats: no charge, applied at the next renewal."""

        def handler(record):
            subscription = self.get_object()
            serializer = SubscriptionUpdateSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            subscription = services.subscription_update(
                subscription=subscription, request=record, **serializer.validated_data
            )
            return Response(SubscriptionSerializer(subscription).data)

        return self._idempotent(request, handler)

    def _transition(self, request, service) -> Response:
        def handler(record):
            subscription = self.get_object()
            EmptyBodySerializer(data=request.data or {}).is_valid(raise_exception=True)
            return Response(SubscriptionSerializer(service(subscription=subscription, request=record)).data)

        return self._idempotent(request, handler)

    @extend_schema(request=None, responses=SubscriptionSerializer, parameters=[IDEMPOTENCY_KEY])
    @action(detail=True, methods=["post"])
    def cancel(self, request, **kwargs):
        """No charge: the subscription stays in service until its period ends, then expires."""
        return self._transition(request, services.subscription_cancel)

    @extend_schema(request=None, responses=SubscriptionSerializer, parameters=[IDEMPOTENCY_KEY])
    @action(detail=True, methods=["post"])
    def reactivate(self, request, **kwargs):
        """Canceled within its period: active again, no charge. Expired: a new period, charged."""
        return self._transition(request, services.subscription_reactivate)
