"""POST /v1/licenses/{licenseID}/forwardingInstructions: e-mails how to forward mail to the inbound address."""

import pytest
from django.core import mail as django_mail

from templates_app.forwarding import license_inbound_address
from templates_app.models import OutboundMessage


def _path(license):
    return f"/v1/licenses/{license.pk}/forwardingInstructions"


def test_it_emails_the_instructions_made_from_the_license_template(
    owner, eager_tasks, settings, django_capture_on_commit_callbacks
):
    # given the license's inbound domain
    settings.HELPDESK_INBOUND_DOMAIN = "mail.example.net"
    address = f"{owner.license.pk}@inbound.mail.example.net"
    # when the owner asks for the instructions
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(_path(owner.license), {"email": "It@Example.com"}, format="json")
    # then the answer is a confirmation string
    assert response.status_code == 200
    assert response.json() == "Forwarding instructions sent to it@example.com."
    # and one e-mail left with the inbound address in both parts, in the license's template
    [sent] = django_mail.outbox
    assert sent.to == ["it@example.com"]
    assert address in sent.body and "Gmail" in sent.body
    html, mimetype = sent.alternatives[0]
    assert mimetype == "text/html" and address in html
    assert "Acme" in sent.body  # {{license.companyName}} of the default template
    assert "Owner" in sent.body  # {{agent.name}}: the owner who asked
    assert OutboundMessage.objects.get().status == "sent"


def test_the_inbound_address_is_per_license(license, other_license, settings):
    settings.HELPDESK_INBOUND_DOMAIN = "example.org"
    assert license_inbound_address(license) == f"{license.pk}@inbound.example.org"
    assert license_inbound_address(license) != license_inbound_address(other_license)


def test_the_email_uses_a_changed_default_template(owner, eager_tasks, django_capture_on_commit_callbacks):
    # given the owner turned the default template into an html one
    template = owner.license.default_template
    template.type = "html"
    template.content = {
        "text": "T: {{message.text}}",
        "html": "<h1>Brand</h1><div>{{message.text}}</div>",
        "appearance": {},
    }
    template.save()
    with django_capture_on_commit_callbacks(execute=True):
        owner.client.post(_path(owner.license), {"email": "it@example.com"}, format="json")
    [sent] = django_mail.outbox
    assert sent.body.startswith("T: To receive your customers")
    assert sent.alternatives[0][0].startswith("<h1>Brand</h1><div>To receive")


@pytest.mark.parametrize(
    "body", [{}, {"email": "nope"}, {"email": ["a@example.com"]}, {"email": "a@example.com", "x": 1}]
)
def test_it_validates_the_email(owner, body):
    response = owner.client.post(_path(owner.license), body, format="json")
    assert response.status_code == 400
    assert not OutboundMessage.objects.exists()


@pytest.mark.parametrize(("role", "status"), [("owner", 200), ("normal", 403), ("viewer", 403)])
def test_only_owners_send_forwarding_instructions(personas, role, status):
    response = personas[role].client.post(
        _path(personas["owner"].license), {"email": "a@example.com"}, format="json"
    )
    assert response.status_code == status


def test_an_outsider_gets_404(license, outsider):
    response = outsider.client.post(_path(license), {"email": "a@example.com"}, format="json")
    assert response.status_code == 404
