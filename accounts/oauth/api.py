"""`GET, POST /v1/apps` · `GET, PATCH, DELETE /v1/apps/{ID}` · `GET /v1/apps/grants` ·
`DELETE /v1/apps/grants/{ID}`: owners only (other roles 403, other licenses 404). OAuth tokens never reach
these routes (no scope names them: an app must not register apps or revoke grants)."""

from django.db.models import Q
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from oauth2_provider.models import get_access_token_model
from rest_framework import mixins, serializers, status
from rest_framework.response import Response

from accounts.oauth import services
from accounts.oauth.models import LicenseApp
from accounts.oauth.scopes import SCOPE_RE
from helpdesk.api.fields import StrictCharField, StrictListField
from helpdesk.api.permissions import OWNERS
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer, TimestampField
from helpdesk.api.tenancy import LicenseScopedViewSet


class AppSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(source="application.name", read_only=True)
    clientID = serializers.CharField(source="application.client_id", read_only=True)
    clientType = serializers.CharField(source="application.client_type", read_only=True)
    redirectURIs = serializers.SerializerMethodField()
    scopes = serializers.ListField(child=serializers.CharField(), read_only=True)

    def get_redirectURIs(self, app) -> list[str]:
        return app.application.redirect_uris.split()


class AppCreatedSerializer(AppSerializer):
    """The create response: the only time the client secret is shown (it is stored hashed)."""

    clientSecret = serializers.CharField(read_only=True)


# The forms the services accept (accounts/oauth/services.py, scopes.py), here too so that the OpenAPI document
# carries them as patterns.
_REDIRECT_URI = (
    r"^(https://[A-Za-z0-9.-]+|http://(localhost|127\.0\.0\.1|\[::1\]))(:[0-9]{1,5})?"
    r"(/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?(\?[A-Za-z0-9._~!$&'()*+,;=:@/?-]*)?$"
)


class AppWriteSerializer(StrictSerializer):
    name = StrictCharField(max_length=255)
    redirectURIs = StrictListField(
        child=serializers.RegexField(_REDIRECT_URI, max_length=2000),
        source="redirect_uris",
        unique=True,
        min_length=1,
        max_length=20,
    )
    scopes = StrictListField(
        child=serializers.RegexField(SCOPE_RE.pattern, max_length=60),
        unique=True,
        min_length=1,
        max_length=60,
    )


class AppCreateSerializer(AppWriteSerializer):
    # public: a browser or mobile app that cannot keep a secret (PKCE alone protects its code)
    clientType = serializers.ChoiceField(source="client_type", choices=services.CLIENT_TYPES, required=False)


class AppViewSet(ResourceViewSet):
    resource_name = "apps"
    queryset = LicenseApp.objects.select_related("application").order_by("created_at", "id")
    serializer_class = AppSerializer
    create_serializer_class = AppCreateSerializer
    created_serializer_class = AppCreatedSerializer
    write_serializer_class = AppWriteSerializer
    create_service = services.app_create
    update_service = services.app_update
    delete_service = services.app_delete
    readers = OWNERS
    lookup_url_kwarg = "appID"
    pagination_class = None
    audit_target = "integrations"
    openapi_tag = ("Apps", "OAuth 2.0 apps of the developer console, and the grants owners gave them.")
    noun = ("app", "apps")
    descriptions = {
        "create": """
            Register an app: its name, redirect URIs (https; http only on localhost) and the scopes it may
            ask for. The response carries the client secret: the only time it is shown.
        """
    }

    def perform_create(self, data):
        app, secret = self.create_service(license=self.request.license, account=self.request.user, **data)
        app.clientSecret = secret
        return app


class GrantSerializer(serializers.Serializer):
    ID = serializers.IntegerField(source="pk", read_only=True)
    appID = serializers.UUIDField(source="application.license_app.pk", read_only=True)
    appName = serializers.CharField(source="application.name", read_only=True)
    accountID = serializers.UUIDField(source="user_id", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)
    scopes = serializers.SerializerMethodField()
    createdAt = TimestampField(source="created", read_only=True)
    expiry = TimestampField(source="expires", read_only=True)

    def get_scopes(self, token) -> list[str]:
        return token.scope.split()


class GrantViewSet(mixins.ListModelMixin, mixins.DestroyModelMixin, LicenseScopedViewSet):
    """The license's live grants: one per access token (with its refresh token) an owner approved."""

    queryset = get_access_token_model().objects.none()  # the schema's model; rows come from get_queryset()
    serializer_class = GrantSerializer
    lookup_url_kwarg = "grantID"
    lookup_value_regex = "[0-9]+"
    roles = {"list": OWNERS}

    def get_queryset(self):
        # DOT's tokens are not license-owned rows: the license is their app's.
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        live = Q(expires__gt=timezone.now()) | Q(
            refresh_token__isnull=False, refresh_token__revoked__isnull=True
        )
        return (
            get_access_token_model()
            .objects.filter(application__license_app__license=self.request.license)
            .filter(live)
            .select_related("application__license_app", "user")
            .order_by("created", "id")
        )

    @extend_schema(responses={204: None})
    def destroy(self, request, **kwargs):
        """Revoke the grant: its access and refresh tokens stop working at once."""
        services.grant_revoke(access_token_id=self.get_object().pk)
        return Response(status=status.HTTP_204_NO_CONTENT)
