"""Webhooks CRUD (issue 18): owners only, the secret shown once, every contract event type, URLs that would
reach the host's network refused, writes audited under `webhooks`."""

import socket

import pytest

from audit.models import AuditEntry
from tests.resource_tests import Resource, ResourceTests
from tests.route_objects import _webhook_pk
from tickets.webhooks.api import WebhookViewSet
from tickets.webhooks.models import EVENT_TYPES, Webhook

CONTRACT_EVENT_TYPES = {
    "tickets.create", "tickets.update", "tickets.statusChange", "tickets.events.status",
    "tickets.events.priority", "tickets.events.message", "tickets.events.tags", "tickets.events.followers",
    "tickets.events.assignment", "agents.create", "agents.update", "agents.delete", "teams.create",
    "teams.update", "teams.delete", "subscriptions.create", "subscriptions.update", "subscriptions.delete",
}  # fmt: skip
# Ours, beyond the contract's list: a rule's firing (issue 31: "reaches webhooks like any event").
OUR_EVENT_TYPES = {"tickets.events.rule", "tickets.events.sla"}
PUBLIC = "93.184.215.14"


@pytest.fixture
def public_dns(monkeypatch):
    """Every name resolves to one public address (no network in tests); IP literals resolve to themselves."""
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host[0].isdigit() or ":" in host:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, port or 0))]

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def _create(persona, **body):
    body = {
        "name": "CRM sync",
        "url": "https://hooks.example.com/helpdesk",
        "eventType": "tickets.create",
    } | body
    return persona.client.post("/v1/webhooks", body, format="json")


def test_every_event_type_of_the_contract_can_be_subscribed(owner, public_dns):
    assert set(EVENT_TYPES) == CONTRACT_EVENT_TYPES | OUR_EVENT_TYPES
    for event_type in sorted(CONTRACT_EVENT_TYPES | OUR_EVENT_TYPES):
        response = _create(owner, eventType=event_type)
        assert response.status_code == 201, (event_type, response.content)
    assert _create(owner, eventType="tickets.deleted").json()["details"] == {
        "eventType": ['"tickets.deleted" is not a valid choice.']
    }


def test_the_secret_is_generated_and_shown_once(owner, public_dns):
    # when the owner creates a webhook without a secret
    response = _create(owner)
    # then the response shows the generated secret, and the webhook's shape
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 30
    assert {k: created[k] for k in ("name", "url", "eventType", "active", "status", "licenseID")} == {
        "name": "CRM sync",
        "url": "https://hooks.example.com/helpdesk",
        "eventType": "tickets.create",
        "active": True,
        "status": "active",
        "licenseID": owner.license.pk,
    }
    assert set(created) >= {"ID", "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy"}
    assert Webhook.objects.get().secret == created["secret"]
    # and never again: not in the list, the detail or a PATCH response
    listed = owner.client.get("/v1/webhooks").json()
    assert [hook["ID"] for hook in listed] == [created["ID"]] and "secret" not in listed[0]
    assert "secret" not in owner.client.get(f"/v1/webhooks/{created['ID']}").json()
    patched = owner.client.patch(f"/v1/webhooks/{created['ID']}", {"secret": "s" * 32}, format="json")
    assert patched.status_code == 200 and "secret" not in patched.json()
    assert Webhook.objects.get().secret == "s" * 32
    # a chosen secret is kept; a short one is refused
    assert _create(owner, secret="my-own-secret-123").json()["secret"] == "my-own-secret-123"
    short = _create(owner, secret="short")
    assert short.status_code == 400 and "secret" in short.json()["details"]


