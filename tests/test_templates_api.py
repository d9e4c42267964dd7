"""/v1/templates: list, create, get, update, delete, preview and test messages; roles and validation."""

import pytest

from accounts.models import Attachment, AttachmentTransaction
from templates_app.models import OutboundMessage, Template
from tests.factories import TemplateFactory
from tests.spec import FIELDS

CONTENT = {
    "text": "Hello {{requester.name}}\n\n{{message.text}}",
    "html": "<p>Hello {{requester.name}}</p>",
    "appearance": {"linkColor": {"type": "color", "value": "#336699"}},
}


def test_it_lists_the_templates_with_exactly_the_spec_fields(owner):
    # given the license's default template
    # when the owner lists templates
    response = owner.client.get("/v1/templates")
    # then each has exactly the spec's fields
    assert response.status_code == 200
    body = response.json()
    assert [t["ID"] for t in body] == [str(owner.license.default_template_id)]
    assert list(body[0]) == FIELDS["Template"]
    assert sorted(body[0]["content"]) == sorted(FIELDS["Template.content"])
    assert body[0]["type"] in FIELDS["enums"]["Template.type"]


def test_it_creates_a_template(owner):
    # when the owner creates a template
    response = owner.client.post(
        "/v1/templates", {"name": "Brand", "content": CONTENT, "type": "visual"}, format="json"
    )
    # then it is stored with the caller's stamps
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["name"] == "Brand" and body["type"] == "visual" and body["content"] == CONTENT
    assert body["licenseID"] == owner.license.pk
    assert body["createdBy"] == str(owner.agent.pk) and body["createdByType"] == "agent"
    assert body["attachments"] == []
    assert Template.objects.for_license(owner.license).filter(pk=body["ID"]).exists()


