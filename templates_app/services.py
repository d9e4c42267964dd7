"""Writes of e-mail templates, and the e-mails that the help desk sends on its own (test messages)."""

from __future__ import annotations

import uuid

from accounts.models import License
from accounts.services import stamp_create, stamp_update, transaction_bind
from helpdesk.errors import Conflict
from helpdesk.transactions import unit_of_work
from templates_app import mail
from templates_app.models import TYPE_HTML, TYPE_VISUAL, OutboundMessage, Template
from templates_app.rendering import render

DEFAULT_TEMPLATE_NAME = "Default"
DEFAULT_TEMPLATE_TEXT = "{{message.text}}\n\n{{agent.name}}\n{{agent.signature}}\n\n{{license.companyName}}"
DEFAULT_APPEARANCE = {
    "backgroundColor": {"type": "color", "value": None},
    "contentBackgroundColor": {"type": "color", "value": None},
    "textColor": {"type": "color", "value": None},
    "linkColor": {"type": "color", "value": None},
    "footerTextColor": {"type": "color", "value": None},
}


def _content(content: dict) -> dict:
    return {
        "text": content.get("text", ""),
        "html": content.get("html", ""),
        "appearance": dict(content.get("appearance") or {}),
    }


def _bind_transaction(*, template: Template, transaction_id) -> None:
    """The transaction's files become the template's attachments (its logo)."""
    upload = transaction_bind(
        license=template.license, transaction_id=transaction_id, bound_type="template", bound_id=template.pk
    )
    template.attachments.set(upload.attachments.all())


@unit_of_work
def template_create(
    *, license: License, name: str, content: dict, type: str = TYPE_HTML, transaction_id=None
) -> Template:
    template = Template(license=license, name=name, content=_content(content), type=type)
    stamp_create(template)
    template.save()
    if transaction_id is not None:
        _bind_transaction(template=template, transaction_id=transaction_id)
    return template


@unit_of_work
def template_update(*, template: Template, name=None, content=None, transaction_id=None) -> Template:
    """PATCH: `content`, when given, replaces the whole content (text, html, appearance)."""
    template = Template.objects.select_for_update().get(pk=template.pk)
    if name is not None:
        template.name = name
    if content is not None:
        template.content = _content(content)
    stamp_update(template)
    template.save()
    if transaction_id is not None:
        _bind_transaction(template=template, transaction_id=transaction_id)
    return template


@unit_of_work
def template_delete(*, template: Template) -> None:
    license = License.objects.select_for_update(no_key=True).get(pk=template.license_id)
    if license.default_template_id == template.pk:
        raise Conflict(
            "The default template cannot be deleted; make another template the default first.",
            code="default_template",
        )
    template.delete()


def template_create_default(*, license: License) -> Template:
    """The template every new license starts with (visual, default colors)."""
    return template_create(
        license=license,
        name=DEFAULT_TEMPLATE_NAME,
        type=TYPE_VISUAL,
        content={"text": DEFAULT_TEMPLATE_TEXT, "html": "", "appearance": DEFAULT_APPEARANCE},
    )


def on_license_created(sender, *, license: License, **kwargs) -> None:
    """Receiver of accounts.signals.license_created: a new license starts with its default template."""
    license.default_template = template_create_default(license=license)
    license.save(update_fields=["default_template"])


@unit_of_work
def template_send_test(
    *,
    license: License,
    agent,
    type: str,
    content: dict,
    recipients: list[str],
    request_key: str | None = None,
) -> list[OutboundMessage]:
    """Render with sample data and queue one message per recipient; the same `request_key` sends once."""
    rendered = render(
        type=type,
        content=_content(content),
        context=mail.sample_context(license=license, agent=agent),
        powered_by=mail.powered_by(license),
    )
    company = (license.settings or {}).get("companyName") or "HelpDesk"
    request_key = request_key or uuid.uuid4().hex
    return [
        mail.message_queue(
            license=license,
            kind=OutboundMessage.KIND_TEST,
            key=f"test:{request_key}:{recipient}",
            to=recipient,
            subject=f"Test message from {company}",
            rendered=rendered,
        )
        for recipient in recipients
    ]
