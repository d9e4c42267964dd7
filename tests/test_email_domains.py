"""E-mail domains: `/v1/emailDomains` (the generic resource tests), verification against a real DNS server on
loopback (tests/dns_helpers.py), and DKIM signatures of mail sent From an active domain, checked by dkimpy
against the key that server publishes."""

from __future__ import annotations

import datetime as dt

import dkim
import pytest
from django.utils import timezone

from accounts import services as accounts_services
from templates_app import domains
from templates_app.api.domains import EmailDomainViewSet
from templates_app.models import EmailDomain, ReplyAddress
from tests.factories import LicenseFactory, TicketFactory
from tests.resource_tests import Resource, ResourceTests
from tests.route_objects import _email_domain_pk

INVALID = [
    ({}, "name"),
    ({"name": "not a domain"}, "name"),
    ({"name": "jo@acme.example"}, "name"),
    ({"name": "https://acme.example"}, "name"),
    ({"name": "localhost"}, "name"),
    ({"name": "192.0.2.1"}, "name"),
    ({"name": "-bad.example"}, "name"),
    ({"name": "a" * 64 + ".example"}, "name"),
    ({"name": "acme.example", "privateKey": "x"}, "privateKey"),
]


class TestEmailDomainResource(ResourceTests):
    resource = Resource(
        viewset=EmailDomainViewSet,
        make=_email_domain_pk,
        create={"name": "acme.example"},
        update={"name": "mail.acme.example"},
        invalid=INVALID,
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="acme.example",
        create_changes={"name": {"before": None, "after": "acme.example"}},
        update_changes={"name": {"before": "acme.example", "after": "mail.acme.example"}},
        publishes=True,
    )


