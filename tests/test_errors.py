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
