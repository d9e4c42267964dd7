"""An agent's day in the console (issue 30): the ticket page's reply box inserts a canned response by its
shortcut and applies a macro; a reply written against an older state of the ticket is refused with what
changed; a viewer reads and cannot write."""

from __future__ import annotations

import pytest

from tests.admin_helpers import form_data, signed_in
from tests.factories import TeamFactory, TicketFactory
from tickets import services as ticket_services
from tickets.canned_responses.services import canned_response_create
from tickets.macros.services import macro_create
from tickets.models import Ticket

URL = "/admin/tickets/ticket/"


@pytest.fixture
def ticket(license):
    team = TeamFactory(license=license, name="Printers")
    return TicketFactory(
        license=license, subject="Printer on fire", teams=[team], assignment={"team": team},
        requester={"email": "jane@example.com", "name": "Jane"},
    )  # fmt: skip


@pytest.fixture
def tools(license, agent, owner):
    canned_response_create(
        license=license, text="Hello {{requester.name}}, we are on it.", shortcuts=["onit"]
    )
    shared = macro_create(
        license=license, name="Wait for customer", visibility="shared",
        actions=[{"type": "setStatus", "value": "pending"}],
    )  # fmt: skip
    theirs = macro_create(
        license=license, name="Owner's own", visibility="private", agent=owner.agent,
        actions=[{"type": "setPriority", "value": 20}],
    )  # fmt: skip
    return {"shared": shared, "theirs": theirs}


def test_the_reply_box_offers_the_shortcuts_and_the_macros_the_agent_may_use(ticket, tools, agent):
    # when a normal agent opens the ticket
    page = signed_in(agent.account).get(f"{URL}{ticket.pk}/change/")
    html = page.content.decode()
    # then the shortcut is offered, and the shared macro but not the owner's private one
    assert '<option value="onit">' in html
    macros = list(page.context["adminform"].form.fields["macro"].queryset)
    assert macros == [tools["shared"]]


def test_the_assignment_team_field_shows_the_tickets_team(ticket, agent):
    page = signed_in(agent.account).get(f"{URL}{ticket.pk}/change/")
    assert page.context["adminform"].form["assignment_team"].value() == ticket.assignment_team_id
    assert "selected>Printers</option>" in page.content.decode()


def test_a_shortcut_gives_the_canned_response_filled_for_the_ticket(ticket, tools, agent, viewer, outsider):
    url = f"{URL}{ticket.pk}/canned-response/"
    response = signed_in(agent.account).get(url, {"shortcut": "OnIt"})
    assert response.status_code == 200
    assert response.json() == {"text": "Hello Jane, we are on it."}
    assert signed_in(agent.account).get(url, {"shortcut": "nope"}).status_code == 404
    assert signed_in(viewer.account).get(url, {"shortcut": "onit"}).status_code == 403
    assert signed_in(outsider.account).get(url, {"shortcut": "onit"}).status_code in (302, 403)


def test_a_reply_with_a_macro_is_sent_and_the_macro_applied(ticket, tools, agent):
    client = signed_in(agent.account)
    url = f"{URL}{ticket.pk}/change/"
    data = form_data(client.get(url)) | {
        "reply": "Hello Jane, we are on it.",
        "macro": str(tools["shared"].pk),
    }
    response = client.post(url, data)
    assert response.status_code == 302
    ticket.refresh_from_db()
    assert ticket.status == "pending"
    message = ticket.messages.order_by("-created_at").first()
    assert message.text == "Hello Jane, we are on it."


def test_a_stale_reply_is_refused_with_what_changed_then_sent_once_read(ticket, agent, owner):
    # given the agent's page, opened before the owner answers
    client = signed_in(agent.account)
    url = f"{URL}{ticket.pk}/change/"
    data = form_data(client.get(url)) | {"reply": "Have you tried turning it off?"}
    ticket_services.ticket_update(
        ticket=Ticket.objects.get(pk=ticket.pk), message={"text": "A technician is coming at noon."},
        author_agent=owner.agent,
    )  # fmt: skip
    messages_before = ticket.messages.count()
    # when the agent saves its reply
    response = client.post(url, data)
    # then nothing is sent, and the page names what changed and shows it in the conversation
    assert response.status_code == 200
    assert ticket.messages.count() == messages_before
    html = response.content.decode()
    assert "Not sent: the ticket changed since you opened it" in html
    assert "A technician is coming at noon." in html
    # and saving again (the page now knows the ticket's new state) sends the reply as it is
    again = form_data(response)
    assert again["reply"] == "Have you tried turning it off?"
    assert client.post(url, again).status_code == 302
    assert ticket.messages.count() == messages_before + 1


def test_a_viewer_reads_the_ticket_and_has_no_way_to_write(ticket, viewer, agent):
    client = signed_in(viewer.account)
    url = f"{URL}{ticket.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and page.context["has_change_permission"] is False
    html = page.content.decode()
    assert 'name="reply"' not in html and 'name="_save"' not in html
    data = form_data(signed_in(agent.account).get(url)) | {"reply": "from a viewer"}
    assert client.post(url, data).status_code == 403
    assert not ticket.messages.filter(text="from a viewer").exists()
