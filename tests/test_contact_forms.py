"""Contact forms: `/v1/contactForms` (the generic resource tests and the form's own checks), and the public page
`/forms/<ID>`: a post becomes a ticket (source `form`) through the inbound service, bots and floods store
nothing, wrong answers come back with their errors, blocked and trusted senders count, and the acknowledgement
reaches a real SMTP server without the customer's files."""

import re
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from accounts.models import Attachment
from templates_app import contact_form_posts
from templates_app.api.contact_forms import ContactFormViewSet
from templates_app.models import BlockedSender, ContactForm, InboundMessage, OutboundMessage, TrustedSender
from tests.factories import CustomFieldFactory, TeamFactory, TicketFactory
from tests.resource_tests import Resource, ResourceTests
from tests.route_objects import _contact_form_pk
from tickets.models import Message, Ticket, TicketEvent
from tickets.reports.models import TicketMetrics


class TestContactFormResource(ResourceTests):
    resource = Resource(
        viewset=ContactFormViewSet,
        make=_contact_form_pk,
        create={
            "name": "Support",
            "fields": [{"key": "phone", "label": "Phone", "type": "text", "required": False}],
        },
        update={"name": "Sales", "active": False},
        invalid=[
            ({}, "name"),
            ({"name": ""}, "name"),
            ({"name": "x", "fields": [{"key": "email", "label": "E", "type": "text"}]}, "fields[0].key"),
            ({"name": "x", "fields": [{"key": "a", "label": "A", "type": "select"}]}, "fields"),
            (
                {"name": "x", "fields": [{"key": "a", "label": "A", "type": "customField"}]},
                "fields[0].customFieldKey",
            ),
            ({"name": "x", "teamID": "00000000-0000-0000-0000-000000000000"}, "teamID"),
            ({"name": "x", "publicURL": "https://evil.example"}, "publicURL"),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="Support",
        create_changes={"name": {"before": None, "after": "Support"}},
        update_changes={"name": {"before": "Support", "after": "Sales"}},
        publishes=True,
    )


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


def test_a_custom_field_question_names_an_active_field_of_the_forms_team(owner):
    # given an active field, a deactivated one, and one of another team
    CustomFieldFactory(license=owner.license, api_key="orderNumber")
    CustomFieldFactory(license=owner.license, api_key="old", status="deactivated")
    CustomFieldFactory(license=owner.license, api_key="sales", teams=[TeamFactory(license=owner.license)])

    def post(key):
        question = {"key": "q", "label": "Q", "type": "customField", "customFieldKey": key}
        return owner.client.post("/v1/contactForms", {"name": "F", "fields": [question]}, format="json")

    # then only the first is accepted
    created = post("orderNumber")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["fields"] == [
        {"key": "q", "label": "Q", "type": "customField", "required": False, "customFieldKey": "orderNumber"}
    ]
    assert body["publicURL"].endswith(f"/forms/{body['ID']}") and body["teamID"] is None
    assert f'src="{body["publicURL"]}/embed.js"' in body["embedCode"]
    for key in ("old", "sales", "nope"):
        refused = post(key)
        assert refused.status_code == 400 and "fields[0].customFieldKey" in refused.json()["details"], key


# --- the public page ------------------------------------------------------------------------------------------


def _form(license, **kwargs) -> ContactForm:
    from templates_app.contact_forms import contact_form_create

    return contact_form_create(license=license, name=kwargs.pop("name", "Contact us"), **kwargs)


def _answers(form, **overrides) -> dict:
    data = {
        "name": "Jo Customer",
        "email": "jo@customer.example",
        "subject": "My order",
        "message": "Where is it?",
        "formToken": contact_form_posts.form_token(form, now=time.time() - 10),
        "website": "",
    }
    return {**data, **overrides}


def _post(form, data, *, client=None, **extra):
    return (client or Client()).post(f"/forms/{form.pk}", data, **extra)


def test_the_page_is_an_accessible_form_without_javascript(license):
    form = _form(license, fields=[{"key": "phone", "label": "Phone", "type": "text", "required": True}])
    page = Client().get(f"/forms/{form.pk}")
    assert page.status_code == 200
    html = page.content.decode()
    for key in ("name", "email", "subject", "message", "phone", "attachments"):
        assert f'<label for="f-{key}">' in html and f'id="f-{key}"' in html, key
    assert 'name="formToken"' in html and 'name="website"' in html and "<script" not in html
    assert "X-Frame-Options" not in page.headers  # made to be embedded


def test_an_unknown_or_inactive_form_is_a_404_page(license):
    inactive = _form(license, active=False)
    assert Client().get(f"/forms/{inactive.pk}").status_code == 404
    assert Client().get("/forms/00000000-0000-0000-0000-000000000000").status_code == 404
    assert _post(inactive, _answers(inactive)).status_code == 404
    assert Client().get(f"/forms/{inactive.pk}/embed.js").status_code == 404
    assert Ticket.objects.count() == 0


def test_the_embed_script_inserts_the_page_as_an_iframe(license):
    form = _form(license, name='Help </script><b>"me"')
    script = Client().get(f"/forms/{form.pk}/embed.js")
    assert script.status_code == 200 and script["Content-Type"].startswith("text/javascript")
    body = script.content.decode()
    assert 'createElement("iframe")' in body and f'/forms/{form.pk}"' in body
    assert "</script>" not in body


def test_a_post_is_a_ticket_from_the_form_with_its_answers(license):
    # given a form of a team with a text question and a custom-field question
    team = TeamFactory(license=license)
    CustomFieldFactory(license=license, api_key="orderNumber")
    form = _form(
        license,
        team=team,
        fields=[
            {"key": "phone", "label": "Phone", "type": "text", "required": False},
            {"key": "order", "label": "Order", "type": "customField", "customFieldKey": "orderNumber"},
        ],
    )
    # when a customer posts it
    response = _post(form, _answers(form, phone="+33 1 23", order="A-17"), REMOTE_ADDR="203.0.113.9")
    # then they see the thanks, and the ticket is there, from the form, in the team, with the answers
    assert response.status_code == 200 and "we received your message" in response.content.decode()
    ticket = Ticket.objects.get()
    assert (ticket.subject, ticket.requester_email, ticket.silo) == (
        "My order",
        "jo@customer.example",
        "tickets",
    )
    assert [t.pk for t in ticket.teams.all()] == [team.pk]
    assert ticket.custom_fields == {"orderNumber": "A-17"}
    assert (
        TicketEvent.objects.filter(ticket=ticket).values_list("source_type", flat=True).distinct().get()
        == "form"
    )
    assert (
        TicketMetrics.objects.get(ticket=ticket).source == "form"
    )  # the sources report counts it as a form's
    text = Message.objects.get(ticket=ticket).text
    assert text.startswith("Where is it?") and "Phone: +33 1 23" in text
    inbound = InboundMessage.objects.get()
    assert inbound.ticket_id == ticket.pk and b"X-Originating-IP: [203.0.113.9]" in inbound.raw.read()
    assert OutboundMessage.objects.filter(kind="acknowledgement", to="jo@customer.example").count() == 1


def test_line_breaks_cannot_add_headers_to_the_mail(license):
    form = _form(license)
    _post(form, _answers(form, name="Jo\r\nBcc: victim@example.com", subject="Hi\nX-Spam-Flag: NO"))
    raw = InboundMessage.objects.get().raw.read()
    assert b"\nBcc:" not in raw and b"\nX-Spam-Flag: NO" not in raw
    assert Ticket.objects.get().subject == "Hi X-Spam-Flag: NO"


def test_a_form_never_writes_into_an_existing_ticket(license):
    # given a customer's ticket (anyone may type their address and its number into the form)
    ticket = TicketFactory(license=license, requester_email="jo@customer.example")
    form = _form(license)
    _post(form, _answers(form, subject=f"Re: [#{ticket.short_id}] anything"))
    assert Ticket.objects.count() == 2 and Message.objects.filter(ticket=ticket).count() <= 1


@pytest.mark.parametrize(
    "bot",
    [
        {"website": "http://spam.example"},  # the honeypot
        {"formToken": "forged"},
        {"formToken": None},
        {"fast": True},  # a token younger than CONTACT_FORM_MIN_SECONDS
        {"other_form": True},  # another form's token
    ],
)
def test_a_bot_is_thanked_and_nothing_is_stored(license, bot):
    form = _form(license)
    data = _answers(form)
    if bot.pop("fast", False):
        data["formToken"] = contact_form_posts.form_token(form)
    if bot.pop("other_form", False):
        data["formToken"] = contact_form_posts.form_token(_form(license), now=time.time() - 10)
    data.update(bot)
    data = {key: value for key, value in data.items() if value is not None}
    human = _post(form, _answers(form))
    Ticket.objects.all().delete()
    # when a bot posts
    response = _post(form, data)
    # then it gets the same page a person gets, and nothing is stored
    assert response.status_code == 200
    assert _strip_token(response.content) == _strip_token(human.content)
    assert (Ticket.objects.count(), InboundMessage.objects.count() - 1) == (0, 0)
    json_answer = _post(form, data, HTTP_ACCEPT="application/json")
    assert json_answer.status_code == 200 and json_answer.json() == {"status": "received"}
    assert Ticket.objects.count() == 0


def _strip_token(content: bytes) -> bytes:
    return re.sub(rb'value="[^"]*"', b"", content)


def test_an_expired_page_comes_back_with_the_answers_and_a_fresh_token(license, settings):
    form = _form(license)
    old = contact_form_posts.form_token(
        form, now=time.time() - settings.CONTACT_FORM_TOKEN_MAX_AGE_SECONDS - 5
    )
    response = _post(form, _answers(form, formToken=old, message="Keep me"))
    assert response.status_code == 400 and Ticket.objects.count() == 0
    html = response.content.decode()
    assert "open for too long" in html and ">Keep me</textarea>" in html


def test_missing_and_too_long_answers_show_the_form_again_with_linked_errors(license):
    form = _form(license, fields=[{"key": "phone", "label": "Phone", "type": "text", "required": True}])
    response = _post(form, _answers(form, email="not an address", subject="", message="x" * 20_001))
    assert response.status_code == 400 and Ticket.objects.count() == 0
    html = response.content.decode()
    for key in ("email", "subject", "message", "phone"):
        assert f'aria-describedby="e-{key}"' in html and f'id="e-{key}"' in html, key
    assert 'value="Jo Customer"' in html  # what was right is kept
    assert 'aria-describedby="e-name"' not in html


def test_a_json_post_gets_the_contracts_error_shape(license):
    form = _form(license)
    response = _post(
        form, {**_answers(form), "email": ""}, content_type="application/json", HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "The form has errors.",
        "code": "invalid",
        "details": {"email": ["Email is required."]},
    }
    ok = _post(form, _answers(form), content_type="application/json", HTTP_ACCEPT="application/json")
    assert ok.status_code == 200 and ok.json() == {"status": "received"} and Ticket.objects.count() == 1


def test_attachments_are_kept_and_bounded(license, settings):
    settings.CONTACT_FORM_MAX_FILES = 2
    settings.CONTACT_FORM_MAX_BYTES = 1000
    form = _form(license)

    def files(n, size=10):
        return [SimpleUploadedFile(f"f{i}.txt", b"x" * size, content_type="text/plain") for i in range(n)]

    too_many = _post(form, {**_answers(form), "attachments": files(3)})
    too_big = _post(form, {**_answers(form), "attachments": files(1, size=1001)})
    assert (too_many.status_code, too_big.status_code) == (400, 400) and Ticket.objects.count() == 0
    assert "At most 2 files" in too_many.content.decode()
    ok = _post(form, {**_answers(form), "attachments": files(2)})
    assert ok.status_code == 200
    assert sorted(Attachment.objects.filter(license=license).values_list("name", flat=True)) == [
        "f0.txt",
        "f1.txt",
    ]


def test_posts_are_limited_per_ip_and_per_form(license, settings):
    settings.CONTACT_FORM_POSTS_PER_IP = 2
    settings.CONTACT_FORM_POSTS_PER_FORM = 3
    form = _form(license)
    # per IP: the third post of one address is refused, another address still posts
    answers = [_post(form, _answers(form), REMOTE_ADDR="198.51.100.1").status_code for _ in range(3)]
    assert answers == [200, 200, 429]
    assert _post(form, _answers(form), REMOTE_ADDR="198.51.100.2").status_code == 200
    # per form: its fourth post is refused whatever the address; another form is not
    limited = _post(form, _answers(form), REMOTE_ADDR="198.51.100.3", HTTP_ACCEPT="application/json")
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert limited.json()["code"] == "rate_limit_exceeded"
    assert Ticket.objects.count() == 3
    other = _form(license)
    assert _post(other, _answers(other), REMOTE_ADDR="198.51.100.4").status_code == 200


def test_a_blocked_sender_goes_to_spam_without_acknowledgement(license):
    BlockedSender.objects.create(license=license, email="@customer.example")
    form = _form(license)
    assert _post(form, _answers(form)).status_code == 200  # the customer cannot tell
    assert Ticket.objects.get().silo == "spam"
    assert not OutboundMessage.objects.filter(kind="acknowledgement").exists()


def test_a_message_full_of_links_is_spam_unless_the_sender_is_trusted(license, settings):
    settings.CONTACT_FORM_SPAM_LINKS = 3
    form = _form(license)
    links = " ".join(f"https://cheap{i}.example" for i in range(4))
    _post(form, _answers(form, message=links))
    assert Ticket.objects.get().silo == "spam"
    TrustedSender.objects.create(license=license, email="jo@customer.example")
    _post(form, _answers(form, message=links))
    assert Ticket.objects.order_by("-number").first().silo == "tickets"


def test_the_acknowledgement_reaches_smtp_without_the_customers_files(
    license, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    form = _form(license)
    upload = SimpleUploadedFile("invoice.pdf", b"%PDF-1.4 secret", content_type="application/pdf")
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(form, {**_answers(form), "attachments": [upload]}).status_code == 200
    ticket = Ticket.objects.get()
    assert Attachment.objects.filter(license=license, name="invoice.pdf").exists()
    [(recipients, message)] = smtp_server.messages
    assert recipients == ["jo@customer.example"]
    assert f"#{ticket.short_id}" in message.get_body(("plain",)).get_content()
    assert not list(message.iter_attachments()) and b"secret" not in message.as_bytes()


def test_a_custom_field_refused_by_the_ticket_write_shows_under_its_question(license, monkeypatch):
    # given a custom field that the ticket write refuses (changed between the answers' check and the write)
    from helpdesk.errors import field_error
    from tickets import services as ticket_services

    CustomFieldFactory(license=license, api_key="orderNumber")
    question = {"key": "order", "label": "Order", "type": "customField", "customFieldKey": "orderNumber"}
    form = _form(license, fields=[question])

    def refuse(*args, **kwargs):
        raise field_error("customFields.orderNumber", "This custom field is deactivated.")

    monkeypatch.setattr(ticket_services, "_check_custom_fields", refuse)
    # when posted, then the form comes back with the error under the question, nothing stored
    response = _post(form, _answers(form, order="A-1"))
    assert response.status_code == 400 and 'id="e-order"' in response.content.decode()
    assert (Ticket.objects.count(), InboundMessage.objects.count()) == (0, 0)


def test_the_admin_writes_a_form_through_the_service_and_shows_its_embed_code(superuser, license):
    from audit.models import AuditEntry

    add = "/admin/templates_app/contactform/add/"
    bad = {"license": license.pk, "name": "Web", "fields": '[{"key": "email", "label": "E", "type": "text"}]'}
    refused = superuser.post(add, {**bad, "active": "on"})
    assert (
        refused.status_code == 200 and not ContactForm.objects.exists()
    )  # refused by the service, on the form
    created = superuser.post(add, {**bad, "fields": "[]", "active": "on"})
    assert created.status_code == 302, created.context["adminform"].form.errors
    form = ContactForm.objects.get(license=license)
    assert (form.name, form.active, form.fields) == ("Web", True, [])
    assert AuditEntry.objects.filter(target="contactForms", action="create").count() == 1
    page = superuser.get(f"/admin/templates_app/contactform/{form.pk}/change/").content.decode()
    assert f"/forms/{form.pk}/embed.js" in page and f"/forms/{form.pk}" in page
