"""Helpers for the admin tests: signed-in Django test clients, and a form's current values as POST data."""

from __future__ import annotations

from django.test import Client

from accounts.models import Account, Agent

UA = "admin-browser/2.0"


def signed_in(account: Account) -> Client:
    client = Client(HTTP_USER_AGENT=UA)
    client.force_login(account)
    client.account = account
    return client


def superuser_client(email: str = "root@example.com") -> Client:
    return signed_in(Account.objects.create_superuser(email=email, password="x"))


def staff(agent: Agent) -> Client:
    """The agent's account given staff access (the admin), signed in."""
    account = agent.account
    account.is_staff = True
    account.save(update_fields=["is_staff"])
    return signed_in(account)


def form_data(response) -> dict:
    """The POST data a browser would send for the first admin form on `response`'s page, unchanged."""
    form = response.context["adminform"].form
    data: dict = {}
    for name in form.fields:
        value = form[name].value()
        if value is None or value is False:
            continue
        if value is True:
            data[name] = "on"
        elif isinstance(value, list | tuple):
            data[name] = [str(v) for v in value]
        else:
            data[name] = str(value)
    for formset in response.context.get("inline_admin_formsets", []):
        management = formset.formset.management_form
        for name in management.fields:
            data[f"{management.prefix}-{name}"] = management[name].value()
    return data


def error_text(response) -> str:
    """The form's errors (field and non-field) as one string."""
    form = response.context["adminform"].form
    return " ".join(str(message) for messages in form.errors.values() for message in messages)
