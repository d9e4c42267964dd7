"""`/v1/cannedResponses`: the generic resource tests, then shortcuts, placeholders, team scope, files, render."""

import pytest

from accounts.models import TeamMembership
from tests.audit_helpers import entries_written
from tests.factories import TeamFactory, TicketFactory
from tests.resource_tests import Resource, ResourceTests
from tickets.canned_responses import services
from tickets.canned_responses.api import CannedResponseViewSet
from tickets.canned_responses.models import CannedResponse

pytestmark = pytest.mark.django_db


def _make(license, **fields):
    fields.setdefault("text", "Thanks for waiting.")
    return services.canned_response_create(license=license, **fields).pk


class TestCannedResponseResource(ResourceTests):
    resource = Resource(
        viewset=CannedResponseViewSet,
        make=_make,
        create={
            "text": "Hello {{requester.name}}, ticket {{ticket.shortID}} is on its way.",
            "shortcuts": ["ship"],
        },
        update={"text": "Hi {{requester.name}}.", "shortcuts": ["shipped", "sent"]},
        invalid=[
            ({}, "text"),
            ({"text": 5}, "text"),
            ({"text": "Hi {{ticket.nope}}"}, "text"),
            ({"text": "x" * (64 * 1024 + 1)}, "text"),
            ({"text": "Hi", "shortcuts": ["two words"]}, "shortcuts"),
            ({"text": "Hi", "shortcuts": ["a", "a"]}, "shortcuts"),
            ({"text": "Hi", "shortcuts": "a"}, "shortcuts"),
            ({"text": "Hi", "teamID": "6f1c7a55-2b5e-4c1e-9c55-0d7f5bb3b0aa"}, "teamID"),
            ({"text": "Hi", "transactionID": "6f1c7a55-2b5e-4c1e-9c55-0d7f5bb3b0aa"}, "transactionID"),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner", "normal"},
        entity_name="ship",
        create_changes={"shortcuts": {"before": None, "after": ["ship"]}},
        update_changes={"shortcuts": {"before": ["ship"], "after": ["shipped", "sent"]}},
        publishes=True,
    )


def test_a_shortcut_taken_in_the_license_is_a_400_naming_it(owner, agent):
    # given a canned response with the shortcut "refund"
    _make(owner.license, shortcuts=["refund"])
    # when another one takes it (in any case), on create or on update
    created = agent.client.post("/v1/cannedResponses", {"text": "Hi", "shortcuts": ["REFUND"]}, format="json")
    other = _make(owner.license, shortcuts=["other"])
    updated = owner.client.patch(f"/v1/cannedResponses/{other}", {"shortcuts": ["refund"]}, format="json")
    # then both are refused, naming the shortcut, and nothing changed
    for response in (created, updated):
        assert response.status_code == 400, response.content
        assert "'REFUND'" in str(response.json()["details"]) or "'refund'" in str(response.json()["details"])
        assert "shortcuts" in response.json()["details"]
    assert CannedResponse.objects.count() == 2
    assert CannedResponse.objects.get(pk=other).shortcuts == ["other"]


def test_the_same_shortcut_in_another_license_is_fine(owner, outsider):
    _make(owner.license, shortcuts=["refund"])
    response = outsider.client.post(
        "/v1/cannedResponses", {"text": "Hi", "shortcuts": ["refund"]}, format="json"
    )
    assert response.status_code == 201, response.content


def test_an_unknown_placeholder_is_a_400_naming_it(agent):
    response = agent.client.post("/v1/cannedResponses", {"text": "Dear {{customer.name}}"}, format="json")
    assert response.status_code == 400
    assert response.json()["details"] == {"text": ["Unknown placeholder {{customer.name}}."]}
    assert not CannedResponse.objects.exists()


def test_a_team_response_is_seen_by_its_members_and_the_owners_only(owner, agent, viewer):
    # given a response of a team the normal agent belongs to, and one of a team it does not
    mine, theirs = TeamFactory(license=owner.license), TeamFactory(license=owner.license)
    TeamMembership.objects.create(agent=agent.agent, team=mine)
    everyone = _make(owner.license, text="all")
    ours = _make(owner.license, text="ours", team=mine)
    hidden = _make(owner.license, text="theirs", team=theirs)
    # then
    listed = lambda persona: {item["ID"] for item in persona.client.get("/v1/cannedResponses").json()}  # noqa: E731
    assert listed(owner) == {str(everyone), str(ours), str(hidden)}
    assert listed(agent) == {str(everyone), str(ours)}
    assert listed(viewer) == {str(everyone)}
    assert agent.client.get(f"/v1/cannedResponses/{hidden}").status_code == 404
    assert (
        agent.client.patch(f"/v1/cannedResponses/{hidden}", {"text": "x"}, format="json").status_code == 404
    )
    # and a normal agent cannot file one under a team it is not in
    response = agent.client.post(
        "/v1/cannedResponses", {"text": "x", "teamID": str(theirs.pk)}, format="json"
    )
    assert response.status_code == 400 and "teamID" in response.json()["details"]
    response = agent.client.post("/v1/cannedResponses", {"text": "x", "teamID": str(mine.pk)}, format="json")
    assert response.status_code == 201 and response.json()["teamID"] == str(mine.pk)


def test_files_come_from_a_transaction(owner, tmp_path, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MEDIA_ROOT = str(tmp_path)
    txn = owner.client.post("/v1/transactions").json()["ID"]
    upload = SimpleUploadedFile("terms.txt", b"terms", content_type="text/plain")
    assert (
        owner.client.post(f"/v1/transactions/{txn}/attachments", {"attachments": [upload]}).status_code == 201
    )
    with entries_written() as written:
        response = owner.client.post(
            "/v1/cannedResponses", {"text": "See the terms.", "transactionID": txn}, format="json"
        )
    assert response.status_code == 201, response.content
    assert written.one().changes["attachments"]["after"]  # the files are in the create's one entry
    assert [item["name"] for item in response.json()["attachments"]] == ["terms.txt"]
    # the transaction now serves that canned response only
    again = owner.client.post("/v1/cannedResponses", {"text": "Again", "transactionID": txn}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "transaction_bound"


def test_render_fills_the_placeholders_for_a_ticket(owner):
    owner.agent.signature_text = "Ada, Acme support"
    owner.agent.save()
    ticket = TicketFactory(
        license=owner.license, subject="Lost parcel", requester={"email": "jane@example.com", "name": "Jane"}
    )
    pk = _make(
        owner.license,
        text="Hello {{requester.name}},\n\nabout #{{ticket.shortID}} ({{ticket.subject}}): https://acme.example\n\n"
        "{{agent.name}}\n{{agent.signature}}",
    )
    response = owner.client.post(
        f"/v1/cannedResponses/{pk}/render", {"ticketID": str(ticket.pk)}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["text"] == (
        f"Hello Jane,\n\nabout #{ticket.short_id} (Lost parcel): https://acme.example\n\n"
        f"{owner.agent.name}\nAda, Acme support"
    )
    assert body["richTextHtml"].startswith("<p>Hello Jane,</p>")
    assert '<a href="https://acme.example"' in body["richTextHtml"]


def test_render_refuses_a_ticket_of_another_license(owner, outsider):
    foreign = TicketFactory(license=outsider.license)
    pk = _make(owner.license)
    response = owner.client.post(
        f"/v1/cannedResponses/{pk}/render", {"ticketID": str(foreign.pk)}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["details"] == {"ticketID": [f"'{foreign.pk}' does not exist in this license."]}
    assert owner.client.post(f"/v1/cannedResponses/{pk}/render", {}, format="json").status_code == 400


def test_the_limit_per_scope_is_a_409_naming_it(owner, monkeypatch):
    monkeypatch.setattr(services, "MAX_PER_SCOPE", 2)
    _make(owner.license)
    _make(owner.license)
    response = owner.client.post("/v1/cannedResponses", {"text": "third"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "limit_canned_responses"
    assert "2 canned responses" in response.json()["error"]
    # another scope (a team) has room of its own
    team = TeamFactory(license=owner.license)
    assert (
        owner.client.post(
            "/v1/cannedResponses", {"text": "t", "teamID": str(team.pk)}, format="json"
        ).status_code
        == 201
    )


# --- admin ----------------------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, db):
    from accounts.models import Account

    client.force_login(Account.objects.create_superuser(email="admin@example.com", password="x"))
    return client


def test_the_admin_writes_through_the_service(admin_client, license):
    from audit.models import AuditEntry

    # when the admin adds one
    response = admin_client.post(
        "/admin/tickets/cannedresponse/add/",
        {"license": license.pk, "text": "Hi {{requester.name}}", "shortcuts": '["hi"]', "team": ""},
    )
    assert response.status_code == 302, response.content
    canned = CannedResponse.objects.get()
    assert canned.shortcuts == ["hi"]
    assert (
        AuditEntry.objects.filter(target="cannedResponses", action="create", object_id=str(canned.pk)).count()
        == 1
    )
    # then a taken shortcut and an unknown placeholder are the form's errors, and nothing is written
    for text, shortcuts, error in (
        ("x", '["HI"]', b"already exists in this license"),
        ("{{nope}}", "[]", b"Unknown placeholder"),
    ):
        response = admin_client.post(
            "/admin/tickets/cannedresponse/add/",
            {"license": license.pk, "text": text, "shortcuts": shortcuts, "team": ""},
        )
        assert response.status_code == 200 and error in response.content
    assert CannedResponse.objects.count() == 1
    admin_client.post(
        "/admin/tickets/cannedresponse/",
        {"action": "delete_selected", "_selected_action": [canned.pk], "post": "yes"},
    )
    assert not CannedResponse.objects.exists()
