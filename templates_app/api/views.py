"""E-mail templates: CRUD, preview (synchronous) and test messages (queued)."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from helpdesk.api.permissions import OWNERS, WRITERS
from helpdesk.api.tenancy import LicenseScopedViewSet
from templates_app import mail, services
from templates_app.api.serializers import (
    PreviewSerializer,
    RenderedSerializer,
    SendTestMessageSerializer,
    TemplateCreateSerializer,
    TemplateSerializer,
    TemplateUpdateSerializer,
)
from templates_app.models import Template
from templates_app.rendering import render


class TemplateViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, LicenseScopedViewSet
):
    queryset = Template.objects.prefetch_related("attachments").order_by("created_at", "id")
    serializer_class = TemplateSerializer
    lookup_url_kwarg = "templateID"
    roles = {"preview": WRITERS, "send_test_message": OWNERS}

    def _fresh(self, template):
        return self.get_queryset().get(pk=template.pk)

    @extend_schema(request=TemplateCreateSerializer, responses={201: TemplateSerializer})
    def create(self, request):
        """Create a template. Placeholders: {{ticket.subject}}, {{ticket.shortID}}, {{requester.name}},
        {{requester.email}}, {{message.text}}, {{agent.name}}, {{agent.signature}}, {{license.companyName}};
        any other placeholder is a 400. `transactionID` attaches the uploaded logo (shown as `cid:<cid>`)."""
        serializer = TemplateCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        template = services.template_create(license=request.license, **serializer.validated_data)
        return Response(TemplateSerializer(self._fresh(template)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=TemplateUpdateSerializer, responses=TemplateSerializer)
    def partial_update(self, request, **kwargs):
        """Update name, content or logo. A given `content` replaces the whole content (text, html, appearance)."""
        template = self.get_object()
        serializer = TemplateUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        template = services.template_update(template=template, **serializer.validated_data)
        return Response(TemplateSerializer(self._fresh(template)).data)

    def perform_destroy(self, instance):
        services.template_delete(template=instance)

    @extend_schema(request=PreviewSerializer, responses=RenderedSerializer)
    @action(detail=False, methods=["post"])
    def preview(self, request):
        """Render `content` as `type` with sample data and the caller's signature: `{text, html}`."""
        serializer = PreviewSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        license = request.license
        rendered = render(
            type=serializer.validated_data["type"],
            content=serializer.validated_data["content"],
            context=mail.sample_context(license=license, agent=request.agent),
            powered_by=mail.powered_by(license),
        )
        return Response(rendered.as_dict())

    @extend_schema(request=SendTestMessageSerializer, responses={202: str})
    @action(detail=False, methods=["post"], url_path="sendTestMessage")
    def send_test_message(self, request):
        """Queue the sample rendering to at most 10 `recipients` (202). An `Idempotency-Key` sends once."""
        serializer = SendTestMessageSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        services.template_send_test(
            license=request.license,
            agent=request.agent,
            type=data["type"],
            content=data["content"],
            recipients=data["recipients"],
            request_key=request.headers.get("Idempotency-Key", "")[:100] or None,
        )
        count = len(data["recipients"])
        return Response(
            f"Test message queued for {count} recipient{'s' if count != 1 else ''}.",
            status=status.HTTP_202_ACCEPTED,
        )
