"""Bad input that used to answer 500 answers a 4xx in the contract's error shape (issue 15, on both databases)."""

import inspect
import json
import string

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework import serializers

from tests.conftest import api_client
from tests.factories import AgentFactory, CustomFieldFactory, TicketFactory
from tickets import services as ticket_services
from tickets.api import views as ticket_views
from tickets.models import Ticket


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert list(body) == ["error", "code", "details"], body
    return body


# --- X-License-ID ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["²", "1²", "١٢", "9" * 19, "1" * 25, "1" * 5000])
@pytest.mark.parametrize("who", ["owner", "wrong_token"])
def test_a_malformed_license_id_header_is_a_400(value, who, owner):
    client = owner.client if who == "owner" else api_client(owner.account.pk, "hdp_wrong")
    body = _error(client.get("/v1/teams", HTTP_X_LICENSE_ID=value), 400)
    assert "X-License-ID" in body["details"]


def test_the_largest_bigint_license_id_is_a_plain_403_not_a_500(owner):
    response = owner.client.get("/v1/teams", HTTP_X_LICENSE_ID=str(2**63 - 1))
    assert response.status_code == 403


# --- assignment -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "assignment",
    [
        {"agent": {}},
        {"team": {"ID": 123}},
        {"team": []},
        {"team": "x"},
        {"agent": {"ID": "x", "name": "y"}},
        {"team": {"ID": ["{0}"]}},
    ],
)
def test_malformed_assignments_are_a_400_naming_the_field(assignment, owner):
    ticket = TicketFactory(license=owner.license)
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"assignment": assignment}, format="json")
    body = _error(response, 400)
    assert "assignment" in body["details"]
    assert '{"ID": "<uuid>"}' in body["error"]


def test_an_unknown_id_with_braces_is_named_back_verbatim(owner):
    ticket = TicketFactory(license=owner.license)
    response = owner.client.patch(
        f"/v1/tickets/{ticket.pk}", {"assignment": {"agent": {"ID": "{pk}{0}"}}}, format="json"
    )
    assert "'{pk}{0}' does not exist" in _error(response, 400)["error"]


@pytest.mark.parametrize("unassign", [{"ID": None}, None])
def test_agent_id_null_unassigns_the_agent(unassign, owner):
    ticket = TicketFactory(license=owner.license, assignment_agent=owner.agent)
    response = owner.client.patch(
        f"/v1/tickets/{ticket.pk}", {"assignment": {"agent": unassign}}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["assignment"]["agent"] is None
    ticket.refresh_from_db()
    assert ticket.assignment_agent is None


def _format_fields(message: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(message) if name is not None]


def test_every_error_message_of_our_fields_survives_drf_fail():
    """DRF's fail() runs each message through str.format: a literal brace must be doubled, a placeholder must
    be a name (the cause of the assignment 500s). Every Field class the project defines is checked."""
    import accounts.api.serializers
    import billing.api.serializers
    import helpdesk.api.fields
    import templates_app.api.serializers
    import tickets.api.serializers

    checked = 0
    for module in (
        helpdesk.api.fields,
        tickets.api.serializers,
        accounts.api.serializers,
        billing.api.serializers,
        templates_app.api.serializers,
    ):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, serializers.Field) or not cls.__module__.startswith(module.__name__):
                continue
            for key, message in cls.__dict__.get("default_error_messages", {}).items():
                names = _format_fields(str(message))
                assert all(name.isidentifier() for name in names), (cls, key, message)
                checked += 1
    assert checked > 10


# --- nesting, NUL characters, lone surrogates -------------------------------------------------------------


def test_50000_levels_to_an_anonymous_endpoint_are_a_400(client):
    body = "[" * 50_000 + "]" * 50_000
    response = client.post(
        "/v1/invitations/accept", body, content_type="application/json", HTTP_USER_AGENT="t/1"
    )
    assert _error(response, 400)["code"] == "too_deep"


@pytest.mark.parametrize("depth", [40, 3_000])
def test_deep_custom_fields_are_a_400(depth, owner):
    ticket = TicketFactory(license=owner.license)
    raw = '{"customFields": {"a": ' + "[" * depth + "]" * depth + "}}"
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", raw, content_type="application/json")
    _error(response, 400)


def test_custom_fields_have_a_depth_and_size_limit_of_their_own(owner):
    ticket = TicketFactory(license=owner.license)
    nested = {"a": [[[[[[[[[["deep"]]]]]]]]]]}
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"customFields": nested}, format="json")
    assert "customFields" in _error(response, 400)["details"]
    big = {f"k{i}": "x" * 1000 for i in range(100)}
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"customFields": big}, format="json")
    assert "customFields" in _error(response, 400)["details"]
    # within the limits, values of the license's fields are stored as sent
    CustomFieldFactory(license=owner.license, api_key="region")
    CustomFieldFactory(license=owner.license, api_key="n", type="number")
    fine = {"region": "EU", "n": 2**63}
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"customFields": fine}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["customFields"] == fine


BAD_TEXT = [
    '{"customFields": {"a\\u0000b": "x"}}',
    '{"customFields": {"a": "x\\u0000"}}',
    '{"customFields": {"a": ["\\ud800"]}}',
    '{"customFields": {"\\udfff": 1}}',
    '{"customFields": {"a": {"b": "ok \\udc00 no"}}}',
]


@pytest.mark.parametrize("raw", BAD_TEXT)
def test_nul_and_lone_surrogates_in_custom_fields_are_a_400_naming_the_field(raw, owner):
    ticket = TicketFactory(license=owner.license, custom_fields={"keep": "me"})
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", raw, content_type="application/json")
    assert list(_error(response, 400)["details"]) == ["customFields"]
    ticket.refresh_from_db()
    assert ticket.custom_fields == {"keep": "me"}