def _create(owner, name="acme.example"):
    response = owner.client.post("/v1/emailDomains", {"name": name}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _publish(dns_server, body, *, skip=()):
    for record in body["dns"]["txt"]:
        if not any(record["name"].startswith(prefix) for prefix in skip):
            dns_server.publish(record["name"], record["value"])


def _verify(owner, body):
    return owner.client.post(f"/v1/emailDomains/{body['ID']}/verify", format="json")


def test_a_new_domain_lists_its_records_and_never_shows_its_private_key(owner):
    body = _create(owner, " Acme.Example. ")
    assert body["name"] == "acme.example" and body["status"] == "new" and body["verifiedAt"] is None
    names = [r["name"] for r in body["dns"]["txt"]]
    domain = EmailDomain.objects.get(pk=body["ID"])
    assert names == [f"{domain.selector}._domainkey.acme.example", "acme.example", "_helpdesk.acme.example"]
    dkim_value, spf, token = (r["value"] for r in body["dns"]["txt"])
    assert dkim_value.startswith("v=DKIM1; k=rsa; p=MIIB")  # an RSA 2048 public key
    assert spf == "v=spf1 include:spf.helpdesk.localhost ~all" and token.startswith("helpdesk-verification=")
    assert body["dns"]["cname"] == []
    assert "PRIVATE" in domain.private_key
    for response in (
        owner.client.get(f"/v1/emailDomains/{body['ID']}"),
        owner.client.get("/v1/emailDomains"),
    ):
        assert "PRIVATE" not in response.content.decode() and "privateKey" not in response.content.decode()


def test_verification_activates_a_domain_whose_records_are_published(owner, dns_server):
    body = _create(owner)
    _publish(dns_server, body)
    response = _verify(owner, body)
    assert response.status_code == 200, response.content
    verified = response.json()
    assert verified["status"] == "active" and verified["verifiedAt"] is not None
    assert verified["lastCheck"]["missing"] == []
    assert {"_helpdesk.acme.example", "acme.example"} <= set(dns_server.zone.queries)


@pytest.mark.parametrize(
    "skip, missing",
    [
        (("hd",), "._domainkey.acme.example"),
        (("acme.example",), "acme.example"),
        (("_helpdesk",), "_helpdesk.acme.example"),
    ],
)
def test_a_missing_record_keeps_the_domain_pending_and_is_named(owner, dns_server, skip, missing):
    body = _create(owner)
    _publish(dns_server, body, skip=skip)
    verified = _verify(owner, body).json()
    assert verified["status"] == "pendingVerification" and verified["verifiedAt"] is None
    [named] = verified["lastCheck"]["missing"]
    assert named["name"].endswith(missing)


def test_the_records_are_read_over_udp_and_tcp_alike(owner, dns_server):
    from templates_app import dns

    body = _create(owner)
    _publish(dns_server, body)
    dkim_record = body["dns"]["txt"][0]
    resolver = dns.resolver()
    for tcp in (False, True):  # a key longer than one 255-byte string, joined again either way
        answer = resolver.resolve(dkim_record["name"], "TXT", tcp=tcp)
        assert [b"".join(r.strings).decode() for r in answer] == [dkim_record["value"]]


def test_a_wrong_record_is_named_with_what_dns_has(owner, dns_server):
    body = _create(owner)
    _publish(dns_server, body, skip=("_helpdesk",))
    dns_server.publish("_helpdesk.acme.example", "helpdesk-verification=someone-elses-token")
    [named] = _verify(owner, body).json()["lastCheck"]["missing"]
    assert named["found"] == ["helpdesk-verification=someone-elses-token"]


def test_past_the_window_a_domain_without_its_records_has_failed(owner, dns_server, settings):
    body = _create(owner)
    EmailDomain.objects.filter(pk=body["ID"]).update(created_at=timezone.now() - dt.timedelta(hours=73))
    verified = _verify(owner, body).json()
    assert verified["status"] == "setupFailed" and len(verified["lastCheck"]["missing"]) == 3


def test_a_verification_is_one_audit_entry(owner, dns_server):
    from tests.audit_helpers import entries_written

    body = _create(owner)
    _publish(dns_server, body)
    with entries_written() as written:
        _verify(owner, body)
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("update", "emailDomains", body["ID"])
    assert entry.changes["status"] == {"before": "new", "after": "active"}
    assert "privateKey" not in entry.changes and "lastCheck" not in entry.changes


def test_an_active_domain_whose_records_went_away_has_failed(owner, dns_server):
    body = _create(owner)
    _publish(dns_server, body)
    assert _verify(owner, body).json()["status"] == "active"
    dns_server.zone.records.clear()
    verified = _verify(owner, body).json()
    assert verified["status"] == "setupFailed" and verified["verifiedAt"] is None


def test_an_unanswering_resolver_is_a_503_and_changes_nothing(owner, settings):
    import socket

    body = _create(owner)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:  # bound, never answers
        silent.bind(("127.0.0.1", 0))
        settings.HELPDESK_DNS_RESOLVER = f"127.0.0.1:{silent.getsockname()[1]}"
        settings.HELPDESK_DNS_TIMEOUT_SECONDS = 1
        response = _verify(owner, body)
    assert response.status_code == 503, response.content
    assert EmailDomain.objects.get(pk=body["ID"]).status == "new"


def test_a_domain_verified_by_another_license_is_a_409(owner, dns_server):
    # given acme.example active in another license
    other = LicenseFactory()
    theirs = domains.email_domain_create(license=other, name="acme.example")
    EmailDomain.objects.filter(pk=theirs.pk).update(status="active")
    # when this license adds it: 409, nothing stored
    response = owner.client.post("/v1/emailDomains", {"name": "ACME.example"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "domain_taken"
    assert not EmailDomain.objects.filter(license=owner.license).exists()
    # and a pending claim of its own cannot be verified over theirs, even with every record published
    EmailDomain.objects.filter(pk=theirs.pk).update(status="pendingVerification")
    body = _create(owner)
    EmailDomain.objects.filter(pk=theirs.pk).update(status="active")
    _publish(dns_server, body)
    assert _verify(owner, body).status_code == 409
    assert EmailDomain.objects.get(pk=body["ID"]).status == "new"


def test_the_same_domain_twice_in_a_license_is_a_400(owner):
    _create(owner)
    again = owner.client.post("/v1/emailDomains", {"name": "acme.example"}, format="json")
    assert again.status_code == 400 and "name" in again.json()["details"]


@pytest.mark.parametrize("role", ["normal", "viewer"])
def test_only_owners_verify(personas, license, role):
    pk = _email_domain_pk(license)
    assert personas[role].client.post(f"/v1/emailDomains/{pk}/verify").status_code == 403


# --- DKIM signatures of mail out ------------------------------------------------------------------------------


@pytest.fixture
def ticket(license):
    return TicketFactory(
        license=license, subject="Where is my order?", requester={"email": "jane@customer.example"}
    )


def _reply_from(agent, license, ticket, callbacks, address="support@acme.example"):
    reply = ReplyAddress.objects.create(license=license, email=address, name="Acme")
    reply.verified_at = reply.created_at
    reply.save()
    accounts_services.team_update(team=license.default_team, reply_address_id=reply.pk, reply_name="Acme")
    with callbacks(execute=True):
        response = agent.client.patch(
            f"/v1/tickets/{ticket.pk}", {"message": {"text": "Your order left today."}}, format="json"
        )
    assert response.status_code == 200, response.content


def test_mail_from_an_active_domain_is_dkim_signed_and_verifies_against_dns(
    agent, owner, license, ticket, dns_server, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    from templates_app.dns import dkim_dnsfunc

    # given acme.example active, its records served by the DNS server
    body = _create(owner)
    _publish(dns_server, body)
    assert _verify(owner, body).json()["status"] == "active"
    # when an agent answers from support@acme.example
    _reply_from(agent, license, ticket, django_capture_on_commit_callbacks)
    # then the mail as the SMTP server received it carries a signature of acme.example that verifies
    [(_, received)] = smtp_server.messages
    raw = smtp_server.raw[-1]
    assert received["DKIM-Signature"] is not None
    tags = dict(t.strip().split("=", 1) for t in str(received["DKIM-Signature"]).split(";") if "=" in t)
    assert tags["d"] == "acme.example" and tags["s"] == EmailDomain.objects.get().selector
    assert dkim.verify(raw, dnsfunc=dkim_dnsfunc)
    # and a changed body no longer verifies
    assert not dkim.verify(
        raw.replace(b"Your order left today.", b"Send your password."), dnsfunc=dkim_dnsfunc
    )


def test_mail_from_a_domain_not_active_is_not_signed(
    agent, owner, license, ticket, dns_server, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    _create(owner)  # new, never verified
    _reply_from(agent, license, ticket, django_capture_on_commit_callbacks)
    [(_, received)] = smtp_server.messages
    assert received["DKIM-Signature"] is None


def test_another_licenses_active_domain_never_signs_this_licenses_mail(
    agent, license, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    theirs = domains.email_domain_create(license=LicenseFactory(), name="acme.example")
    EmailDomain.objects.filter(pk=theirs.pk).update(status="active")
    _reply_from(agent, license, ticket, django_capture_on_commit_callbacks)
    [(_, received)] = smtp_server.messages
    assert received["DKIM-Signature"] is None


# --- admin ----------------------------------------------------------------------------------------------------


def test_the_admin_adds_shows_and_verifies_a_domain_through_the_services(superuser, license, dns_server):
    from audit.models import AuditEntry

    # added through the service (normalized, a key made), audited
    response = superuser.post(
        "/admin/templates_app/emaildomain/add/", {"license": license.pk, "name": "Acme.Example"}
    )
    assert response.status_code == 302, response.content
    domain = EmailDomain.objects.get(license=license)
    assert domain.name == "acme.example" and domain.private_key
    assert AuditEntry.objects.filter(license_id=license.pk, target="emailDomains", action="create").exists()
    # its page lists the records to publish, never the private key
    page = superuser.get(f"/admin/templates_app/emaildomain/{domain.pk}/change/").content.decode()
    assert f"{domain.selector}._domainkey.acme.example" in page and "PRIVATE KEY" not in page
    # the list's action verifies it
    for record in domains.records(domain):
        dns_server.publish(record.name, record.value)
    superuser.post(
        "/admin/templates_app/emaildomain/",
        {"action": "verify_selected", "_selected_action": [str(domain.pk)]},
    )
    assert EmailDomain.objects.get(pk=domain.pk).status == "active"
    # a name that is not a domain is the form's error, nothing stored
    refused = superuser.post(
        "/admin/templates_app/emaildomain/add/", {"license": license.pk, "name": "not a domain"}
    )
    assert refused.status_code == 200 and EmailDomain.objects.count() == 1
