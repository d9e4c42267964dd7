"""Rating requests: a ticket solved the first time e-mails its requester once, with signed good/bad links to a
public page (choice pre-selected, comment, CSRF-protected submit) that records one rating per ticket, written
as a `rating` event and found by the `rating` filter."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client

from templates_app import mail, rating
from templates_app.models import OutboundMessage
from tests.factories import TicketFactory
from tickets.models import TicketEvent


@pytest.fixture
def ticket(license):
    return TicketFactory(
        license=license, subject="Lost parcel", requester={"email": "jane@customer.example", "name": "Jane"}
    )


def _patch(persona, ticket, callbacks, **body):
    with callbacks(execute=True):
        response = persona.client.patch(f"/v1/tickets/{ticket.pk}", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _rating_mails():
    """The rating requests, rendered as the worker renders them before it sends (issue 34)."""
    for row in OutboundMessage.objects.filter(kind="rating").exclude(to_render=None):
        mail.deliver(message_id=row.pk)
    return list(OutboundMessage.objects.filter(kind="rating"))


def _links(mail) -> dict:
    found = dict(re.findall(r"(Good|Bad): http://[^/\s]+(/ratings\?token=\S+)", mail.text))
    return {"good": found["Good"], "bad": found["Bad"]}


def _form(page) -> dict:
    fields = dict(re.findall(r'name="(csrfmiddlewaretoken|token)" value="([^"]+)"', page.content.decode()))
    return {name: unescape(value) for name, value in fields.items()}


@pytest.mark.django_db
def test_solving_sends_one_rating_request(owner, ticket, django_capture_on_commit_callbacks):
    doc = _patch(owner, ticket, django_capture_on_commit_callbacks, status="solved")
    assert doc["ratingRequeestSent"] is True
    [mail] = _rating_mails()
    assert mail.to == "jane@customer.example"
    assert f"[#{ticket.short_id}]" in mail.subject and mail.headers["Auto-Submitted"] == "auto-generated"
    assert set(_links(mail)) == {"good", "bad"}
    # reopened and solved again: no second request
    _patch(owner, ticket, django_capture_on_commit_callbacks, status="open")
    _patch(owner, ticket, django_capture_on_commit_callbacks, status="solved")
    assert len(_rating_mails()) == 1


@pytest.mark.django_db
def test_the_rating_request_replies_in_the_tickets_thread(owner, ticket, django_capture_on_commit_callbacks):
    _patch(owner, ticket, django_capture_on_commit_callbacks, message={"text": "Found it, on its way."})
    reply = OutboundMessage.objects.get(ticket=ticket, to="jane@customer.example", kind="reply")
    _patch(owner, ticket, django_capture_on_commit_callbacks, status="solved")
    [mail] = _rating_mails()
    assert mail.headers["In-Reply-To"] == f"<{reply.message_id}>"
    assert reply.message_id in mail.headers["References"] and mail.message_id != reply.message_id


@pytest.mark.django_db
def test_other_status_changes_send_no_request(owner, ticket, django_capture_on_commit_callbacks):
    doc = _patch(owner, ticket, django_capture_on_commit_callbacks, status="pending")
    assert doc["ratingRequeestSent"] is False and _rating_mails() == []


@pytest.mark.django_db
def test_the_link_opens_a_page_and_a_second_submit_changes_the_answer(
    owner, ticket, django_capture_on_commit_callbacks
):
    _patch(owner, ticket, django_capture_on_commit_callbacks, status="solved")
    links = _links(_rating_mails()[0])
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(links["good"])
    assert page.status_code == 200
    html = page.content.decode()
    assert 'value="good" checked' in html and 'value="bad">' in html and "Lost parcel" in html
    ticket.refresh_from_db()
    assert ticket.rating_score == ""  # GET changes nothing
    # POST without the page's CSRF token is refused
    assert browser.post("/ratings", {"token": _form(page)["token"], "score": "good"}).status_code == 403
    done = browser.post("/ratings", _form(page) | {"score": "good", "comment": "Quick and kind"})
    assert done.status_code == 200 and b"Thank you" in done.content
    ticket.refresh_from_db()
    assert (ticket.rating_score, ticket.rating_comment) == ("good", "Quick and kind")
    # the same submit again (a double click) writes nothing more
    browser.post("/ratings", _form(page) | {"score": "good", "comment": "Quick and kind"})
    assert TicketEvent.objects.filter(ticket=ticket, type="rating").count() == 1
    # the other link, used later: the answer changes, the ticket still has one rating
    page = browser.get(links["bad"])
    assert 'value="bad" checked' in page.content.decode()  # the link clicked is the choice shown
    assert "Quick and kind" in page.content.decode()  # with the comment given before
    browser.post("/ratings", _form(page) | {"score": "bad", "comment": "It broke again"})
    ticket.refresh_from_db()
    assert (ticket.rating_score, ticket.rating_comment) == ("bad", "It broke again")
    doc = owner.client.get(f"/v1/tickets/{ticket.pk}").json()
    assert doc["rating"]["score"] == "bad"
    event = TicketEvent.objects.filter(ticket=ticket, type="rating").order_by("created_at").last()
    assert event.author_type == "client" and event.payload["score"] == "bad"
    # given on the web page, not by e-mail: the event's source says so (the author still is the requester)
    assert (event.source_type, event.detailed_source) == ("web", "emailMessage")
    [shown] = [e for e in doc["events"] if e["ID"] == str(event.pk)]
    assert shown["source"] == {"type": "web", "detailedSource": "emailMessage"}

    # searchable with the rating filter
    def ids(score):
        return [t["ID"] for t in owner.client.get(f"/v1/tickets?status=solved&rating={score}").json()]

    assert ids("bad") == [str(ticket.pk)] and ids("good") == []


@pytest.mark.django_db
def test_a_forged_or_damaged_link_shows_an_error(ticket):
    browser = Client()
    forged = rating.token(ticket, "good")[:-2] + "xx"
    assert browser.get(f"/ratings?token={forged}").status_code == 404
    assert browser.post("/ratings", {"token": forged, "score": "good"}).status_code == 404
    ticket.refresh_from_db()
    assert ticket.rating_score == ""


@pytest.mark.django_db
def test_a_score_other_than_good_or_bad_is_refused(ticket):
    browser = Client()
    response = browser.post("/ratings", {"token": rating.token(ticket, "good"), "score": "great"})
    assert response.status_code == 400
    ticket.refresh_from_db()
    assert ticket.rating_score == ""