@pytest.mark.parametrize("raw", ['[{"type": "p\\u0000"}]', '[{"\\ud83d": "x"}]'])
def test_nul_and_lone_surrogates_in_a_signature_are_a_400(raw, owner):
    agent = AgentFactory(license=owner.license)
    body = '{"signature": {"richTextObj": ' + raw + "}}"
    response = owner.client.patch(f"/v1/agents/{agent.pk}", body, content_type="application/json")
    assert list(_error(response, 400)["details"]) == ["signature"]


def test_a_surrogate_pair_is_a_valid_character(owner):
    ticket = TicketFactory(license=owner.license)
    CustomFieldFactory(license=owner.license, api_key="mood")
    raw = '{"customFields": {"mood": "\\ud83d\\ude00"}}'
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", raw, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["customFields"] == {"mood": "😀"}


# --- big integers in an idempotent charge -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"planCode": "hd-team1m", "quantity": 2**64},
        {"planCode": "hd-team1m", "quantity": 1, "extra": {"n": -(2**70)}},
    ],
)
def test_a_huge_integer_in_an_idempotent_charge_is_a_400(body, owner):
    response = owner.client.post(
        "/v1/subscriptions", json.dumps(body), content_type="application/json", HTTP_IDEMPOTENCY_KEY="big-1"
    )
    _error(response, 400)
    # the same key and body replay the same answer
    again = owner.client.post(
        "/v1/subscriptions", json.dumps(body), content_type="application/json", HTTP_IDEMPOTENCY_KEY="big-1"
    )
    assert again.status_code == 400 and again.content == response.content


# --- too many files or fields ---------------------------------------------------------------------------


@pytest.fixture
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


def test_more_than_100_files_in_one_upload_is_a_413(owner, _media):
    txn_id = owner.client.post("/v1/transactions").json()["ID"]
    files = [SimpleUploadedFile(f"f{i}.txt", b"x") for i in range(101)]
    response = owner.client.post(
        f"/v1/transactions/{txn_id}/attachments", {"attachments": files}, format="multipart"
    )
    assert _error(response, 413)["code"] == "too_many_files"


def test_too_many_form_fields_is_a_413(owner, _media, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    txn_id = owner.client.post("/v1/transactions").json()["ID"]
    fields = {f"f{i}": "x" for i in range(10)}
    response = owner.client.post(
        f"/v1/transactions/{txn_id}/attachments",
        {**fields, "attachments": [SimpleUploadedFile("a.txt", b"x")]},
        format="multipart",
    )
    assert _error(response, 413)["code"] == "too_many_fields"


# --- a ticket purged under a write ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["patch", "delete", "child"])
def test_a_ticket_deleted_by_the_purge_during_a_write_is_a_404(method, owner, monkeypatch):
    ticket = TicketFactory(license=owner.license)
    child = TicketFactory(license=owner.license)
    original = ticket_views.TicketViewSet.get_object

    def get_object_then_purge(view):
        found = original(view)
        Ticket.objects.filter(pk=found.pk).delete()  # the purge commits between the view's read and the lock
        return found

    monkeypatch.setattr(ticket_views.TicketViewSet, "get_object", get_object_then_purge)
    # A PATCH reads its ticket once, under the service's lock (issue 34): the purge commits just before that read.
    original_lock = ticket_services._lock_ticket

    def purge_then_lock(found):
        Ticket.objects.filter(pk=found.pk).delete()
        return original_lock(found)

    if method == "patch":
        monkeypatch.setattr(ticket_services, "_lock_ticket", purge_then_lock)
    url = f"/v1/tickets/{ticket.pk}"
    if method == "patch":
        response = owner.client.patch(url, {"subject": "late"}, format="json")
    elif method == "delete":
        response = owner.client.delete(url)
    else:
        response = owner.client.post(f"{url}/childTickets", {"childTicketID": str(child.pk)}, format="json")
    assert _error(response, 404)["code"] == "not_found"


def test_an_integer_beyond_64_bits_in_free_form_json_is_a_400(owner):
    ticket = TicketFactory(license=owner.license)
    response = owner.client.patch(
        f"/v1/tickets/{ticket.pk}",
        '{"customFields": {"n": 18446744073709551616}}',
        content_type="application/json",
    )
    assert list(_error(response, 400)["details"]) == ["customFields"]


def test_the_idempotency_fingerprint_takes_integers_orjson_cannot_write():
    # The parser refuses them in API bodies; the fingerprint must not be the thing that fails if one gets in.
    from types import SimpleNamespace

    from billing.idempotency import _fingerprint

    def request(data):
        return SimpleNamespace(method="POST", path="/v1/subscriptions", data=data)

    big = _fingerprint(request({"quantity": 2**64, "planCode": "x"}))
    assert big == _fingerprint(request({"planCode": "x", "quantity": 2**64}))
    assert big != _fingerprint(request({"planCode": "x", "quantity": 2**64 + 1}))


def test_a_text_longer_than_its_max_length_is_refused_even_if_trimming_would_shorten_it(owner):
    # the OpenAPI document says maxLength 255 for an app's name: that is the length of what is sent
    body = {
        "name": " " + "a" * 255,
        "redirectURIs": ["https://app.example.com/cb"],
        "scopes": ["tickets--all:ro"],
    }
    response = owner.client.post("/v1/apps", body, format="json")
    assert response.status_code == 400
    assert "no more than 255 characters" in str(response.json())
    # and at the limit, surrounding whitespace is still trimmed
    body["name"] = " " + "a" * 253 + " "
    created = owner.client.post("/v1/apps", body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["name"] == "a" * 253
