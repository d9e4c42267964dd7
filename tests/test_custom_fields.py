"""Custom fields: definitions, every ticket write checked against them, range search, and the migration that
defines the keys tickets held before definitions existed."""

import importlib

import pytest
from django.apps import apps
from django.db import connection

from tests.factories import CustomFieldFactory, TeamFactory, TicketFactory
from tests.resource_tests import Resource, ResourceTests
from tickets.custom_fields.api import CustomFieldViewSet
from tickets.custom_fields.models import CustomField
from tickets.models import Ticket


def _error(response, status):
    assert response.status_code == status, response.content
    return response.json()


class TestCustomFieldResource(ResourceTests):
    resource = Resource(
        viewset=CustomFieldViewSet,
        make=lambda license: CustomFieldFactory(license=license).pk,
        create={"apiKey": "plan", "displayName": "Plan", "type": "dropdown", "options": ["basic", "pro"]},
        update={"displayName": "Subscription plan", "status": "deactivated"},
        invalid=[
            ({}, "apiKey"),
            ({"apiKey": "bad key!", "displayName": "x", "type": "singleLine"}, "apiKey"),
            ({"apiKey": "x", "displayName": "x", "type": "colour"}, "type"),
            ({"apiKey": "x", "displayName": "x", "type": "dropdown"}, "options"),
            ({"apiKey": "x", "displayName": "x", "type": "number", "options": ["a"]}, "options"),
            ({"apiKey": "x", "displayName": "x", "type": "number", "roleLevel": "boss"}, "roleLevel"),
            ({"apiKey": "x", "displayName": "x", "type": "number", "teamIDs": ["nope"]}, "teamIDs"),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="plan",
        create_changes={
            "apiKey": {"before": None, "after": "plan"},
            "type": {"before": None, "after": "dropdown"},
        },
        update_changes={"status": {"before": "active", "after": "deactivated"}},
        publishes=True,
    )


def _patch(persona, ticket, values):
    return persona.client.patch(f"/v1/tickets/{ticket.pk}", {"customFields": values}, format="json")


@pytest.mark.parametrize(
    ("type", "good", "bad"),
    [
        ("singleLine", "EU", "x" * 121),
        ("multiLine", "line 1\nline 2", "x" * 1001),
        ("date", "2026-04-30", "2026-02-30"),
        ("url", "https://example.com/orders/1", "javascript:alert(1)"),
        ("number", 12.5, "12"),
        ("checkbox", True, "yes"),
        ("dropdown", "pro", "gold"),
    ],
)
def test_ticket_writes_check_each_type(type, good, bad, owner):
    CustomFieldFactory(
        license=owner.license, api_key="f", type=type, options=["basic", "pro"] if type == "dropdown" else []
    )
    ticket = TicketFactory(license=owner.license)
    details = _error(_patch(owner, ticket, {"f": bad}), 400)["details"]
    assert list(details) == ["customFields.f"]
    ticket.refresh_from_db()
    assert ticket.custom_fields == {}
    assert _patch(owner, ticket, {"f": good}).json()["customFields"] == {"f": good}


def test_an_unknown_key_is_refused_on_create_and_update(owner):
    body = {
        "subject": "Hi",
        "requester": {"email": "c@example.com"},
        "message": {"text": "Hello"},
        "customFields": {"nope": "x"},
    }
    details = _error(owner.client.post("/v1/tickets", body, format="json"), 400)["details"]
    assert "customFields.nope" in details
    assert not Ticket.objects.exists()
    ticket = TicketFactory(license=owner.license)
    assert "customFields.nope" in _error(_patch(owner, ticket, {"nope": "x"}), 400)["details"]


def test_a_field_of_other_teams_is_refused(owner):
    sales, support = TeamFactory(license=owner.license), TeamFactory(license=owner.license)
    CustomFieldFactory(license=owner.license, api_key="deal", teams=[sales])
    ticket = TicketFactory(license=owner.license, teams=[support])
    assert "customFields.deal" in _error(_patch(owner, ticket, {"deal": "big"}), 400)["details"]
    # moving the ticket to the field's team in the same write allows it
    body = {"customFields": {"deal": "big"}, "teamIDs": [str(sales.pk)]}
    assert owner.client.patch(f"/v1/tickets/{ticket.pk}", body, format="json").status_code == 200


def test_role_levels(owner, agent):
    CustomFieldFactory(license=owner.license, api_key="discount", role_level="owner", type="number")
    CustomFieldFactory(license=owner.license, api_key="score", role_level="readOnly", type="number")
    ticket = TicketFactory(license=owner.license)
    assert "customFields.discount" in _error(_patch(agent, ticket, {"discount": 10}), 400)["details"]
    assert _patch(owner, ticket, {"discount": 10}).status_code == 200
    # readOnly: not even an owner through a personal token (rules, macros and OAuth apps set it)
    assert "customFields.score" in _error(_patch(owner, ticket, {"discount": 10, "score": 3}), 400)["details"]
    # values already there do not block other writes
    assert _patch(agent, ticket, {"discount": 10}).status_code == 200


def test_a_deactivated_field_is_kept_on_tickets_but_no_longer_written(owner):
    field = CustomFieldFactory(license=owner.license, api_key="legacy")
    CustomFieldFactory(license=owner.license, api_key="region")
    ticket = TicketFactory(license=owner.license)
    _patch(owner, ticket, {"legacy": "old", "region": "EU"})
    owner.client.patch(f"/v1/customFields/{field.pk}", {"status": "deactivated"}, format="json")
    # a write that leaves it out keeps it; one that changes it is refused
    assert _patch(owner, ticket, {"region": "US"}).json()["customFields"] == {"legacy": "old", "region": "US"}
    assert "customFields.legacy" in _error(_patch(owner, ticket, {"legacy": "new"}), 400)["details"]
    # and it cannot be deleted while tickets hold it
    refused = _error(owner.client.delete(f"/v1/customFields/{field.pk}"), 409)
    assert refused["code"] == "in_use"
    assert CustomField.objects.filter(pk=field.pk).exists()


def test_a_field_no_ticket_uses_is_deleted(owner):
    field = CustomFieldFactory(license=owner.license, api_key="unused")
    TicketFactory(license=owner.license, custom_fields={"other": "x"})
    assert owner.client.delete(f"/v1/customFields/{field.pk}").status_code == 204


def test_the_api_key_is_unique_and_the_limit_is_200(owner, monkeypatch):
    CustomFieldFactory(license=owner.license, api_key="plan")
    body = {"apiKey": "plan", "displayName": "x", "type": "singleLine"}
    assert "apiKey" in _error(owner.client.post("/v1/customFields", body, format="json"), 400)["details"]
    monkeypatch.setattr("tickets.custom_fields.services.MAX_FIELDS", 1)
    body["apiKey"] = "other"
    assert _error(owner.client.post("/v1/customFields", body, format="json"), 409)["code"] == "limit_reached"


def _found(persona, query):
    response = persona.client.get(f"/v1/tickets?{query}")
    assert response.status_code == 200, response.content
    return sorted(t["subject"] for t in response.json())


def test_search_by_number_and_date_ranges(owner):
    CustomFieldFactory(license=owner.license, api_key="amount", type="number")
    CustomFieldFactory(license=owner.license, api_key="due", type="date")
    CustomFieldFactory(license=owner.license, api_key="region")
    for subject, amount, due in [("a", 5, "2026-04-01"), ("b", 50, "2026-04-15"), ("c", 500, "2026-05-01")]:
        ticket = TicketFactory(license=owner.license, subject=subject)
        _patch(owner, ticket, {"amount": amount, "due": due, "region": "EU"})
    assert _found(owner, "customFields.amount=50") == ["b"]
    assert _found(owner, "customFields.amount.from=50") == ["b", "c"]
    assert _found(owner, "customFields.amount.from=10&customFields.amount.to=500") == ["b"]
    assert _found(owner, "customFields.due.from=2026-04-10&customFields.due.to=2026-05-01") == ["b"]
    assert _found(owner, "customFields[due.to]=2026-04-15") == ["a"]
    # bad bounds and ranges on other types are 400s naming the parameter
    for query, param in [
        ("customFields.amount.from=many", "customFields.amount.from"),
        ("customFields.due.from=someday", "customFields.due.from"),
        ("customFields.region.from=A", "customFields.region.from"),
    ]:
        assert param in _error(owner.client.get(f"/v1/tickets?{query}"), 400)["details"]


def test_the_migration_defines_the_keys_tickets_already_hold(owner, outsider):
    # given tickets with keys no definition describes (as before custom fields existed)
    TicketFactory(license=owner.license, custom_fields={"orderNo": 12, "plan": "pro"})
    TicketFactory(license=owner.license, custom_fields={"plan": "basic"})
    TicketFactory(license=outsider.license, custom_fields={"region": "EU"})
    CustomField.objects.all().delete()
    # when the data migration runs
    migration = importlib.import_module("tickets.migrations.0015_custom_fields")
    migration.define_keys_in_use(apps, type("Editor", (), {"connection": connection})())
    # then each key is a singleLine field of its license, and the tickets stay writable
    defined = set(CustomField.objects.values_list("license_id", "api_key", "type"))
    assert defined == {
        (owner.license.pk, "orderNo", "singleLine"),
        (owner.license.pk, "plan", "singleLine"),
        (outsider.license.pk, "region", "singleLine"),
    }
    ticket = Ticket.objects.filter(license=owner.license, custom_fields__has_key="orderNo").get()
    response = _patch(owner, ticket, {"orderNo": 12, "plan": "enterprise"})
    assert response.json()["customFields"] == {"orderNo": 12, "plan": "enterprise"}


def test_the_admins_ticket_form_shows_typed_inputs_and_is_checked_like_the_api(superuser, license):
    from tests.admin_helpers import error_text, form_data

    CustomFieldFactory(license=license, api_key="amount", type="number", display_name="Amount")
    CustomFieldFactory(license=license, api_key="due", type="date")
    ticket = TicketFactory(license=license)
    url = f"/admin/tickets/ticket/{ticket.pk}/change/"
    page = superuser.get(url)
    assert b'name="customField__amount"' in page.content and b'type="date"' in page.content
    # a key no field defines (typed into the JSON) is refused by the service, naming it
    refused = superuser.post(url, form_data(page) | {"custom_fields": '{"nope": 1}'})
    assert refused.status_code == 200 and "customFields.nope" in error_text(refused)
    ticket.refresh_from_db()
    assert ticket.custom_fields == {}
    # the typed inputs write typed values
    accepted = superuser.post(
        url, form_data(superuser.get(url)) | {"customField__amount": "12", "customField__due": "2026-05-01"}
    )
    assert accepted.status_code == 302, error_text(accepted)
    ticket.refresh_from_db()
    assert ticket.custom_fields == {"amount": 12, "due": "2026-05-01"}
    # saved again unchanged, nothing changes; an emptied input removes the value
    assert superuser.post(url, form_data(superuser.get(url))).status_code == 302
    ticket.refresh_from_db()
    assert ticket.custom_fields == {"amount": 12, "due": "2026-05-01"}
    superuser.post(url, form_data(superuser.get(url)) | {"customField__due": ""})
    ticket.refresh_from_db()
    assert ticket.custom_fields == {"amount": 12}


def test_the_admin_defines_a_field_through_the_service(superuser, license):
    response = superuser.post(
        "/admin/tickets/customfield/add/",
        {"license": license.pk, "api_key": "bad key", "display_name": "x", "type": "singleLine",
         "role_level": "normal", "status": "active", "options": "[]"},
    )  # fmt: skip
    assert response.status_code == 200  # refused by the service, shown on the form
    assert not CustomField.objects.exists()
    response = superuser.post(
        "/admin/tickets/customfield/add/",
        {"license": license.pk, "api_key": "plan", "display_name": "Plan", "type": "dropdown",
         "role_level": "normal", "status": "active", "options": '["basic", "pro"]'},
    )  # fmt: skip
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert CustomField.objects.get(license=license).options == ["basic", "pro"]
