"""`/v1/emailDomains` (`GET, POST` · `GET, PATCH, DELETE /{ID}` · `POST /{ID}/verify`): owners write, everyone
reads. The private DKIM key never leaves the server (templates_app.domains)."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from helpdesk.api.fields import StrictCharField
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer, TimestampField
from templates_app import domains
from templates_app.models import EmailDomain


class DnsRecordSerializer(serializers.Serializer):
    name = serializers.CharField(read_only=True)
    value = serializers.CharField(read_only=True)


class DnsRecordMissingSerializer(DnsRecordSerializer):
    found = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="What DNS has there."
    )


class DnsSerializer(serializers.Serializer):
    txt = DnsRecordSerializer(many=True, read_only=True)
    cname = DnsRecordSerializer(many=True, read_only=True)


class LastCheckSerializer(serializers.Serializer):
    checkedAt = serializers.DateTimeField(read_only=True)
    missing = DnsRecordMissingSerializer(many=True, read_only=True)


class EmailDomainSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    status = serializers.ChoiceField(choices=EmailDomain.STATUSES, read_only=True)
    dns = serializers.SerializerMethodField()
    verifiedAt = TimestampField(source="verified_at", read_only=True, allow_null=True)
    lastCheck = serializers.SerializerMethodField(
        help_text="The last verification: when, and the records not found as they should be (null: never)."
    )

    class Meta:
        fields = [
            "ID", "licenseID", "name", "status", "dns", "verifiedAt", "lastCheck",
            "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy",
        ]  # fmt: skip

    @extend_schema_field(DnsSerializer)
    def get_dns(self, domain) -> dict:
        return domains.dns_document(domain)

    @extend_schema_field(LastCheckSerializer(allow_null=True))
    def get_lastCheck(self, domain) -> dict | None:
        return domain.last_check or None


# What templates_app.domains.normalized_name takes, said for the document (ASCII; an IDN is taken too): dotted
# labels of letters, digits and inner hyphens, the last one starting with a letter.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
DOMAIN_PATTERN = rf"^(?:{_LABEL}\.)+[A-Za-z](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?$"


@extend_schema_field({"type": "string", "maxLength": 253, "pattern": DOMAIN_PATTERN})
class DomainField(StrictCharField):
    pass


class EmailDomainWriteSerializer(StrictSerializer):
    name = DomainField(max_length=253, help_text="The domain mail is sent From (acme.example).")


class EmailDomainViewSet(ResourceViewSet):
    resource_name = "emailDomains"
    queryset = EmailDomain.objects.order_by("name", "id")
    serializer_class = EmailDomainSerializer
    write_serializer_class = EmailDomainWriteSerializer
    create_service = domains.email_domain_create
    update_service = domains.email_domain_update
    delete_service = domains.email_domain_delete
    lookup_url_kwarg = "emailDomainID"
    pagination_class = None  # a license's list, all of it
    audit_target = "emailDomains"
    webhook_events = True
    openapi_tag = (
        "E-mail domains",
        "Your own domains that mail is sent From, DKIM-signed once their DNS records are verified.",
    )
    noun = ("e-mail domain", "e-mail domains")
    descriptions = {
        "create": """
            Add a domain: a DKIM key is made for it and `dns` lists the TXT records to publish (the DKIM key,
            an SPF include and an ownership token). A domain verified by another account is a 409.
        """,
        "partial_update": "A new name starts over: status `new`, a new ownership token, verified again.",
    }

    @extend_schema(
        request=None,
        responses=EmailDomainSerializer,
        summary="Verify e-mail domain",
        description=(
            "Look the domain's records up in DNS: all found → `active` (mail From the domain is DKIM-signed); "
            "some missing → `pendingVerification` (then `setupFailed` after the verification window, or at once "
            "for a domain that was active), with the missing records in `lastCheck`. 409 when another account "
            "verified the domain first; 503 when the DNS resolver does not answer."
        ),
    )
    @action(detail=True, methods=["post"])
    def verify(self, request, *args, **kwargs):
        domain = domains.email_domain_verify(email_domain=self.get_object())
        return Response(self.output(domain))
