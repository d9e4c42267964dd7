"""Reply addresses: owners add them, a signed link in a confirmation mail verifies them (GET shows, POST
verifies), teams may only name their license's addresses, and the writes are audited."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.models import Team
from templates_app.api.reply_addresses import ReplyAddressViewSet
from templates_app.models import OutboundMessage, ReplyAddress
from templates_app.reply_addresses import verification_token
from tests.resource_tests import Resource, ResourceTests
from tests.route_objects import _reply_address_pk

UNKNOWN = "6f1c8c1e-0000-4000-8000-000000000000"


def _add(persona, callbacks, email="support@acme.example", name="Acme Support"):
    with callbacks(execute=True):
        return persona.client.post("/v1/replyAddresses", {"email": email, "name": name}, format="json")


def _link(sink) -> str:
    [(rcpts, received)] = sink.messages
    text = received.get_body(("plain",)).get_content()
    return re.search(r"https?://\S+/replyAddresses/verify\?token=\S+", text).group(0)


def test_adding_an_address_mails_a_link_that_verifies_it_on_post_only(
    owner, viewer, smtp_server, eager_tasks, django_capture_on_commit_callbacks, settings
):
    settings.HELPDESK_APP_URL = "http://helpdesk.test:8123"
    # when the owner adds an address
    response = _add(owner, django_capture_on_commit_callbacks)
    assert response.status_code == 201, response.content
    body = response.json()
    assert {k: body[k] for k in ("email", "name", "verified", "licenseID")} == {
        "email": "support@acme.example",
        "name": "Acme Support",
        "verified": False,
        "licenseID": owner.license.pk,
    }
    assert set(body) >= {"ID", "createdAt"}
    # then a confirmation mail with a link to our app went to that address
    assert smtp_server.messages[0][0] == ["support@acme.example"]
    link = _link(smtp_server)
    assert link.startswith("http://helpdesk.test:8123/replyAddresses/verify?token=")
    path = link.removeprefix("http://helpdesk.test:8123")
    browser = Client()
    # opening the link (a mail scanner does that too) shows a button and changes nothing
    page = browser.get(path)
    assert page.status_code == 200
    assert b"support@acme.example" in page.content and b'<button type="submit">' in page.content
    assert ReplyAddress.objects.get().verified_at is None
    # pressing the button verifies it
    token = re.search(r'name="token" value="([^"]+)"', page.content.decode()).group(1)
    confirmed = browser.post("/replyAddresses/verify", {"token": token})
    assert confirmed.status_code == 200 and b"is confirmed" in confirmed.content
    listed = viewer.client.get("/v1/replyAddresses").json()
    assert [(a["email"], a["verified"]) for a in listed] == [("support@acme.example", True)]


@pytest.mark.parametrize("token", ["", "garbage", "abc:def:ghi"])
def test_a_bad_link_is_a_clear_400_page(token, license):
    page = Client().post("/replyAddresses/verify", {"token": token})
    assert page.status_code == 400 and b"not valid" in page.content


def test_an_expired_link_is_refused(owner, license, settings, django_capture_on_commit_callbacks):
    import time_machine

    address = ReplyAddress.objects.create(license=license, email="a@acme.example")
    token = verification_token(address)
    with time_machine.travel(address.created_at.timestamp() + 8 * 86400):
        page = Client().post("/replyAddresses/verify", {"token": token})
    assert page.status_code == 400 and b"expired" in page.content
    address.refresh_from_db()
    assert address.verified_at is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "email"),
        ({"email": "not an address"}, "email"),
        ({"email": "x@acme.example", "verified": True}, "verified"),
        ({"email": "1@inbound.helpdesk.localhost"}, "email"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(owner, body, field):
    response = owner.client.post("/v1/replyAddresses", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["details"]
    assert ReplyAddress.objects.count() == 0


def test_the_same_address_twice_is_refused(owner, django_capture_on_commit_callbacks):
    assert _add(owner, django_capture_on_commit_callbacks).status_code == 201
    again = _add(owner, django_capture_on_commit_callbacks, email="SUPPORT@acme.example")
    assert again.status_code == 400 and "email" in again.json()["details"]


def test_only_owners_write_and_everyone_reads(agent, viewer, license):
    address = ReplyAddress.objects.create(license=license, email="a@acme.example")
    for persona in (agent, viewer):
        assert (
            persona.client.post("/v1/replyAddresses", {"email": "b@acme.example"}, format="json").status_code
            == 403
        )
        assert persona.client.delete(f"/v1/replyAddresses/{address.pk}").status_code == 403
        assert persona.client.get("/v1/replyAddresses").status_code == 200


def test_another_licenses_address_is_invisible(owner, outsider):
    theirs = ReplyAddress.objects.create(license=outsider.license, email="theirs@other.example")
    assert owner.client.get("/v1/replyAddresses").json() == []
    assert owner.client.get(f"/v1/replyAddresses/{theirs.pk}").status_code == 404
    assert owner.client.delete(f"/v1/replyAddresses/{theirs.pk}").status_code == 404
    assert ReplyAddress.objects.filter(pk=theirs.pk).exists()


def test_a_team_names_only_an_address_of_its_license(owner, outsider, license):
    mine = ReplyAddress.objects.create(license=license, email="mine@acme.example")
    theirs = ReplyAddress.objects.create(license=outsider.license, email="theirs@other.example")
    team = license.default_team
    for value in (str(theirs.pk), UNKNOWN):
        response = owner.client.patch(f"/v1/teams/{team.pk}", {"replyAddressID": value}, format="json")
        assert response.status_code == 400 and "replyAddressID" in response.json()["details"]
        bulk = owner.client.patch(
            "/v1/teams", {"ids": [str(team.pk)], "fields": {"replyAddressID": value}}, format="json"
        )
        assert bulk.status_code == 400 and "replyAddressID" in str(bulk.json()["details"])
    team.refresh_from_db()
    assert team.reply_address_id is None
    response = owner.client.patch(f"/v1/teams/{team.pk}", {"replyAddressID": str(mine.pk)}, format="json")
    assert response.status_code == 200 and response.json()["replyAddressID"] == str(mine.pk)
    # deleting the address leaves the team sending from the inbound address again
    assert owner.client.delete(f"/v1/replyAddresses/{mine.pk}").status_code == 204
    assert Team.objects.get(pk=team.pk).reply_address_id is None


def test_reply_address_writes_are_audited(owner, django_capture_on_commit_callbacks):
    from tests.audit_helpers import assert_api_author, entries_written

    with entries_written() as written:
        address_id = _add(owner, django_capture_on_commit_callbacks).json()["ID"]
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("create", "replyAddresses", address_id)
    assert_api_author(entry, owner)
    with entries_written() as written:
        owner.client.delete(f"/v1/replyAddresses/{address_id}")
    assert (written.one().action, written.one().target) == ("delete", "replyAddresses")


def test_the_admin_lists_only_the_staff_members_licenses(staff_owner, license, outsider):
    ReplyAddress.objects.create(license=license, email="mine@acme.example")
    ReplyAddress.objects.create(license=outsider.license, email="theirs@other.example")
    page = staff_owner.get("/admin/templates_app/replyaddress/")
    assert page.status_code == 200
    assert b"mine@acme.example" in page.content and b"theirs@other.example" not in page.content


def test_the_admin_names_them_reply_addresses(staff_owner):
    index = staff_owner.get("/admin/").content.decode()
    listed = staff_owner.get("/admin/templates_app/replyaddress/").content.decode()
    for page in (index, listed):
        assert "Reply addresses" in page and "addresss" not in page


def test_the_admin_adds_through_the_service_which_mails_the_link(
    staff_owner, license, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_owner.post(
            "/admin/templates_app/replyaddress/add/",
            {"license": license.pk, "email": "help@acme.example", "name": "Help"},
        )
    assert response.status_code == 302, response.content[:3000]
    assert ReplyAddress.objects.get().email == "help@acme.example"
    assert OutboundMessage.objects.get().kind == OutboundMessage.KIND_REPLY_ADDRESS


class TestReplyAddressResource(ResourceTests):
    resource = Resource(
        viewset=ReplyAddressViewSet,
        make=_reply_address_pk,
        create={"email": "support@acme.example", "name": "Acme Support"},
        invalid=[
            ({}, "email"),
            ({"email": "not an address"}, "email"),
            ({"email": "1@inbound.helpdesk.localhost"}, "email"),
            ({"email": "x@acme.example", "name": "n" * 201}, "name"),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="Acme Support <support@acme.example>",
        create_changes={"email": {"before": None, "after": "support@acme.example"}},
    )
