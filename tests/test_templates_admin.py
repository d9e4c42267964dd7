"""The admin writes templates through the services: validated content, and the default stays."""

import json

import pytest

from accounts.models import Account
from templates_app.models import Template
from tests.factories import TemplateFactory


@pytest.fixture
def admin_client(client, db):
    admin = Account.objects.create_superuser(email="admin@example.com", password="x")
    client.force_login(admin)
    return client


def test_the_admin_creates_a_template_with_valid_content(admin_client, license):
    content = {"text": "Hi {{requester.name}}", "html": "", "appearance": {}}
    response = admin_client.post(
        "/admin/templates_app/template/add/",
        {"license": license.pk, "name": "From admin", "type": "visual", "content": json.dumps(content)},
    )
    assert response.status_code == 302
    template = Template.objects.get(name="From admin")
    # the admin acts as an administrator (audit), whose createdByType is "agent" (helpdesk.context.Actor)
    assert template.content == content and template.created_by_type == "agent"


def test_the_admin_refuses_unknown_placeholders(admin_client, license):
    content = {"text": "{{settings.SECRET_KEY}}"}
    response = admin_client.post(
        "/admin/templates_app/template/add/",
        {"license": license.pk, "name": "Bad", "type": "html", "content": json.dumps(content)},
    )
    assert response.status_code == 200
    assert b"Unknown placeholder" in response.content
    assert not Template.objects.filter(name="Bad").exists()


def test_the_admin_cannot_delete_the_default_template(admin_client, license):
    # when the admin bulk-deletes the default template
    default = license.default_template
    admin_client.post(
        "/admin/templates_app/template/",
        {"action": "delete_selected", "_selected_action": [default.pk], "post": "yes"},
    )
    # then it stays
    assert Template.objects.filter(pk=default.pk).exists()


def test_the_admin_deletes_another_template(admin_client, license):
    other = TemplateFactory(license=license)
    admin_client.post(
        "/admin/templates_app/template/",
        {"action": "delete_selected", "_selected_action": [other.pk], "post": "yes"},
    )
    assert not Template.objects.filter(pk=other.pk).exists()
