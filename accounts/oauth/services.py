"""App writes (owners, through the API) and grant revocation. The client secret is shown once."""

from __future__ import annotations

from urllib.parse import urlsplit

from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import get_access_token_model, get_application_model
from oauth2_provider.settings import oauth2_settings

from accounts.models import License
from accounts.oauth import cors
from accounts.oauth import scopes as scope_grammar
from accounts.oauth.models import LicenseApp
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import field_error
from helpdesk.transactions import unit_of_work

LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
CLIENT_TYPES = ("confidential", "public")


def _check_redirect_uris(uris: list[str]) -> None:
    if not uris:
        raise field_error("redirectURIs", "At least one redirect URI is required.")
    for uri in uris:
        parts = urlsplit(uri)
        local = parts.hostname in LOCAL_HOSTS
        # http only to the developer's own machine (and only where the operator allows http at all):
        # elsewhere the code would travel in clear text.
        http_allowed = "http" in oauth2_settings.ALLOWED_REDIRECT_URI_SCHEMES
        if parts.scheme != "https" and not (parts.scheme == "http" and local and http_allowed):
            raise field_error("redirectURIs", f"'{uri}' must use https (http only on localhost).")
        if not parts.hostname or parts.fragment or any(c.isspace() for c in uri):
            raise field_error("redirectURIs", f"'{uri}' is not an absolute URI without a fragment.")


def _check_scopes(scopes: list[str]) -> None:
    if not scopes:
        raise field_error("scopes", "At least one scope is required.")
    bad = [scope for scope in scopes if not scope_grammar.is_valid(scope)]
    if bad:
        raise field_error(
            "scopes", f"Not a scope ({', '.join(bad)}): the grammar is <resource>--<my|access|all>:<ro|rw>."
        )


@unit_of_work
def app_create(
    *,
    license: License,
    account,
    name: str,
    redirect_uris: list[str],
    scopes: list[str],
    client_type: str = "confidential",
) -> tuple[LicenseApp, str]:
    """The app and its client secret in plain text (stored hashed: the only time it can be shown)."""  # fmt: skip
    _check_redirect_uris(redirect_uris)
    _check_scopes(scopes)
    secret = generate_client_secret()
    application = get_application_model().objects.create(
        name=name,
        user=account,
        client_type=client_type,
        authorization_grant_type="authorization-code",
        redirect_uris=" ".join(redirect_uris),
        client_secret=secret,
        algorithm="",
    )
    app = LicenseApp(license=license, application=application, scopes=list(dict.fromkeys(scopes)))
    stamp_create(app)
    app.save()
    cors.forget_origins_on_commit()
    return app, secret


@unit_of_work
def app_update(*, app: LicenseApp, name=None, redirect_uris=None, scopes=None) -> LicenseApp:
    app = LicenseApp.objects.select_for_update().select_related("application").get(pk=app.pk)
    application = app.application
    if redirect_uris is not None:
        _check_redirect_uris(redirect_uris)
        application.redirect_uris = " ".join(redirect_uris)
    if scopes is not None:
        _check_scopes(scopes)
        app.scopes = list(dict.fromkeys(scopes))
    if name is not None:
        application.name = name
    application.save()
    stamp_update(app)
    app.save()
    cors.forget_origins_on_commit()
    return app


@unit_of_work
def app_delete(*, app: LicenseApp) -> None:
    """Deleting the DOT application takes its grants and tokens with it (they cascade)."""
    application = app.application
    app.delete()
    application.delete()
    cors.forget_origins_on_commit()


@unit_of_work
def grant_revoke(*, access_token_id: int) -> None:
    """Revoke an access token and its refresh token at once (the app can refresh no more)."""
    token = get_access_token_model().objects.select_for_update().filter(pk=access_token_id).first()
    if token is None:
        return
    refresh = getattr(token, "refresh_token", None)
    if refresh is not None:
        refresh.revoke()  # deletes the access token too
    else:
        token.revoke()
