"""Apps (the developer console), grants, Bearer authentication and CORS (issue 18, "Apps and OAuth 2.0")."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from oauth2_provider.models import get_access_token_model, get_application_model

from accounts.models import ROLE_NORMAL, ROLE_VIEWER, STATUS_INVITED, Agent
from accounts.oauth.api import AppViewSet
from accounts.oauth.models import LicenseApp
from audit.models import AuditEntry
from tests.oauth_helpers import REDIRECT_URI, bearer_client, make_app, make_grant
from tests.resource_tests import Resource, ResourceTests

APP = {"name": "Acme CRM", "redirectURIs": [REDIRECT_URI], "scopes": ["tickets--all:rw", "teams--all:ro"]}


def test_an_owner_registers_an_app_and_sees_the_secret_once(owner):
    # when
    response = owner.client.post("/v1/apps", APP, format="json")
    # then
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "Acme CRM" and body["licenseID"] == owner.license.pk
    assert body["redirectURIs"] == [REDIRECT_URI] and body["scopes"] == ["tickets--all:rw", "teams--all:ro"]
    assert body["clientID"] and len(body["clientSecret"]) >= 32
    application = get_application_model().objects.get(client_id=body["clientID"])
    assert application.client_secret != body["clientSecret"]  # stored hashed
    read = owner.client.get(f"/v1/apps/{body['ID']}").json()
    assert "clientSecret" not in read and read["clientID"] == body["clientID"]
    assert [app["ID"] for app in owner.client.get("/v1/apps").json()] == [body["ID"]]


def test_update_and_delete(owner):
    app = owner.client.post("/v1/apps", APP, format="json").json()
    # when
    response = owner.client.patch(
        f"/v1/apps/{app['ID']}", {"name": "Acme CRM 2", "scopes": ["tickets--my:ro"]}, format="json"
    )
    # then
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Acme CRM 2" and response.json()["scopes"] == ["tickets--my:ro"]
    assert owner.client.delete(f"/v1/apps/{app['ID']}").status_code == 204
    assert not get_application_model().objects.filter(client_id=app["clientID"]).exists()
    assert owner.client.get(f"/v1/apps/{app['ID']}").status_code == 404


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("redirectURIs", ["http://integration.example.com/callback"]),  # http off localhost
        ("redirectURIs", ["ftp://integration.example.com/"]),
        ("redirectURIs", ["https://integration.example.com/cb#frag"]),
        ("redirectURIs", []),
        ("redirectURIs", "https://integration.example.com/"),
        ("scopes", ["tickets--all:admin"]),
        ("scopes", ["tickets:rw"]),
        ("scopes", ["secrets--all:rw"]),
        ("scopes", []),
        ("name", ""),
    ],
)
def test_bad_apps_are_refused_naming_the_field(owner, field, value):
    response = owner.client.post("/v1/apps", {**APP, field: value}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["details"]
    assert not LicenseApp.objects.exists()


def test_http_redirects_to_localhost_are_allowed_for_development(owner):
    uris = ["http://localhost:8080/cb", "http://127.0.0.1/cb"]
    response = owner.client.post("/v1/apps", {**APP, "redirectURIs": uris}, format="json")
    assert response.status_code == 201, response.content


def test_unknown_fields_are_refused(owner):
    response = owner.client.post("/v1/apps", {**APP, "clientSecret": "mine"}, format="json")
    assert response.status_code == 400


@pytest.mark.parametrize("persona", ["agent", "viewer"])
def test_only_owners_manage_apps_and_grants(request, owner, persona):
    other = request.getfixturevalue(persona)
    app = owner.client.post("/v1/apps", APP, format="json").json()
    for method, path in [
        ("get", "/v1/apps"), ("post", "/v1/apps"), ("get", f"/v1/apps/{app['ID']}"),
        ("delete", f"/v1/apps/{app['ID']}"), ("get", "/v1/apps/grants"),
    ]:  # fmt: skip
        assert getattr(other.client, method)(path, APP, format="json").status_code == 403, (method, path)


def test_owners_list_and_revoke_grants(owner, license):
    # given a grant an agent approved
    app = make_app(license, scopes=("tickets--all:ro",))
    token = make_grant(license, agent=owner.agent, app=app, scopes=("tickets--all:ro",))
    client = bearer_client(token.plaintext)
    assert client.get("/v1/tickets").status_code == 200
    # when the owner lists the grants
    grants = owner.client.get("/v1/apps/grants").json()
    # then
    assert len(grants) == 1
    grant = grants[0]
    assert grant["appID"] == str(app.pk) and grant["appName"] == "Acme CRM"
    assert grant["accountID"] == str(owner.account.pk) and grant["scopes"] == ["tickets--all:ro"]
    assert grant["createdAt"].endswith("Z") and grant["expiry"].endswith("Z")
    # when they revoke it
    assert owner.client.delete(f"/v1/apps/grants/{grant['ID']}").status_code == 204
    # then the access token stops working and the refresh token is revoked
    response = client.get("/v1/tickets")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert not get_access_token_model().objects.filter(pk=grant["ID"]).exists()
    assert token.refresh_token.__class__.objects.get(pk=token.refresh_token.pk).revoked is not None
    assert owner.client.get("/v1/apps/grants").json() == []


def test_grants_of_another_license_are_not_found(owner, outsider, license):
    token = make_grant(license)
    assert outsider.client.get("/v1/apps/grants").json() == []
    assert outsider.client.delete(f"/v1/apps/grants/{token.pk}").status_code == 404
    assert bearer_client(token.plaintext).get("/v1/tickets").status_code == 200


@pytest.mark.parametrize("case", ["unknown", "expired", "revoked", "agent gone", "empty"])
def test_bad_bearer_tokens_are_401_in_the_error_shape(license, owner, case):
    token = make_grant(license, expires_in=-1 if case == "expired" else 3600)
    plaintext = token.plaintext
    if case == "unknown":
        plaintext = secrets.token_urlsafe(30)
    elif case == "revoked":
        token.revoke()
    elif case == "agent gone":
        agent = Agent.objects.get(account=token.user, license=license)
        agent.status = STATUS_INVITED
        agent.save()
    elif case == "empty":
        plaintext = ""
    # when
    response = bearer_client(plaintext).get("/v1/tickets")
    # then
    assert response.status_code == 401
    assert response.json()["code"] in ("authentication_failed", "not_authenticated")
    assert set(response.json()) == {"error", "code", "details"}
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_no_credentials_still_ask_for_basic(db):
    assert Client(HTTP_USER_AGENT="t").get("/v1/tickets")["WWW-Authenticate"] == 'Basic realm="helpdesk"'


def test_an_app_never_manages_apps_or_grants(license):
    token = make_grant(license, scopes=("tickets--all:rw", "accounts--all:rw"))
    client = bearer_client(token.plaintext)
    assert client.get("/v1/apps").status_code == 403
    assert client.get("/v1/apps/grants").status_code == 403


def test_the_audit_log_names_the_app(license, owner):
    # given an owner's grant that may write teams
    token = make_grant(license, agent=owner.agent, scopes=("teams--all:rw",))
    # when the app creates a team
    response = bearer_client(token.plaintext).post("/v1/teams", {"name": "Via the app"}, format="json")
    # then the entry's author is the app acting for the owner
    assert response.status_code == 201, response.content
    entry = AuditEntry.objects.filter(license=license, target="teams").latest("seq")
    assert entry.author_type == "api" and entry.author_app_name == "Acme CRM"
    author = owner.client.get("/v1/auditLog", {"pageSize": 1}).json()[0]["author"]
    assert author["type"] == "api" and author["appName"] == "Acme CRM"
    assert author["ID"] == str(owner.agent.pk)


def test_bearer_calls_are_rate_limited_per_token(license, owner, settings):
    # given a per-token limit of 2
    settings.RATE_LIMIT_PER_TOKEN, settings.RATE_LIMIT_PER_LICENSE = 2, 0
    client = bearer_client(make_grant(license, agent=owner.agent, scopes=("tickets--all:ro",)).plaintext)
    # when the app calls three times
    responses = [client.get("/v1/tickets") for _ in range(3)]
    # then the headers count down and the third is a 429 in the error shape
    assert [r.status_code for r in responses] == [200, 200, 429]
    assert [r["X-RateLimit-Remaining"] for r in responses[:2]] == ["1", "0"]
    assert responses[2].json()["code"] == "rate_limit_exceeded" and "Retry-After" in responses[2]
    # and the owner's own token has a bucket of its own
    assert owner.client.get("/v1/tickets").status_code == 200


def test_app_writes_are_audited_under_integrations(owner):
    app = owner.client.post("/v1/apps", APP, format="json").json()
    owner.client.patch(f"/v1/apps/{app['ID']}", {"scopes": ["tickets--all:ro"]}, format="json")
    owner.client.delete(f"/v1/apps/{app['ID']}")
    entries = AuditEntry.objects.filter(target="integrations", object_id=app["ID"]).order_by("seq")
    assert [(e.action, e.entity_name) for e in entries] == [
        ("create", "Acme CRM"),
        ("update", "Acme CRM"),
        ("delete", "Acme CRM"),
    ]
    assert entries[1].changes == {
        "scopes": {"before": ["tickets--all:rw", "teams--all:ro"], "after": ["tickets--all:ro"]}
    }
    assert entries[0].author_type == "api" and entries[0].author_app_name is None


def _pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def test_the_code_flow_with_pkce_without_a_browser(owner):
    """The same flow as the browser test, through Django's client: PKCE is required, refresh works, the
    revoked token stops working, introspection answers for the client."""
    created = owner.client.post("/v1/apps", APP, format="json").json()
    owner.account.set_password("correct horse battery")
    owner.account.save()
    browser = Client()
    assert browser.login(username=owner.account.email, password="correct horse battery")
    verifier, challenge = _pkce()
    query = {
        "response_type": "code", "client_id": created["clientID"], "redirect_uri": REDIRECT_URI,
        "scope": "tickets--all:rw", "state": "xyz",
    }  # fmt: skip
    # without PKCE: refused
    no_pkce = browser.get("/oauth/authorize", query)
    assert no_pkce.status_code == 302 and "error=invalid_request" in no_pkce["Location"]
    page = browser.get(
        "/oauth/authorize", {**query, "code_challenge": challenge, "code_challenge_method": "S256"}
    )
    assert page.status_code == 200 and b"Acme CRM" in page.content
    form = {
        **{k: v for k, v in query.items() if k != "response_type"}, "response_type": "code",
        "code_challenge": challenge, "code_challenge_method": "S256", "allow": "Authorize",
    }  # fmt: skip
    approved = browser.post("/oauth/authorize", form)
    assert approved.status_code == 302, approved.content
    params = parse_qs(urlsplit(approved["Location"]).query)
    assert params["state"] == ["xyz"]
    client_auth = {"client_id": created["clientID"], "client_secret": created["clientSecret"]}
    exchange = {"grant_type": "authorization_code", "code": params["code"][0], "redirect_uri": REDIRECT_URI}
    # a wrong verifier is refused
    wrong = Client().post("/oauth/token", {**exchange, **client_auth, "code_verifier": "x" * 50})
    assert wrong.status_code == 400
    approved = browser.post("/oauth/authorize", form)
    exchange["code"] = parse_qs(urlsplit(approved["Location"]).query)["code"][0]
    tokens = Client().post("/oauth/token", {**exchange, **client_auth, "code_verifier": verifier}).json()
    assert tokens["scope"] == "tickets--all:rw" and tokens["refresh_token"]
    assert bearer_client(tokens["access_token"]).get("/v1/tickets").status_code == 200
    introspected = Client().post("/oauth/introspect", {"token": tokens["access_token"], **client_auth}).json()
    assert introspected["active"] is True and introspected["scope"] == "tickets--all:rw"
    # refresh: a new access token, the old one gone
    refreshed = (
        Client()
        .post(
            "/oauth/token",
            {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], **client_auth},
        )
        .json()
    )
    assert bearer_client(refreshed["access_token"]).get("/v1/tickets").status_code == 200
    assert bearer_client(tokens["access_token"]).get("/v1/tickets").status_code == 401
    # revocation
    revoked = Client().post("/oauth/revoke_token", {"token": refreshed["access_token"], **client_auth})
    assert revoked.status_code == 200
    assert bearer_client(refreshed["access_token"]).get("/v1/tickets").status_code == 401


@pytest.mark.parametrize("roles", [[ROLE_NORMAL], [ROLE_VIEWER]])
def test_only_an_owner_may_approve(license, roles):
    from tests.factories import AgentFactory

    app = make_app(license)
    agent = AgentFactory(license=license, roles=roles)
    agent.account.set_password("correct horse battery")
    agent.account.save()
    browser = Client()
    assert browser.login(username=agent.account.email, password="correct horse battery")
    _verifier, challenge = _pkce()
    response = browser.get("/oauth/authorize", {
        "response_type": "code", "client_id": app.application.client_id, "redirect_uri": REDIRECT_URI,
        "scope": "tickets--all:rw", "code_challenge": challenge, "code_challenge_method": "S256",
    })  # fmt: skip
    assert response.status_code == 403
    assert b"Only an owner of" in response.content
    assert not get_access_token_model().objects.exists()


def test_a_signed_out_owner_is_sent_to_sign_in(license):
    app = make_app(license)
    response = Client().get("/oauth/authorize", {"client_id": app.application.client_id})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    assert Client().get(response["Location"]).status_code == 200


# --- CORS -------------------------------------------------------------------------------------------------


def _preflight(origin: str, path: str = "/v1/tickets"):
    return Client().options(
        path,
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization",
        HTTP_USER_AGENT="Mozilla/5.0",
    )


def test_a_preflight_from_a_registered_apps_origin_is_allowed(owner):
    owner.client.post("/v1/apps", {**APP, "redirectURIs": ["https://app.example.org:8443/cb"]}, format="json")
    # when
    response = _preflight("https://app.example.org:8443")
    # then
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "https://app.example.org:8443"
    assert "authorization" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response
    # and a real request exposes the paging and rate-limit headers
    get = owner.client.get("/v1/tickets", HTTP_ORIGIN="https://app.example.org:8443")
    exposed = {h.strip() for h in get["Access-Control-Expose-Headers"].split(",")}
    assert {"X-Total-Results", "X-Total-Pages", "Link", "X-RateLimit-Limit", "Retry-After"} <= exposed
    # the token endpoint too, but not the consent page
    assert _preflight("https://app.example.org:8443", "/oauth/token").has_header(
        "Access-Control-Allow-Origin"
    )
    assert not _preflight("https://app.example.org:8443", "/oauth/authorize").has_header(
        "Access-Control-Allow-Origin"
    )


def test_a_preflight_from_an_unknown_origin_is_not_allowed(owner):
    owner.client.post("/v1/apps", APP, format="json")
    response = _preflight("https://evil.example.net")
    assert "Access-Control-Allow-Origin" not in response


def test_a_deleted_apps_origin_is_forgotten(owner):
    app = owner.client.post("/v1/apps", APP, format="json").json()
    assert _preflight("https://integration.example.com").has_header("Access-Control-Allow-Origin")
    owner.client.delete(f"/v1/apps/{app['ID']}")
    assert not _preflight("https://integration.example.com").has_header("Access-Control-Allow-Origin")


class TestAppResource(ResourceTests):
    resource = Resource(
        viewset=AppViewSet,
        make=lambda license: make_app(license).pk,
        create=APP,
        update={"name": "Acme CRM 2", "scopes": ["tickets--my:ro"]},
        invalid=[
            ({**APP, "name": ""}, "name"),
            ({**APP, "redirectURIs": ["http://integration.example.com/callback"]}, "redirectURIs"),
            ({**APP, "scopes": ["tickets--all:admin"]}, "scopes"),
            ({**APP, "clientType": "secretive"}, "clientType"),
            ({"name": "x", "scopes": ["tickets--my:ro"]}, "redirectURIs"),
        ],
        readers={"owner"},
        writers={"owner"},
        entity_name="Acme CRM",
        create_changes={"scopes": {"before": None, "after": ["tickets--all:rw", "teams--all:ro"]}},
        update_changes={
            "scopes": {"before": ["tickets--all:rw", "teams--all:ro"], "after": ["tickets--my:ro"]}
        },
    )


def _refresh(created, refresh_token):
    client_auth = {"client_id": created["clientID"], "client_secret": created["clientSecret"]}
    body = {"grant_type": "refresh_token", "refresh_token": refresh_token, **client_auth}
    return Client().post("/oauth/token", body)


def test_narrowing_an_app_narrows_its_tokens_at_once_and_at_refresh(owner, license):
    # given an app with a read-write tickets grant
    created = owner.client.post("/v1/apps", APP, format="json").json()
    app = LicenseApp.objects.get(pk=created["ID"])
    token = make_grant(license, agent=owner.agent, app=app, scopes=("tickets--all:rw", "teams--all:ro"))
    ticket = {"subject": "Hi", "requester": {"email": "ann@example.com"}, "message": {"text": "x"}}
    assert bearer_client(token.plaintext).post("/v1/tickets", ticket, format="json").status_code == 201
    # when the owner narrows the app to reading tickets
    patched = owner.client.patch(f"/v1/apps/{created['ID']}", {"scopes": ["tickets--all:ro"]}, format="json")
    assert patched.status_code == 200
    # then the old token reads and no longer writes, nor reads teams
    old = bearer_client(token.plaintext)
    refused = old.post("/v1/tickets", ticket, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "insufficient_scope"
    assert old.get("/v1/tickets").status_code == 200
    assert old.get("/v1/teams").status_code == 403
    # and a refresh hands out the narrowed scope, not the old one
    refreshed = _refresh(created, token.refresh_plaintext)
    assert refreshed.status_code == 200, refreshed.content
    assert refreshed.json()["scope"] == "tickets--all:ro"
    new = bearer_client(refreshed.json()["access_token"])
    assert new.post("/v1/tickets", ticket, format="json").status_code == 403
    # and widening the app again gives back no more than the grant had
    owner.client.patch(
        f"/v1/apps/{created['ID']}", {"scopes": ["tickets--all:rw", "tags--all:rw"]}, format="json"
    )
    assert new.get("/v1/tags").status_code == 403


def test_a_demoted_approvers_token_refreshes_read_only(owner, license):
    from tests.factories import AgentFactory

    created = owner.client.post("/v1/apps", APP, format="json").json()
    app = LicenseApp.objects.get(pk=created["ID"])
    approver = AgentFactory(license=license, roles=["owner"])
    token = make_grant(license, agent=approver, app=app, scopes=("tickets--all:rw",))
    # when the approving owner is made a viewer
    assert (
        owner.client.patch(f"/v1/agents/{approver.pk}", {"roles": ["viewer"]}, format="json").status_code
        == 200
    )
    # then the refresh returns a read-only scope
    refreshed = _refresh(created, token.refresh_plaintext)
    assert refreshed.status_code == 200 and refreshed.json()["scope"] == "tickets--all:ro"


def _authorize_query(app, challenge, **extra):
    return {
        "response_type": "code", "client_id": app.application.client_id, "redirect_uri": REDIRECT_URI,
        "scope": "tickets--all:rw", "code_challenge": challenge, "code_challenge_method": "S256", **extra,
    }  # fmt: skip


def _signed_in(agent) -> Client:
    agent.account.set_password("correct horse battery")
    agent.account.save()
    browser = Client()
    assert browser.login(username=agent.account.email, password="correct horse battery")
    return browser


def test_approval_prompt_auto_never_skips_the_consent_page(license, owner):
    # given an owner who approved the app before (a live token)
    app = make_app(license)
    make_grant(license, agent=owner.agent, app=app)
    browser = _signed_in(owner.agent)
    _verifier, challenge = _pkce()
    # when the app asks to skip the page
    response = browser.get("/oauth/authorize", _authorize_query(app, challenge, approval_prompt="auto"))
    # then the owner sees the consent page, no code is issued
    assert response.status_code == 200 and b"Acme CRM" in response.content
    assert "code=" not in response.get("Location", "")


@pytest.mark.parametrize("method", ["head", "get"])
def test_a_demoted_agent_gets_no_code_by_any_method(license, method):
    from tests.factories import AgentFactory

    # given an owner who approved the app, and has been made a normal agent since
    app = make_app(license)
    agent = AgentFactory(license=license, roles=["owner"])
    make_grant(license, agent=agent, app=app)
    Agent.objects.filter(pk=agent.pk).update(roles=[ROLE_NORMAL])
    browser = _signed_in(agent)
    _verifier, challenge = _pkce()
    # when the app's authorize URL is requested with approval_prompt=auto
    response = getattr(browser, method)(
        "/oauth/authorize", _authorize_query(app, challenge, approval_prompt="auto")
    )
    # then no code: a refusal (GET) or a method not allowed (HEAD)
    assert response.status_code in (403, 405), response.status_code
    assert "code=" not in response.get("Location", "")
    from oauth2_provider.models import get_grant_model

    assert not get_grant_model().objects.exists()


def test_a_client_introspects_only_its_own_tokens(owner, license, outsider):
    # given an app of this license with a live token, and another license's app
    created = owner.client.post("/v1/apps", APP, format="json").json()
    token = make_grant(license, agent=owner.agent, app=LicenseApp.objects.get(pk=created["ID"]))
    other = outsider.client.post("/v1/apps", APP, format="json").json()
    # when the other app introspects the token, it learns nothing (as for a token that does not exist)
    foreign = Client().post(
        "/oauth/introspect",
        {"token": token.plaintext, "client_id": other["clientID"], "client_secret": other["clientSecret"]},
    )
    assert foreign.status_code == 200 and foreign.json() == {"active": False}
    # also with its credentials in the Basic header, and a wrong secret of the token's app in the body
    basic = base64.b64encode(f"{other['clientID']}:{other['clientSecret']}".encode()).decode()
    mixed = Client().post(
        "/oauth/introspect",
        {"token": token.plaintext, "client_id": created["clientID"], "client_secret": "wrong"},
        HTTP_AUTHORIZATION=f"Basic {basic}",
    )
    assert mixed.json() == {"active": False}
    # when the token's own app introspects it, it is active
    own = Client().post(
        "/oauth/introspect",
        {
            "token": token.plaintext,
            "client_id": created["clientID"],
            "client_secret": created["clientSecret"],
        },
    )
    assert own.json()["active"] is True and own.json()["username"] == owner.account.email


@pytest.mark.parametrize(
    ("granted", "app_scopes", "writes", "expected"),
    [
        (["tickets--all:rw"], ["tickets--all:ro"], True, ("tickets--all:ro",)),
        (["tickets--all:rw"], ["tickets--my:rw"], True, ("tickets--my:rw",)),
        (["tickets--all:rw", "tags--all:ro"], ["tickets--all:rw"], True, ("tickets--all:rw",)),
        (["tickets--all:rw"], ["tickets--all:rw"], False, ("tickets--all:ro",)),  # a viewer never writes
        (["tickets--all:ro"], ["tickets--all:rw", "tags--all:rw"], True, ("tickets--all:ro",)),  # no widening
        (["tickets--all:rw"], ["teams--all:rw"], True, ()),
    ],
)
def test_a_tokens_scopes_are_its_grant_met_with_the_app_and_the_role(granted, app_scopes, writes, expected):
    from accounts.oauth.scopes import effective

    assert effective(granted, app_scopes=app_scopes, writes=writes) == expected
