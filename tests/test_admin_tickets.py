"""Tickets and tags in the admin: written through tickets.services (read-only silos stay read-only),
moved and re-statused by actions, listed with a constant number of queries, scoped to the owner's license."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Agent
from tests.admin_helpers import error_text, form_data
from tests.factories import AgentFactory, LicenseFactory, TagFactory, TeamFactory, TicketFactory
from tickets.models import Message, Tag, Ticket, TicketTeam

URL = "/admin/tickets/ticket/"


def _action(client, action, tickets, **choice):
    # from the list of every ticket (an agent's list opens on its own open tickets)
    return client.post(
        f"{URL}?view=all", {"action": action, "_selected_action": [str(t.pk) for t in tickets], **choice}
    )


def test_the_ticket_pages_load(superuser, license):
    ticket = TicketFactory(license=license, tags=[TagFactory(license=license)])
    assert superuser.get(URL).status_code == 200
    assert superuser.get(URL, {"q": ticket.short_id}).context["cl"].result_list[0] == ticket
    assert superuser.get(f"{URL}add/").status_code == 200
    page = superuser.get(f"{URL}{ticket.pk}/change/")
    assert page.status_code == 200
    assert b"my order did not arrive" in page.content  # the thread, inline


def test_the_admin_creates_a_ticket_through_the_service(superuser, license):
    tag = TagFactory(license=license)
    response = superuser.post(
        f"{URL}add/",
        {"license": license.pk, "subject": "Printer on fire", "requester_email": "c@example.com",
         "message": "It is on fire.", "status": "pending", "priority": "20", "tags": [tag.pk], "custom_fields": "{}",
         "silo": "tickets"},
    )  # fmt: skip
    assert response.status_code == 302, response.context["adminform"].form.errors
    ticket = Ticket.objects.get(subject="Printer on fire")
    # the service gave it a short ID, its first message and the default team
    assert ticket.short_id and ticket.priority == 20 and ticket.status == "pending"
    assert Message.objects.get(ticket=ticket).text == "It is on fire."
    assert list(ticket.teams.all()) == [license.default_team]
    assert list(ticket.tags.all()) == [tag]


def test_the_admin_changes_a_ticket_and_replies(superuser, license):
    ticket = TicketFactory(license=license)
    team = TeamFactory(license=license)
    agent = AgentFactory(license=license)
    url = f"{URL}{ticket.pk}/change/"
    data = form_data(superuser.get(url)) | {
        "status": "solved", "assignment_team": str(team.pk), "assignment_agent": str(agent.pk),
        "reply": "Sorted, thanks!",
    }  # fmt: skip
    response = superuser.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    ticket.refresh_from_db()
    assert (ticket.status, ticket.assignment_team, ticket.assignment_agent) == ("solved", team, agent)
    reply = ticket.messages.order_by("created_at").last()
    assert (reply.text, reply.author_type, reply.author_agent) == ("Sorted, thanks!", "agent", None)


def test_the_admin_changes_a_tickets_teams_and_the_links_carry_its_state(superuser, license):
    ticket = TicketFactory(license=license)
    team = TeamFactory(license=license, name="Escalations")
    url = f"{URL}{ticket.pk}/change/"
    page = superuser.get(url)
    assert 'name="teams"' in page.content.decode()  # the team picker, though TicketTeam is its own model
    data = form_data(page) | {"status": "onhold", "teams": [str(team.pk)]}
    response = superuser.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    links = list(
        TicketTeam.objects.filter(ticket=ticket).values_list("team_id", "license_id", "silo", "status")
    )
    assert links == [(team.pk, license.pk, "tickets", "onhold")]


def test_an_owners_reply_is_signed_by_their_agent(staff_owner, owner, license):
    ticket = TicketFactory(license=license)
    url = f"{URL}{ticket.pk}/change/"
    data = form_data(staff_owner.get(url)) | {"reply": "Internal note", "reply_is_private": "on"}
    assert staff_owner.post(url, data).status_code == 302
    reply = ticket.messages.order_by("created_at").last()
    assert (reply.text, reply.is_private, reply.author_agent) == ("Internal note", True, owner.agent)


def test_a_ticket_in_a_read_only_silo_refuses_changes_with_a_form_error(superuser, license):
    ticket = TicketFactory(license=license, silo="spam")
    url = f"{URL}{ticket.pk}/change/"
    response = superuser.post(url, form_data(superuser.get(url)) | {"status": "closed"})
    assert response.status_code == 200
    assert "read-only" in error_text(response)
    ticket.refresh_from_db()
    assert ticket.status == "open"
    # moving it back is allowed
    response = superuser.post(url, form_data(superuser.get(url)) | {"silo": "tickets"})
    assert response.status_code == 302, (
        error_text(response),
        response.context["adminform"].form.changed_data,
    )
    ticket.refresh_from_db()
    assert ticket.silo == "tickets"


def test_the_silo_action_moves_tickets(superuser, license):
    tickets = [TicketFactory(license=license) for _ in range(3)]
    response = _action(superuser, "move_to_silo", tickets[:2], silo="spam")
    assert response.status_code == 302
    assert sorted(Ticket.objects.values_list("silo", flat=True)) == ["spam", "spam", "tickets"]
    assert superuser.get(URL, {"silo__exact": "spam"}).context["cl"].result_count == 2
    Ticket.objects.filter(pk=tickets[2].pk).update(priority=20)
    assert list(superuser.get(URL, {"priority": "20"}).context["cl"].result_list) == [tickets[2]]


def test_the_status_action_changes_all_or_none(superuser, license):
    # given an open ticket and one in the (read-only) spam silo
    open_ticket = TicketFactory(license=license)
    spam = TicketFactory(license=license, silo="spam")
    # when both are set to solved
    response = _action(superuser, "change_status", [open_ticket, spam], status="solved")
    # then the refusal is shown and neither changed
    assert response.status_code == 302
    shown = [str(m) for m in superuser.get(response["Location"]).context["messages"]]
    assert any("read-only" in m and "Nothing was changed" in m for m in shown)
    assert set(Ticket.objects.values_list("status", flat=True)) == {"open"}
    # and the open one alone changes
    _action(superuser, "change_status", [open_ticket], status="solved")
    open_ticket.refresh_from_db()
    assert open_ticket.status == "solved"


def test_an_action_without_its_choice_changes_nothing(superuser, license):
    ticket = TicketFactory(license=license)
    _action(superuser, "move_to_silo", [ticket])
    ticket.refresh_from_db()
    assert ticket.silo == "tickets"


def test_tickets_cannot_be_deleted_by_hand(superuser, license):
    ticket = TicketFactory(license=license)
    assert superuser.post(f"{URL}{ticket.pk}/delete/", {"post": "yes"}).status_code == 403


def test_tags_are_added_renamed_and_deleted_through_the_service(superuser, license):
    response = superuser.post("/admin/tickets/tag/add/", {"license": license.pk, "name": "vip"})
    assert response.status_code == 302
    tag = Tag.objects.get(name="vip")
    TagFactory(license=license, name="urgent")
    response = superuser.post(f"/admin/tickets/tag/{tag.pk}/change/", {"name": "Urgent"})
    assert response.status_code == 200
    assert "already exists" in error_text(response)
    assert superuser.post(f"/admin/tickets/tag/{tag.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Tag.objects.filter(pk=tag.pk).exists()


def test_an_owner_sees_and_moves_only_their_tickets(staff_owner, license, other_license):
    mine = TicketFactory(license=license)
    theirs = TicketFactory(license=other_license)
    assert list(staff_owner.get(URL, {"view": "all"}).context["cl"].result_list) == [mine]
    assert staff_owner.get(f"{URL}{theirs.pk}/change/").status_code == 302
    _action(staff_owner, "move_to_silo", [mine, theirs], silo="trash")
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.silo, theirs.silo) == ("trash", "tickets")
    # pickers offer only their license's tags and agents
    TagFactory(license=other_license, name="their-tag")
    tags = staff_owner.get(
        "/admin/autocomplete/",
        {"app_label": "tickets", "model_name": "ticket", "field_name": "tags", "term": ""},
    ).json()["results"]
    assert "their-tag" not in [r["text"] for r in tags]
    form = staff_owner.get(f"{URL}{mine.pk}/change/").context["adminform"].form
    assert set(form.fields["followers"].queryset) == set(Agent.objects.filter(license=license))


@pytest.mark.parametrize("who", ["superuser", "staff_owner"])
def test_the_ticket_list_runs_as_many_queries_for_many_tickets(
    request, who, license, django_assert_max_num_queries
):
    client = request.getfixturevalue(who)
    team, agent = TeamFactory(license=license), AgentFactory(license=license)
    TicketFactory(license=license, assignment={"team": team, "agent": agent})
    with CaptureQueriesContext(connection) as few:
        assert client.get(URL).status_code == 200
    for _ in range(15):
        TicketFactory(
            license=license,
            assignment={"team": TeamFactory(license=license), "agent": AgentFactory(license=license)},
        )
    LicenseFactory()
    with django_assert_max_num_queries(len(few)):
        assert client.get(URL).status_code == 200
    # and a ticket's page does not grow with its thread
    ticket = Ticket.objects.first()
    with CaptureQueriesContext(connection) as one:
        client.get(f"{URL}{ticket.pk}/change/")
    for i in range(5):
        from tickets import services

        services.ticket_update(ticket=ticket, message={"text": f"reply {i}"})
    with django_assert_max_num_queries(len(one)):
        client.get(f"{URL}{ticket.pk}/change/")


HTML_WITH_PIXEL = (
    '<p>Hello <b>there</b></p><img src="https://tracker.example/open.gif?id=42" alt="[logo]" width="1">'
    '<img src="cid:part1@mail" alt="inline"><img src="//cdn.example/x.png" alt="">'
)


def test_remote_images_of_a_message_show_only_on_demand(superuser, license):
    # given a received message whose HTML carries a tracking pixel
    ticket = TicketFactory(license=license)
    Message.objects.filter(ticket=ticket).update(rich_text_html=HTML_WITH_PIXEL)
    url = f"{URL}{ticket.pk}/change/"
    # when an agent opens the ticket
    page = superuser.get(url).content.decode()
    # then the HTML shows without the remote images, and a link offers them
    assert "<b>there</b>" in page
    assert "tracker.example" not in page and "cdn.example" not in page
    assert 'alt="[logo]"' in page and 'src="cid:part1@mail"' in page
    assert "2 remote images hidden" in page and 'href="?images=show"' in page
    # when the agent asks for the images, they are shown
    shown = superuser.get(url, {"images": "show"}).content.decode()
    assert 'src="https://tracker.example/open.gif?id=42"' in shown and "remote images hidden" not in shown
    # and the stored message stays as received
    assert Message.objects.get(ticket=ticket).rich_text_html == HTML_WITH_PIXEL