def test_update_switch_off_and_delete(owner, public_dns):
    hook = _create(owner).json()
    response = owner.client.patch(
        f"/v1/webhooks/{hook['ID']}",
        {
            "name": "Renamed",
            "active": False,
            "eventType": "teams.update",
            "url": "https://other.example.com/x",
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    assert {k: response.json()[k] for k in ("name", "active", "eventType", "url")} == {
        "name": "Renamed", "active": False, "eventType": "teams.update", "url": "https://other.example.com/x",
    }  # fmt: skip
    unknown = owner.client.patch(f"/v1/webhooks/{hook['ID']}", {"colour": "red"}, format="json")
    assert unknown.status_code == 400 and unknown.json()["details"] == {"colour": ["Unknown field."]}
    assert owner.client.delete(f"/v1/webhooks/{hook['ID']}").status_code == 204
    assert owner.client.get(f"/v1/webhooks/{hook['ID']}").status_code == 404


@pytest.mark.parametrize("role", ["normal", "viewer"])
def test_only_owners_see_or_manage_webhooks(role, personas, owner, public_dns):
    hook = _create(owner).json()
    client = personas[role].client
    for response in (
        client.get("/v1/webhooks"),
        client.get(f"/v1/webhooks/{hook['ID']}"),
        client.get(f"/v1/webhooks/{hook['ID']}/deliveries"),
        _create(personas[role]),
        client.patch(f"/v1/webhooks/{hook['ID']}", {"name": "x"}, format="json"),
        client.delete(f"/v1/webhooks/{hook['ID']}"),
    ):
        assert response.status_code == 403, response.content
        assert response.json()["code"] == "permission_denied"
    assert Webhook.objects.get().name == "CRM sync"


def test_an_outsider_sees_none_of_them(owner, outsider, public_dns):
    hook = _create(owner).json()
    assert outsider.client.get("/v1/webhooks").json() == []
    assert outsider.client.get(f"/v1/webhooks/{hook['ID']}").status_code == 404
    assert outsider.client.delete(f"/v1/webhooks/{hook['ID']}").status_code == 404
    assert Webhook.objects.count() == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://172.16.5.4/hook",
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://[::1]/hook",
        "http://[fe80::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://224.0.0.1/hook",
        "http://100.64.0.1/hook",
        "http://240.0.0.1/hook",
        # IPv6 forms that carry a private IPv4 address to a relay or translator (issue 36)
        "http://[2002:7f00:1::1]/hook",  # 6to4 of 127.0.0.1
        "http://[2002:a00:1::1]/hook",  # 6to4 of 10.0.0.1
        "http://[2002:a9fe:a9fe::1]/hook",  # 6to4 of the cloud metadata address
        "http://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
        "http://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of 169.254.169.254
        "http://[::ffff:a00:1]/hook",  # IPv4-mapped 10.0.0.1
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",  # Teredo, client 127.0.0.1
    ],
)
def test_urls_into_the_hosts_network_are_refused(owner, settings, url):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    response = _create(owner, url=url)
    assert response.status_code == 400, response.content
    assert list(response.json()["details"]) == ["url"]
    assert Webhook.objects.count() == 0


def test_a_name_resolving_to_a_private_address_is_refused_at_create_and_update(owner, settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    answers = {"hooks.example.com": PUBLIC, "internal.example.com": "10.0.0.7"}
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, port, *a, **k: [(socket.AF_INET, 1, 6, "", (answers[host], port))]
    )
    refused = _create(owner, url="https://internal.example.com/hook")
    assert refused.status_code == 400
    assert "10.0.0.7" in refused.json()["details"]["url"][0]
    hook = _create(owner).json()
    patched = owner.client.patch(
        f"/v1/webhooks/{hook['ID']}", {"url": "https://internal.example.com/hook"}, format="json"
    )
    assert patched.status_code == 400 and list(patched.json()["details"]) == ["url"]
    assert Webhook.objects.get().url == "https://hooks.example.com/helpdesk"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://hooks.example.com/x",
        "file:///etc/passwd",
        "hooks.example.com",
        "https://user:pw@h.example.com/",
    ],
)
def test_only_http_and_https_urls(owner, public_dns, url):
    response = _create(owner, url=url)
    assert response.status_code == 400 and list(response.json()["details"]) == ["url"]


