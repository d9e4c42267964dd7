"""Tokens in the admin: issued through the service, the plaintext shown once and only its hash kept; revoked
by an action."""

import re

from accounts import services
from accounts.api.authentication import hash_token
from accounts.models import PersonalAccessToken
from tests.conftest import api_client

URL = "/admin/accounts/personalaccesstoken/"


def test_issuing_shows_the_token_once_and_stores_only_its_hash(superuser, owner):
    # when a superuser issues a token for the owner's account
    response = superuser.post(
        f"{URL}add/",
        {"account": owner.account.pk, "name": "ci", "scopes": "accounts--my:ro accounts--all:rw"},
    )
    # then the response shows it, not to be cached
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    plaintext = re.search(rb'value="(hdp_[^"]+)"', response.content).group(1).decode()
    assert b"shown only this once" in response.content
    # and only its hash and a short hint are stored
    token = PersonalAccessToken.objects.get(name="ci")
    assert token.token_hash == hash_token(plaintext)
    assert token.hint == plaintext[:8] and len(token.hint) < len(plaintext)
    assert token.scopes == ["accounts--my:ro", "accounts--all:rw"]
    # and it works
    assert api_client(owner.account.pk, plaintext).get("/v1/licenses").status_code == 200
    # but no page shows it again
    for page in (URL, f"{URL}{token.pk}/change/", f"/admin/accounts/account/{owner.account.pk}/change/"):
        body = superuser.get(page).content
        assert plaintext.encode() not in body
        assert token.hint.encode() in body


def test_issuing_checks_the_scopes(superuser, owner):
    response = superuser.post(
        f"{URL}add/", {"account": owner.account.pk, "name": "bad", "scopes": "everything"}
    )
    assert response.status_code == 200
    assert "Not a scope" in str(response.context["adminform"].form.errors["scopes"])
    assert not PersonalAccessToken.objects.filter(name="bad").exists()


def test_revoking_tokens_by_the_action(superuser, owner):
    # given two tokens of the owner
    first, first_plain = services.token_issue(account=owner.account, name="one")
    second, _ = services.token_issue(account=owner.account, name="two")
    # when the first is revoked from the list
    response = superuser.post(URL, {"action": "revoke_tokens", "_selected_action": [str(first.pk)]})
    # then it no longer authenticates, the other is untouched, and the row stays
    assert response.status_code == 302
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.revoked_at is not None and second.revoked_at is None
    assert api_client(owner.account.pk, first_plain).get("/v1/licenses").status_code == 401
    # the list filters by state
    revoked = superuser.get(URL, {"state": "revoked"}).context["cl"].result_list
    assert list(revoked) == [first]


def test_tokens_are_not_edited_or_deleted(superuser, owner):
    token, _ = services.token_issue(account=owner.account, name="x")
    response = superuser.post(f"{URL}{token.pk}/change/", {"name": "renamed"})
    assert response.status_code == 403
    assert superuser.post(f"{URL}{token.pk}/delete/", {"post": "yes"}).status_code == 403
    token.refresh_from_db()
    assert token.name == "x"
