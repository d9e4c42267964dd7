"""Full-text `query`: subject, message text, requester name and e-mail, shortID; stemming on PostgreSQL."""

import pytest

from tests.factories import TicketFactory
from tickets.models import Ticket


def found(persona, query, **params):
    response = persona.client.get("/v1/tickets", {"query": query, "pageSize": 100, **params})
    assert response.status_code == 200, response.content
    return sorted(t["subject"] for t in response.json())


@pytest.fixture
def corpus(owner):
    license = owner.license
    TicketFactory(license=license, subject="Invoice question", text="Where is my invoice for March?")
    TicketFactory(
        license=license, subject="Parcel", text="The parcel never arrived, the courier lost it.",
        requester={"email": "zoe.quinn@example.org", "name": "Zoe Quinn"},
    )  # fmt: skip
    TicketFactory(
        license=license,
        subject="Lieferung",
        text="Meine Lieferung ist nicht angekommen, bitte helfen Sie mir.",
    )
    TicketFactory(license=license, subject="Password", text="I cannot reset my password, the link expired.")


def test_it_finds_words_of_the_subject_and_the_messages(owner, corpus):
    assert found(owner, "invoice") == ["Invoice question"]
    assert found(owner, "courier") == ["Parcel"]
    assert found(owner, "password expired") == ["Password"]


def test_it_finds_the_requester_and_the_short_id(owner, corpus):
    assert found(owner, "Quinn") == ["Parcel"]
    assert found(owner, "zoe.quinn@example.org") == ["Parcel"]
    short_id = Ticket.objects.get(subject="Lieferung").short_id
    assert found(owner, short_id) == ["Lieferung"]


def test_all_words_are_required_and_minus_excludes(owner, corpus):
    assert found(owner, "parcel invoice") == []
    assert found(owner, "my -invoice") == ["Password"]


def test_a_reply_is_searchable_at_once(owner, corpus):
    ticket = Ticket.objects.get(subject="Password")
    owner.client.patch(
        f"/v1/tickets/{ticket.pk}", {"message": {"text": "Try the xylophone procedure."}}, format="json"
    )
    assert found(owner, "xylophone") == ["Password"]


def test_query_combines_with_other_filters(owner, corpus):
    ticket = Ticket.objects.get(subject="Invoice question")
    owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved"}, format="json")
    assert found(owner, "invoice") == []
    assert found(owner, "invoice", status="solved") == ["Invoice question"]


def test_an_outsider_finds_nothing(corpus, outsider):
    assert found(outsider, "invoice") == []


@pytest.mark.postgres
def test_stemming_follows_the_detected_language(owner, corpus):
    # English stemming: "arriving" finds "arrived"; German stemming: "Lieferungen" finds "Lieferung"
    assert found(owner, "arriving") == ["Parcel"]
    assert found(owner, "Lieferungen") == ["Lieferung"]
    assert found(owner, "passwords") == ["Password"]


@pytest.mark.postgres
def test_websearch_syntax(owner, corpus):
    assert found(owner, '"reset my password"') == ["Password"]
    assert found(owner, "invoice or courier") == ["Invoice question", "Parcel"]


@pytest.mark.postgres
def test_the_vector_is_written_in_the_same_transaction(owner):
    from django.db import connection

    ticket = TicketFactory(license=owner.license, subject="Quokka sighting", text="A quokka was seen.")
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_vector::text FROM tickets_ticket WHERE id = %s", [ticket.pk])
        vector = cursor.fetchone()[0]
    assert "'quokka'" in vector


@pytest.mark.postgres
def test_the_next_page_of_a_query_does_not_parse_it_again(owner, corpus, django_assert_num_queries):
    # given a query searched once (parsed into its tsquery, counted)
    first = owner.client.get("/v1/tickets", {"query": "Where invoices", "pageSize": 1})
    assert first.status_code == 200 and first["X-Total-Results"] == "1"
    # then the same words again cost what a search without them costs: the caller and the page
    with django_assert_num_queries(2):
        again = owner.client.get("/v1/tickets", {"query": "Where invoices", "pageSize": 1})
    assert [t["subject"] for t in again.json()] == ["Invoice question"]