@pytest.mark.parametrize("char", ["\r\n", "\n", "\r", "\t", "\x00", "\x7f", "\x85"])
def test_a_url_with_a_control_character_is_refused_naming_url(owner, public_dns, char):
    # urlsplit() drops CR, LF and tab silently: the URL would be stored with them and sent without
    response = _create(owner, url=f"https://hooks.example.com/a{char}X-Injected: 1")
    assert response.status_code == 400, response.content
    assert list(response.json()["details"]) == ["url"]
    hook = _create(owner).json()
    patched = owner.client.patch(
        f"/v1/webhooks/{hook['ID']}", {"url": f"https://h.example.com/{char}x"}, format="json"
    )
    assert patched.status_code == 400 and list(patched.json()["details"]) == ["url"]
    assert Webhook.objects.get().url == "https://hooks.example.com/helpdesk"


def test_a_6to4_address_is_refused_at_delivery_too(settings, monkeypatch):
    # the guard runs before every attempt: a name that resolves to a 6to4 form of loopback is not called
    from tickets.webhooks import guard

    settings.WEBHOOKS_ALLOW_PRIVATE = False
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET6, 1, 6, "", ("2002:7f00:1::1", port, 0, 0))],
    )
    with pytest.raises(guard.UnsafeURL, match="2002:7f00:1::1"):
        guard.resolve("https://hooks.example.com/hook")
    with pytest.raises(guard.UnsafeURL, match="control character"):
        guard.resolve("https://hooks.example.com/\r\nHost: evil")


def test_a_6to4_or_nat64_form_of_a_public_address_is_allowed(owner, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    assert _create(owner, url="http://[2002:808:808::1]/hook").status_code == 201  # 6to4 of 8.8.8.8


def test_allow_private_lets_on_premise_receivers_in(owner, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    assert _create(owner, url="http://10.1.2.3/hook").status_code == 201


def test_writes_are_audited_under_webhooks_with_the_secret_redacted(owner, public_dns):
    hook = _create(owner).json()
    owner.client.patch(f"/v1/webhooks/{hook['ID']}", {"secret": "n" * 20}, format="json")
    owner.client.delete(f"/v1/webhooks/{hook['ID']}")
    entries = list(AuditEntry.objects.filter(target="webhooks").order_by("seq"))
    assert [(e.action, e.object_id) for e in entries] == [
        (a, hook["ID"]) for a in ("create", "update", "delete")
    ]
    assert entries[0].changes["url"] == {"before": None, "after": "https://hooks.example.com/helpdesk"}
    assert entries[1].changes == {"secret": {"before": "<redacted>", "after": "<redacted>"}}
    assert hook["secret"] not in str([e.changes for e in entries])


class TestWebhookResource(ResourceTests):
    resource = Resource(
        viewset=WebhookViewSet,
        make=_webhook_pk,
        create={
            "name": "CRM sync",
            "url": "https://hooks.example.com/helpdesk",
            "eventType": "tickets.create",
        },
        update={"name": "CRM", "eventType": "agents.update", "active": False},
        invalid=[
            ({"name": "x", "url": "https://hooks.example.com/"}, "eventType"),
            ({"name": "x", "url": "http://127.0.0.1/", "eventType": "tickets.create"}, "url"),
            ({"name": "x", "url": "https://a.example/", "eventType": "tickets.nope"}, "eventType"),
            (
                {"name": "x", "url": "https://a.example/", "eventType": "tickets.create", "secret": "short"},
                "secret",
            ),
        ],
        readers={"owner"},
        writers={"owner"},
        entity_name="CRM sync (tickets.create)",
        create_changes={"url": {"before": None, "after": "https://hooks.example.com/helpdesk"}},
        update_changes={
            "name": {"before": "CRM sync", "after": "CRM"},
            "eventType": {"before": "tickets.create", "after": "agents.update"},
            "active": {"before": True, "after": False},
        },
        fixtures=("public_dns",),
    )
