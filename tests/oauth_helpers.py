"""OAuth apps and grants for tests: an app of a license, and a live access token an agent approved."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model, set_token_value
from rest_framework.test import APIClient

from accounts.models import ROLE_OWNER
from accounts.oauth import services
from tests.factories import AgentFactory

REDIRECT_URI = "https://integration.example.com/callback"


def make_app(license, *, scopes=("tickets--all:rw",), name="Acme CRM", redirect_uris=(REDIRECT_URI,)):
    owner = AgentFactory(license=license, roles=[ROLE_OWNER])
    app, _secret = services.app_create(
        license=license,
        account=owner.account,
        name=name,
        redirect_uris=list(redirect_uris),
        scopes=list(scopes),
    )
    return app


def make_grant(license, *, agent=None, scopes=("tickets--all:rw",), app=None, expires_in=3600):
    """An access token (with a refresh token) as /oauth/token issues it; its plaintext is `.plaintext`."""
    app = app or make_app(license, scopes=scopes)
    agent = agent or AgentFactory(license=license, roles=[ROLE_OWNER])
    plaintext = secrets.token_urlsafe(30)
    token = get_access_token_model()(
        user=agent.account,
        application=app.application,
        expires=timezone.now() + timedelta(seconds=expires_in),
        scope=" ".join(scopes),
    )
    set_token_value(token, plaintext)  # DOT keeps only its checksum (COMPLIANT_BCP_RFC9700_TOKEN_STORAGE)
    token.save()
    refresh = get_refresh_token_model()(user=agent.account, application=app.application, access_token=token)
    refresh_plaintext = secrets.token_urlsafe(30)
    set_token_value(refresh, refresh_plaintext)
    refresh.save()
    token.plaintext = plaintext
    token.refresh_plaintext = refresh_plaintext
    return token


def bearer_client(token: str) -> APIClient:
    client = APIClient(HTTP_USER_AGENT="helpdesk-tests/1.0")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client
