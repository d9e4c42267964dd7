"""`/v1/mailboxes` (the generic resource tests), the write-only IMAP password, and the mailbox's inbound address:
mail sent there lands in the mailbox's team. The polling itself: tests/test_mailbox_imap.py."""

from templates_app.api.mailboxes import MailboxViewSet
from templates_app.inbound.services import inbound_message_receive
from templates_app.models import Mailbox, MailboxState
from tests.factories import TeamFactory
from tests.mail_helpers import simple
from tests.resource_tests import Resource, ResourceTests
from tests.route_objects import _mailbox_pk
from tickets.models import Ticket

IMAP = {"host": "imap.acme.example", "security": "ssl", "username": "support", "password": "s3cret"}


class TestMailboxResource(ResourceTests):
    resource = Resource(
        viewset=MailboxViewSet,
        make=_mailbox_pk,
        create={"name": "Support", "email": "support@acme.example"},
        update={"name": "Help"},
        invalid=[
            ({}, "name"),
            ({"name": "Support"}, "email"),
            ({"name": "Support", "email": "not an address"}, "email"),
            ({"name": "Support", "email": "a@acme.example", "teamID": "nope"}, "teamID"),
            ({"name": "Support", "email": "a@acme.example", "status": "failing"}, "status"),
            (
                {"name": "Support", "email": "a@acme.example", "imap": {"host": "h", "security": "tls"}},
                "imap",
            ),
            ({"name": "Support", "email": "a@acme.example", "imap": {**IMAP, "password": None}}, "imap"),
            ({"name": "Support", "email": "a@acme.example", "imap": {**IMAP, "port": 0}}, "imap"),
            (
                {"name": "Support", "email": "x@helpdesk.localhost.example", "replyAddressID": "nope"},
                "replyAddressID",
            ),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="Support <support@acme.example>",
        create_changes={"name": {"before": None, "after": "Support"}},
        update_changes={"name": {"before": "Support", "after": "Help"}},
        publishes=True,
    )


def test_a_mailbox_shows_its_inbound_address_team_and_state(owner):
    # when
    created = owner.client.post(
        "/v1/mailboxes", {"name": "Support", "email": "Support@Acme.example"}, format="json"
    )
    # then
    body = created.json()
    assert created.status_code == 201, body
    assert body["email"] == "support@acme.example"
    assert body["teamID"] == str(owner.license.default_team_id)
    assert (
        body["inboundAddress"]
        == f"{owner.license.pk}+m{body['ID'].replace('-', '')}@inbound.helpdesk.localhost"
    )
    assert body["imap"] is None and body["replyAddressID"] is None
    assert (body["status"], body["lastFetchedAt"], body["lastError"]) == ("active", None, "")


def test_the_imap_password_is_stored_never_shown_and_kept_when_left_out(owner):
    created = owner.client.post(
        "/v1/mailboxes", {"name": "Support", "email": "support@acme.example", "imap": IMAP}, format="json"
    )
    body = created.json()
    assert created.status_code == 201, body
    assert body["imap"] == {
        "host": "imap.acme.example", "port": 993, "security": "ssl", "username": "support", "folder": "INBOX"
    }  # fmt: skip
    assert "s3cret" not in created.content.decode()
    # when the settings are changed without a password
    changed = owner.client.patch(
        f"/v1/mailboxes/{body['ID']}",
        {"imap": {"host": "mail.acme.example", "security": "starttls", "username": "support"}},
        format="json",
    )
    # then the password is kept, never shown
    assert changed.status_code == 200, changed.content
    assert changed.json()["imap"]["port"] == 143 and "s3cret" not in changed.content.decode()
    assert Mailbox.objects.get(pk=body["ID"]).imap_password == "s3cret"
    listed = owner.client.get("/v1/mailboxes")
    assert "s3cret" not in listed.content.decode()


def test_a_new_imap_account_needs_a_password(owner):
    mailbox = owner.client.post(
        "/v1/mailboxes", {"name": "S", "email": "s@acme.example"}, format="json"
    ).json()
    refused = owner.client.patch(
        f"/v1/mailboxes/{mailbox['ID']}", {"imap": {**IMAP, "password": None}}, format="json"
    )
    assert refused.status_code == 400 and "imap" in refused.json()["details"]


def test_imap_null_stops_polling_and_a_moved_account_forgets_its_uids(owner):
    mailbox = owner.client.post(
        "/v1/mailboxes", {"name": "S", "email": "s@acme.example", "imap": IMAP}, format="json"
    ).json()
    MailboxState.objects.filter(pk=mailbox["ID"]).update(uid_validity=7, last_uid=42)
    # a change of folder: the UIDs are another folder's
    owner.client.patch(
        f"/v1/mailboxes/{mailbox['ID']}", {"imap": {**IMAP, "folder": "Support"}}, format="json"
    )
    state = MailboxState.objects.get(pk=mailbox["ID"])
    assert (state.uid_validity, state.last_uid) == (None, 0)
    cleared = owner.client.patch(f"/v1/mailboxes/{mailbox['ID']}", {"imap": None}, format="json")
    assert cleared.json()["imap"] is None
    assert Mailbox.objects.get(pk=mailbox["ID"]).imap_password == ""


def test_an_address_is_one_mailbox_per_license_and_never_ours(owner):
    owner.client.post("/v1/mailboxes", {"name": "S", "email": "s@acme.example"}, format="json")
    again = owner.client.post("/v1/mailboxes", {"name": "T", "email": "S@acme.example"}, format="json")
    assert again.status_code == 400 and "email" in again.json()["details"]
    ours = owner.client.post(
        "/v1/mailboxes",
        {"name": "T", "email": f"{owner.license.pk}@inbound.helpdesk.localhost"},
        format="json",
    )
    assert ours.status_code == 400 and "email" in ours.json()["details"]


def test_mail_to_a_mailbox_inbound_address_lands_in_its_team(owner):
    # given a mailbox of a team that is not the default one
    team = TeamFactory(license=owner.license)
    mailbox = owner.client.post(
        "/v1/mailboxes",
        {"name": "Sales", "email": "sales@acme.example", "teamID": str(team.pk)},
        format="json",
    ).json()
    # when mail is forwarded to its inbound address
    result = inbound_message_receive(
        raw=simple(to="sales@acme.example", subject="A quote"), recipients=[mailbox["inboundAddress"]]
    )
    # then it is a ticket of the mailbox's team
    ticket = Ticket.objects.get(pk=result.ticket_id)
    assert ticket.license_id == owner.license.pk
    assert list(ticket.teams.values_list("pk", flat=True)) == [team.pk]


def test_a_deleted_mailbox_address_still_reaches_the_license(owner):
    mailbox = owner.client.post(
        "/v1/mailboxes", {"name": "S", "email": "s@acme.example"}, format="json"
    ).json()
    owner.client.delete(f"/v1/mailboxes/{mailbox['ID']}")
    result = inbound_message_receive(
        raw=simple(subject="Still there?"), recipients=[mailbox["inboundAddress"]]
    )
    assert Ticket.objects.get(pk=result.ticket_id).license_id == owner.license.pk


def test_a_mailbox_support_address_in_the_loop_gets_no_mail(owner):
    # given a ticket from mail whose Cc names the license's own support address
    from templates_app.ticket_mail import recipients

    owner.client.post("/v1/mailboxes", {"name": "S", "email": "support@acme.example"}, format="json")
    raw = simple(headers={"Cc": "Support <SUPPORT@acme.example>, boss@client.example"})
    ticket = Ticket.objects.get(
        pk=inbound_message_receive(raw=raw, recipients=[_license_address(owner)]).ticket_id
    )
    # then our mail goes to the customer and the boss, never back into the support mailbox
    assert recipients(ticket) == ["client@example.com", "boss@client.example"]


def _license_address(persona) -> str:
    from templates_app.addresses import license_address

    return license_address(persona.license.pk)
