"""Every error, from any layer, has the contract's shape {error, code, details}."""

import pytest
from django.test import override_settings
from django.urls import path
from rest_framework.views import APIView

from helpdesk import urls as root_urls


def _shape(response):
    body = response.json()
    assert set(body) == {"error", "code", "details"}, body
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["code"], str) and body["code"]
    return body


def test_an_unknown_path_is_a_json_404(owner):
    response = owner.client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert _shape(response)["code"] == "not_found"


def test_a_wrong_method_is_405_with_allow(owner):
    response = owner.client.put(f"/v1/teams/{owner.license.default_team_id}", {}, format="json")
    assert response.status_code == 405
    assert _shape(response)["code"] == "method_not_allowed"
    assert "PATCH" in response["Allow"]


def test_a_non_json_body_is_415(owner):
    response = owner.client.post("/v1/teams", "name=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert _shape(response)["code"] == "unsupported_media_type"


def test_malformed_json_is_400(owner):
    response = owner.client.post("/v1/teams", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert _shape(response)["code"] == "parse_error"


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_body_that_is_too_large_is_413(owner):
    response = owner.client.post("/v1/teams", {"name": "x" * 5000}, format="json")
    assert response.status_code == 413
    assert _shape(response)["code"] == "payload_too_large"


def test_a_request_without_user_agent_is_400(owner):
    response = owner.client.get("/v1/agents", HTTP_USER_AGENT="")
    assert response.status_code == 400
    assert _shape(response)["code"] == "user_agent_required"


@override_settings(HELPDESK_REQUIRE_USER_AGENT=False)
def test_the_user_agent_rule_can_be_turned_off(owner):
    assert owner.client.get("/v1/agents", HTTP_USER_AGENT="").status_code == 200


class _Boom(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request):
        raise RuntimeError("secret internals")


urlpatterns = [path("v1/boom", _Boom.as_view()), *root_urls.urlpatterns]


@override_settings(ROOT_URLCONF=__name__)
def test_a_server_error_is_a_json_500_without_internals(client, db):
    response = client.get("/v1/boom", HTTP_USER_AGENT="t")
    assert response.status_code == 500
    body = _shape(response)
    assert body["code"] == "server_error"
    assert "secret" not in response.content.decode()


@pytest.mark.parametrize("path", ["/v1/openapi.json"])
def test_the_schema_is_public_json(client, db, path):
    response = client.get(path, HTTP_USER_AGENT="t")
    assert response.status_code == 200


@override_settings(DEBUG=True)
def test_errors_stay_json_even_with_debug_on(owner):
    response = owner.client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert _shape(response)["code"] == "not_found"


def _old_unavailable():
    # What billing raised before the domain errors: a 409 subclass answering 503, with Retry-After.
    from helpdesk.api import errors as api

    class PaymentGatewayUnavailable(api.Conflict):
        status_code = 503
        default_code = "payment_gateway_unavailable"

    exc = PaymentGatewayUnavailable("The payment provider did not answer.")
    exc.wait = 30
    return exc


def _with_wait(exc, wait):
    exc.wait = wait
    return exc


def _pairs():
    from rest_framework import exceptions

    from helpdesk import errors as domain
    from helpdesk.api import errors as api

    details = {"transactionID": ["Not in this license."]}
    return [
        (
            domain.Invalid("Bad.", code="x_invalid", details=details),
            api.BadRequest("Bad.", "x_invalid", details),
        ),
        (
            domain.field_error("email", "Taken.", code="unique"),
            api.field_error("email", "Taken.", code="unique"),
        ),
        (domain.Forbidden("Not yours."), exceptions.PermissionDenied("Not yours.")),
        (domain.Forbidden(), exceptions.PermissionDenied()),
        (domain.NotFound(), exceptions.NotFound()),
        (domain.Conflict(), api.Conflict()),
        (
            domain.Conflict("Busy.", code="charge_in_progress", retry_after=1),
            _with_wait(api.Conflict("Busy.", code="charge_in_progress"), 1),
        ),
        (
            domain.Conflict("Last owner.", code="last_owner", details={"status": ["No."]}),
            api.Conflict("Last owner.", code="last_owner", details={"status": ["No."]}),
        ),
        (domain.PaymentRequired("Declined.", code="card_declined"), api.PaymentRequired("Declined.")),
        (
            domain.TooLarge("Full.", code="license_storage_full"),
            api.PayloadTooLarge("Full.", "license_storage_full"),
        ),
        (
            domain.Unavailable(
                "The payment provider did not answer.", code="payment_gateway_unavailable", retry_after=30
            ),
            _old_unavailable(),
        ),
    ]


@pytest.mark.parametrize("index", range(11))
def test_a_domain_error_leaves_as_the_http_error_it_replaced(index, db):
    # given: a service's refusal, and the HTTP exception the service used to raise for it
    from helpdesk.api.errors import exception_handler

    refusal, before = _pairs()[index]
    # when
    mapped, expected = exception_handler(refusal, {}), exception_handler(before, {})
    # then: the same status, body and headers
    assert (mapped.status_code, mapped.data, dict(mapped.items())) == (
        expected.status_code,
        expected.data,
        dict(expected.items()),
    )
    assert set(mapped.data) == {"error", "code", "details"}