def test_content_defaults_html_and_appearance(owner):
    response = owner.client.post("/v1/templates", {"name": "T", "content": {"text": "x"}}, format="json")
    assert response.status_code == 201
    assert response.json()["content"] == {"text": "x", "html": "", "appearance": {}}
    assert response.json()["type"] == "html"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": CONTENT}, "name"),
        ({"name": "T"}, "content"),
        ({"name": "T", "content": "text"}, "content"),
        ({"name": "T", "content": {"html": "<p>x</p>"}}, "content"),
        ({"name": "T", "content": {"text": 5}}, "content"),
        ({"name": "T", "content": {"text": "x", "extra": 1}}, "content"),
        ({"name": "T", "content": {"text": "x", "appearance": []}}, "content"),
        (
            {"name": "T", "content": {"text": "x", "appearance": {"a": {"type": "font", "value": None}}}},
            "content",
        ),
        (
            {"name": "T", "content": {"text": "x", "appearance": {"a": {"type": "color", "value": "red"}}}},
            "content",
        ),
        (
            {
                "name": "T",
                "content": {"text": "x", "appearance": {"a": {"type": "color", "value": "#12345"}}},
            },
            "content",
        ),
        ({"name": "T", "content": {"text": "x", "appearance": {"a": {"type": "color"}}}}, "content"),
        (
            {"name": "T", "content": {"text": "x", "appearance": {"a b": {"type": "color", "value": None}}}},
            "content",
        ),
        ({"name": "T", "content": {"text": "{{ticket.secret}}"}}, "content"),
        ({"name": "T", "content": {"text": "", "html": "{{agent.password}}"}}, "content"),
        ({"name": "T", "content": CONTENT, "type": "mjml"}, "type"),
        ({"name": "T", "content": CONTENT, "transactionID": "nope"}, "transactionID"),
        ({"name": "T", "content": CONTENT, "licenseID": 1}, "licenseID"),
    ],
)
def test_it_rejects_invalid_template_bodies(owner, body, field):
    response = owner.client.post("/v1/templates", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["details"]


def test_an_unknown_placeholder_is_named_in_the_error(owner):
    response = owner.client.post(
        "/v1/templates", {"name": "T", "content": {"text": "{{foo.bar}}"}}, format="json"
    )
    assert response.json()["details"]["content"]["text"][0].startswith("Unknown placeholder(s) {{foo.bar}}")


def test_it_gets_and_updates_a_template(owner):
    # given a template
    template = TemplateFactory(license=owner.license)
    # when the owner renames it and replaces its content
    response = owner.client.patch(
        f"/v1/templates/{template.pk}", {"name": "Renamed", "content": {"text": "New"}}, format="json"
    )
    # then the whole content is replaced
    assert response.status_code == 200, response.json()
    assert response.json()["name"] == "Renamed"
    assert response.json()["content"] == {"text": "New", "html": "", "appearance": {}}
    assert owner.client.get(f"/v1/templates/{template.pk}").json()["name"] == "Renamed"


def test_the_type_is_chosen_at_creation(owner):
    template = TemplateFactory(license=owner.license)
    response = owner.client.patch(f"/v1/templates/{template.pk}", {"type": "visual"}, format="json")
    assert response.status_code == 400
    assert "type" in response.json()["details"]


def test_it_deletes_a_template(owner):
    template = TemplateFactory(license=owner.license)
    assert owner.client.delete(f"/v1/templates/{template.pk}").status_code == 204
    assert not Template.objects.filter(pk=template.pk).exists()


def test_the_default_template_cannot_be_deleted(owner):
    response = owner.client.delete(f"/v1/templates/{owner.license.default_template_id}")
    assert response.status_code == 409
    assert response.json()["code"] == "default_template"


def _upload(license):
    upload = AttachmentTransaction.objects.create(license=license)
    Attachment.objects.create(
        license=license, transaction=upload, file="attachments/logo.png", name="logo.png",
        content_type="image/png", size=3, sha256="0" * 64, token=f"tok-{upload.pk}", cid="logo",
    )  # fmt: skip
    return upload


def test_a_transaction_attaches_the_logo(owner):
    # given an upload transaction holding a logo
    upload = _upload(owner.license)
    # when a template is created with it
    response = owner.client.post(
        "/v1/templates", {"name": "T", "content": CONTENT, "transactionID": str(upload.pk)}, format="json"
    )
    # then the template's attachments are the transaction's files and the transaction is bound to it
    assert response.status_code == 201, response.json()
    [attachment] = response.json()["attachments"]
    assert list(attachment) == FIELDS["Attachment"]
    assert attachment["name"] == "logo.png" and attachment["cid"] == "logo"
    upload.refresh_from_db()
    assert (upload.bound_type, str(upload.bound_id)) == ("template", response.json()["ID"])


def test_a_transaction_of_another_license_is_a_400_naming_it(owner, other_license):
    upload = _upload(other_license)
    response = owner.client.post(
        "/v1/templates", {"name": "T", "content": CONTENT, "transactionID": str(upload.pk)}, format="json"
    )
    assert response.status_code == 400
    assert "transactionID" in response.json()["details"]
    assert not Template.objects.filter(name="T").exists()


def test_a_transaction_bound_to_another_object_is_a_409(owner):
    # given a transaction already used by one template
    upload = _upload(owner.license)
    first = TemplateFactory(license=owner.license)
    owner.client.patch(f"/v1/templates/{first.pk}", {"transactionID": str(upload.pk)}, format="json")
    second = TemplateFactory(license=owner.license)
    # when another template uses it
    response = owner.client.patch(
        f"/v1/templates/{second.pk}", {"transactionID": str(upload.pk)}, format="json"
    )
    # then it is a conflict
    assert response.status_code == 409
    assert response.json()["code"] == "transaction_bound"


def test_preview_renders_with_sample_data_and_the_callers_signature(agent):
    # given a normal agent with a signature
    agent.agent.signature_text = "Cheers, Sam"
    agent.agent.save()
    content = {
        "text": "Hi {{requester.name}}\n{{agent.signature}}",
        "html": "<b>{{ticket.subject}}</b><script>x</script>",
    }
    # when it previews an html template
    response = agent.client.post("/v1/templates/preview", {"content": content, "type": "html"}, format="json")
    # then it gets both parts, rendered synchronously and sanitized
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == {"text", "html"}
    assert body["text"].startswith("Hi Jane Doe\nCheers, Sam")
    assert body["html"].startswith("<b>Where is my order?</b>")
    assert "script" not in body["html"]


def test_preview_follows_the_powered_by_setting(owner):
    owner.license.settings["poweredByFooter"] = False
    owner.license.save()
    response = owner.client.post("/v1/templates/preview", {"content": {"text": "x"}}, format="json")
    assert "Powered by" not in response.json()["text"]


SEND = {"content": CONTENT, "type": "html"}


def test_send_test_message_is_acknowledged_and_queued_after_commit(owner, django_capture_on_commit_callbacks):
    # when the owner sends a test message to two recipients
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner.client.post(
            "/v1/templates/sendTestMessage",
            SEND | {"recipients": ["a@example.com", "B@Example.com"]},
            format="json",
        )
    # then the answer is a text acknowledgement and one message per recipient waits for the task
    assert response.status_code == 202
    assert response.json() == "Test message queued for 2 recipients."
    messages = OutboundMessage.objects.for_license(owner.license).order_by("to")
    assert [m.to for m in messages] == ["a@example.com", "b@example.com"]
    assert all(m.status == "pending" and "Jane Doe" in m.text for m in messages)
    assert len(callbacks) == 2


@pytest.mark.parametrize(
    "recipients",
    [
        [],
        "a@example.com",
        [f"r{i}@example.com" for i in range(11)],
        ["not-an-address"],
        ["a@example.com", "a@example.com"],
        ["a@example.com\nBcc: victim@example.com"],
        [5],
    ],
)
def test_send_test_message_validates_recipients(owner, recipients):
    response = owner.client.post(
        "/v1/templates/sendTestMessage", SEND | {"recipients": recipients}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert list(response.json()["details"]) == ["recipients"]
    assert not OutboundMessage.objects.exists()


def test_ten_recipients_are_allowed(owner):
    recipients = [f"r{i}@example.com" for i in range(10)]
    response = owner.client.post(
        "/v1/templates/sendTestMessage", SEND | {"recipients": recipients}, format="json"
    )
    assert response.status_code == 202
    assert OutboundMessage.objects.count() == 10


def test_a_repeated_request_with_the_same_idempotency_key_queues_once(owner):
    body = SEND | {"recipients": ["a@example.com"]}
    for _ in range(2):
        response = owner.client.post(
            "/v1/templates/sendTestMessage", body, format="json", HTTP_IDEMPOTENCY_KEY="k1"
        )
        assert response.status_code == 202
    assert OutboundMessage.objects.count() == 1


WRITES = [
    ("post", "/v1/templates", {"name": "T", "content": CONTENT}),
    ("patch", "/v1/templates/{pk}", {"name": "T2"}),
    ("delete", "/v1/templates/{pk}", None),
    ("post", "/v1/templates/sendTestMessage", SEND | {"recipients": ["a@example.com"]}),
]


@pytest.mark.parametrize(("role", "allowed"), [("owner", True), ("normal", False), ("viewer", False)])
@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_only_owners_write_templates_and_send_test_messages(personas, role, allowed, method, path, body):
    template = TemplateFactory(license=personas["owner"].license)
    response = getattr(personas[role].client, method)(path.format(pk=template.pk), body, format="json")
    assert (response.status_code < 300) is allowed, response.content
    if not allowed:
        assert response.status_code == 403


@pytest.mark.parametrize(("role", "status"), [("owner", 200), ("normal", 200), ("viewer", 403)])
def test_preview_is_for_owners_and_normal_agents(personas, role, status):
    response = personas[role].client.post("/v1/templates/preview", {"content": {"text": "x"}}, format="json")
    assert response.status_code == status


@pytest.mark.parametrize("role", ["owner", "normal", "viewer"])
def test_everyone_reads_templates(personas, role):
    template = TemplateFactory(license=personas["owner"].license)
    assert personas[role].client.get("/v1/templates").status_code == 200
    assert personas[role].client.get(f"/v1/templates/{template.pk}").status_code == 200


def test_an_outsider_sees_none_of_the_templates(owner, outsider):
    template = TemplateFactory(license=owner.license)
    ids = {t["ID"] for t in outsider.client.get("/v1/templates").json()}
    assert str(template.pk) not in ids and str(owner.license.default_template_id) not in ids
    assert outsider.client.get(f"/v1/templates/{template.pk}").status_code == 404


def test_listing_templates_takes_a_fixed_number_of_queries(owner, django_assert_max_num_queries):
    for _ in range(5):
        TemplateFactory(license=owner.license)
    with django_assert_max_num_queries(8):
        assert len(owner.client.get("/v1/templates").json()) == 6


def test_the_openapi_document_describes_templates(client, db):
    schema = client.get("/v1/openapi.json", HTTP_USER_AGENT="t").json()
    assert set(FIELDS["Template"]) <= set(schema["components"]["schemas"]["Template"]["properties"])
    for path in ("/v1/templates/preview", "/v1/templates/sendTestMessage", "/v1/invitations/accept"):
        assert "post" in schema["paths"][path]
    assert "post" in schema["paths"]["/v1/licenses/{licenseID}/forwardingInstructions"]
    assert "post" in schema["paths"]["/v1/agents/{agentID}/invite"]
