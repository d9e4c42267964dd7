"""Personal access tokens and Basic authentication."""

import base64

import pytest
from django.test import override_settings

from accounts import services
from accounts.models import PersonalAccessToken
from tests.conftest import api_client


def _basic(value: str) -> str:
    return "Basic " + base64.b64encode(value.encode()).decode()


def test_a_token_is_stored_only_as_its_sha256(owner):
    # given a freshly issued token
    token, plaintext = services.token_issue(account=owner.account, name="ci")
    # then the plaintext is nowhere in the row, but its hash is
    import hashlib

    row = PersonalAccessToken.objects.get(pk=token.pk)
    assert plaintext.startswith("hdp_") and len(plaintext) >= 4 + 32
    assert row.token_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    assert plaintext not in {row.token_hash, row.hint, row.name}
    assert row.hint == plaintext[:8]


def test_tokens_are_random(owner):
    tokens = {services.token_issue(account=owner.account)[1] for _ in range(20)}
    assert len(tokens) == 20


def test_it_authenticates_with_basic_account_id_and_token(owner):
    response = owner.client.get("/v1/agents")
    assert response.status_code == 200


def test_a_revoked_token_stops_working_at_once(owner):
    # given a token that works
    assert owner.client.get("/v1/agents").status_code == 200
    # when it is revoked
    services.token_revoke(
        token=PersonalAccessToken.objects.get(token_hash__isnull=False, account=owner.account, name="test")
    )
    # then the next request is refused
    assert owner.client.get("/v1/agents").status_code == 401


def test_unknown_account_and_wrong_token_give_the_same_401(owner, other_license):
    wrong_token = api_client(owner.account.pk, "hdp_" + "x" * 40).get("/v1/agents")
    other_account = other_license.agents.get().account
    wrong_account = api_client(other_account.pk, owner.token).get("/v1/agents")
    unknown_account = api_client("6f1c8c1e-0000-4000-8000-000000000000", owner.token).get("/v1/agents")
    bodies = {r.content for r in (wrong_token, wrong_account, unknown_account)}
    assert {r.status_code for r in (wrong_token, wrong_account, unknown_account)} == {401}
    assert len(bodies) == 1
    assert wrong_token.json()["code"] == "authentication_failed"
    assert wrong_token["WWW-Authenticate"] == 'Basic realm="helpdesk"'


@pytest.mark.parametrize(
    "header",
    ["", "Bearer abc", "Basic", "Basic !!!notbase64", None],
    ids=["empty", "bearer", "no-credentials", "bad-base64", "absent"],
)
def test_missing_or_malformed_credentials_are_401(db, client, header):
    extra = {"HTTP_USER_AGENT": "tests"}
    if header is not None:
        extra["HTTP_AUTHORIZATION"] = header
    response = client.get("/v1/agents", **extra)
    assert response.status_code == 401
    body = response.json()
    assert set(body) == {"error", "code", "details"}
    # A Bearer caller is told about Bearer (OAuth access tokens), everyone else about Basic.
    expected = "Bearer" if header and header.startswith("Bearer") else "Basic"
    assert response["WWW-Authenticate"].startswith(f'{expected} realm="helpdesk"')


def test_basic_without_colon_is_401(db, client):
    response = client.get("/v1/agents", HTTP_USER_AGENT="t", HTTP_AUTHORIZATION=_basic("no-colon-here"))
    assert response.status_code == 401


@override_settings(HELPDESK_AUTH_FAILURES_PER_MINUTE=3)
def test_failed_authentication_is_throttled_with_retry_after(owner):
    bad = api_client(owner.account.pk, "hdp_wrong")
    statuses = [bad.get("/v1/agents").status_code for _ in range(4)]
    assert statuses == [401, 401, 401, 429]
    throttled = bad.get("/v1/agents")
    assert throttled.status_code == 429
    assert int(throttled["Retry-After"]) > 0
    assert throttled.json()["code"] == "throttled"
    # valid credentials are not locked out by someone else's failures from the same address
    assert owner.client.get("/v1/agents").status_code == 200
    # while wrong ones keep being refused until the window passes
    assert bad.get("/v1/agents").status_code == 429


def test_a_read_only_token_cannot_write(owner):
    _, token = services.token_issue(account=owner.account, scopes=["accounts--my:ro"])
    client = api_client(owner.account.pk, token)
    assert client.get("/v1/teams").status_code == 200
    response = client.post("/v1/teams", {"name": "Nope"}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "insufficient_scope"


def test_a_token_without_the_minimum_scope_cannot_authenticate(owner):
    _, token = services.token_issue(account=owner.account, scopes=["tickets--all:rw"])
    assert api_client(owner.account.pk, token).get("/v1/teams").status_code == 401


def test_last_used_is_recorded_at_most_once_a_minute(owner, time_machine):
    time_machine.move_to("2026-01-01 10:00:00Z", tick=False)
    owner.client.get("/v1/agents")
    token = PersonalAccessToken.objects.get(account=owner.account, name="test")
    first = token.last_used_at
    assert first is not None
    time_machine.move_to("2026-01-01 10:00:30Z", tick=False)
    owner.client.get("/v1/agents")
    token.refresh_from_db()
    assert token.last_used_at == first
    time_machine.move_to("2026-01-01 10:01:05Z", tick=False)
    owner.client.get("/v1/agents")
    token.refresh_from_db()
    assert token.last_used_at > first


def test_an_inactive_account_cannot_authenticate(owner):
    owner.account.is_active = False
    owner.account.save()
    assert owner.client.get("/v1/agents").status_code == 401


def test_an_account_without_a_license_gets_403_no_license(db):
    from tests.factories import AccountFactory

    account = AccountFactory()
    _, token = services.token_issue(account=account)
    client = api_client(account.pk, token)
    assert client.get("/v1/licenses").json() == []
    response = client.get("/v1/agents")
    assert response.status_code == 403
    assert response.json()["code"] == "no_license"


def test_the_license_header_picks_one_of_several_memberships(owner, other_license):
    from tests.factories import AgentFactory

    # given the owner is also a viewer of another license
    AgentFactory(license=other_license, account=owner.account, email=owner.account.email, roles=["viewer"])
    # then by default the oldest membership answers, and X-License-ID picks the other
    assert owner.client.get("/v1/teams").json()[0]["licenseID"] == owner.license.pk
    picked = owner.client.get("/v1/teams", HTTP_X_LICENSE_ID=str(other_license.pk))
    assert picked.json()[0]["licenseID"] == other_license.pk
    assert {item["ID"] for item in owner.client.get("/v1/licenses").json()} == {
        owner.license.pk,
        other_license.pk,
    }
    # and a license the account is not an agent of gives no access
    from tests.factories import LicenseFactory

    stranger = LicenseFactory()
    assert owner.client.get("/v1/teams", HTTP_X_LICENSE_ID=str(stranger.pk)).status_code == 403
    assert owner.client.get("/v1/teams", HTTP_X_LICENSE_ID="abc").status_code == 400
    # only ASCII digits, no more than a bigint holds (both were 500s)
    assert owner.client.get("/v1/teams", HTTP_X_LICENSE_ID="²").status_code == 400
    assert owner.client.get("/v1/teams", HTTP_X_LICENSE_ID="9" * 19).status_code == 400


def test_the_caller_is_loaded_exactly_as_the_orm_loads_it(owner):
    # given the owner's agent with non-default values in every kind of column (JSON, UUID, dates, nulls)
    from accounts.api.authentication import TokenBasicAuthentication, hash_token
    from accounts.models import Account, Agent, License

    Agent.objects.filter(pk=owner.agent.pk).update(job_title=None, flags={"x": [1, {"y": None}]})
    License.objects.filter(pk=owner.license.pk).update(detected_languages=["en", "pl"])
    # when the token is resolved
    pat, agent = TokenBasicAuthentication._lookup(str(owner.account.pk), owner.token, None)
    # then agent, license and account equal the ORM's rows field by field, with the token's own fields

    def values(instance):
        return {
            field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields
        }

    assert values(agent) == values(Agent.objects.get(pk=owner.agent.pk))
    assert values(agent.license) == values(License.objects.get(pk=owner.license.pk))
    assert values(agent.account) == values(Account.objects.get(pk=owner.account.pk))
    stored = PersonalAccessToken.objects.get(token_hash=hash_token(owner.token))
    assert (pat.pk, pat.scopes, pat.last_used_at, pat.account_id) == (
        stored.pk,
        stored.scopes,
        stored.last_used_at,
        stored.account_id,
    )
    assert not agent._state.adding and agent._state.db == "default"


@override_settings(HELPDESK_AUTH_FAILURES_PER_MINUTE=3)
def test_every_spelling_of_an_account_id_shares_one_failure_bucket(owner, settings):
    # given three failures, each under another spelling of the same account ID (from other addresses, so
    # only the account's bucket can fill up)
    account_id = str(owner.account.pk)
    spellings = [account_id.upper(), account_id.replace("-", ""), "{" + account_id + "}"]
    for number, spelling in enumerate(spellings):
        response = api_client(spelling, "hdp_wrong").get("/v1/agents", REMOTE_ADDR=f"10.0.0.{number + 1}")
        assert response.status_code == 401
    # when the canonical spelling fails once more, from yet another address
    response = api_client(account_id, "hdp_wrong").get("/v1/agents", REMOTE_ADDR="10.0.0.9")
    # then the account's one bucket is full
    assert response.status_code == 429


def test_a_wrong_account_and_an_unknown_token_cost_the_same_queries(owner, other_license):
    """A valid token sent with another account's ID must not answer differently, or slower, than an unknown
    token: otherwise timing tells whether a leaked token is live."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    other_account = other_license.agents.get().account
    attempts = {
        "valid token, wrong account": api_client(other_account.pk, owner.token),
        "unknown token, right account": api_client(owner.account.pk, "hdp_" + "x" * 40),
        "unknown token, wrong account": api_client(other_account.pk, "hdp_" + "y" * 40),
    }
    shapes = {}
    for name, client in attempts.items():
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/v1/agents")
        assert response.status_code == 401, name
        # the statements without their values (the token's hash and the account ID differ by design)
        shapes[name] = [query["sql"].split("WHERE")[0] for query in queries.captured_queries]
    assert len(set(map(tuple, shapes.values()))) == 1, shapes
    assert len(shapes["valid token, wrong account"]) == 1


def test_the_account_id_may_be_spelled_in_upper_case(owner):
    assert api_client(str(owner.account.pk).upper(), owner.token).get("/v1/agents").status_code == 200


def test_a_license_header_naming_a_foreign_or_missing_license_says_so(owner, other_license):
    # when the caller names a license it is no agent of, and one that does not exist
    foreign = owner.client.get("/v1/teams", HTTP_X_LICENSE_ID=str(other_license.pk))
    missing_id = other_license.pk + 1000
    missing = owner.client.get("/v1/teams", HTTP_X_LICENSE_ID=str(missing_id))
    # then both are the same kind of 403, naming the header's license and not telling the two apart
    assert foreign.status_code == missing.status_code == 403
    assert foreign.json() == {
        "error": f"You are not an agent of license {other_license.pk}.",
        "code": "license_not_member",
        "details": foreign.json()["details"],
    }
    assert missing.json()["error"] == f"You are not an agent of license {missing_id}."
    assert missing.json()["code"] == "license_not_member"
    assert foreign.json()["details"] == missing.json()["details"]
