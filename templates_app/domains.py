"""E-mail domains (`/v1/emailDomains`): a customer's own domain that our mail is sent From, DKIM-signed.

Creating one makes an RSA 2048 key and lists three TXT records to publish: the DKIM key at
`<selector>._domainkey.<name>`, an SPF include of our sending hosts at `<name>`, and an ownership token at
`_helpdesk.<name>`. `email_domain_verify` looks them up (templates_app.dns) and moves the status: all found →
`active` (mail From the domain is signed from then on, templates_app.dkim_signing); some missing → stays
`pendingVerification` for HELPDESK_EMAIL_DOMAIN_VERIFY_HOURS after creation, `setupFailed` after that (or at once
for a domain that was active: its signatures would no longer verify). A domain is active in one license at most."""

from __future__ import annotations

import base64
import dataclasses
import re
import secrets
from datetime import timedelta

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import License
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import Conflict, Unavailable, field_error
from helpdesk.transactions import unit_of_work
from templates_app import dns
from templates_app.models import EmailDomain

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
NOT_A_DOMAIN = "A domain name (acme.example), without an address or a scheme."


def normalized_name(name: str) -> str:
    """`Acme.Example.` → `acme.example` (IDNA for non-ASCII); anything that is not a domain is a 400 on `name`."""
    value = (name or "").strip().rstrip(".").lower()
    try:
        value = value.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise field_error("name", NOT_A_DOMAIN) from exc
    labels = value.split(".")
    if len(value) > 253 or len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        raise field_error("name", NOT_A_DOMAIN)
    if labels[-1].isdigit():  # 192.0.2.1 is an address, not a domain
        raise field_error("name", NOT_A_DOMAIN)
    return value


# --- the records --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Record:
    kind: str  # dkim, spf, ownership
    name: str
    value: str


def records(domain: EmailDomain) -> list[Record]:
    return [
        Record(
            "dkim", f"{domain.selector}._domainkey.{domain.name}", f"v=DKIM1; k=rsa; p={domain.public_key}"
        ),
        Record("spf", domain.name, f"v=spf1 include:{settings.HELPDESK_SPF_INCLUDE} ~all"),
        Record("ownership", f"_helpdesk.{domain.name}", f"helpdesk-verification={domain.token}"),
    ]


def dns_document(domain: EmailDomain) -> dict:
    return {"txt": [{"name": r.name, "value": r.value} for r in records(domain)], "cname": []}


def _tags(value: str) -> dict[str, str]:
    tags = {}
    for part in value.split(";"):
        key, _, tag_value = part.partition("=")
        tags[key.strip()] = "".join(tag_value.split())
    return tags


def _published(record: Record, found: list[str]) -> bool:
    if record.kind == "dkim":
        want = _tags(record.value)["p"]
        return any(_tags(text).get("p") == want for text in found)
    if record.kind == "spf":
        include = f"include:{settings.HELPDESK_SPF_INCLUDE}".lower()
        return any(text.lower().startswith("v=spf1") and include in text.lower().split() for text in found)
    return record.value in (text.strip() for text in found)


def check(domain: EmailDomain) -> list[dict]:
    """The records not found in DNS as they should be: `[{name, value, found: [what is there]}]`."""
    missing = []
    for record in records(domain):
        try:
            found = dns.txt(record.name)
        except dns.DnsUnavailable as exc:
            raise Unavailable(f"The DNS resolver did not answer; verify again later. ({exc})") from exc
        if not _published(record, found):
            missing.append({"name": record.name, "value": record.value, "found": found[:5]})
    return missing


# --- services -----------------------------------------------------------------------------------------------


def _claimed_elsewhere(license: License, name: str) -> bool:
    return (
        EmailDomain.objects.filter(name=name, status=EmailDomain.STATUS_ACTIVE)
        .exclude(license=license)
        .exists()
    )


def _refuse_taken(license: License, name: str, instance: EmailDomain | None = None) -> None:
    mine = EmailDomain.objects.filter(license=license, name=name)
    if instance is not None:
        mine = mine.exclude(pk=instance.pk)
    if mine.exists():
        raise field_error("name", "This domain is already added.", code="unique")
    if _claimed_elsewhere(license, name):
        raise Conflict("This domain is verified by another account.", code="domain_taken")


def _new_key() -> tuple[str, str]:
    """(private key PEM, public key base64 DER for the DKIM record's p=)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, base64.b64encode(public).decode()


@unit_of_work
def email_domain_create(*, license: License, name: str) -> EmailDomain:
    name = normalized_name(name)
    _refuse_taken(license, name)
    private, public = _new_key()
    domain = EmailDomain(
        license=license,
        name=name,
        selector=f"hd{secrets.token_hex(3)}",
        private_key=private,
        public_key=public,
        token=secrets.token_urlsafe(24),
    )
    stamp_create(domain)
    domain.save()
    return domain


@unit_of_work
def email_domain_update(*, email_domain: EmailDomain, name: str | None = None) -> EmailDomain:
    """A new name starts over (`new`, a new ownership token; the key stays: its record moves with the name)."""
    if name is None or normalized_name(name) == email_domain.name:
        return email_domain
    name = normalized_name(name)
    _refuse_taken(email_domain.license, name, email_domain)
    email_domain.name, email_domain.status = name, EmailDomain.STATUS_NEW
    email_domain.token, email_domain.verified_at, email_domain.last_check = (
        secrets.token_urlsafe(24),
        None,
        {},
    )
    stamp_update(email_domain)
    email_domain.save()
    return email_domain


@unit_of_work
def email_domain_delete(*, email_domain: EmailDomain) -> None:
    email_domain.delete()


def _status_after(domain: EmailDomain, missing: list[dict], now) -> str:
    if not missing:
        return EmailDomain.STATUS_ACTIVE
    if domain.status == EmailDomain.STATUS_ACTIVE:
        return EmailDomain.STATUS_FAILED
    window = timedelta(hours=settings.HELPDESK_EMAIL_DOMAIN_VERIFY_HOURS)
    return EmailDomain.STATUS_PENDING if now - domain.created_at < window else EmailDomain.STATUS_FAILED


def email_domain_verify(*, email_domain: EmailDomain) -> EmailDomain:
    """Look the records up (no transaction open while DNS answers), then record the outcome in one write."""
    missing = check(email_domain)
    with unit_of_work():
        domain = EmailDomain.objects.select_for_update().get(pk=email_domain.pk)
        now = timezone.now()
        status = _status_after(domain, missing, now)
        if status == EmailDomain.STATUS_ACTIVE and _claimed_elsewhere(domain.license, domain.name):
            raise Conflict("This domain is verified by another account.", code="domain_taken")
        if status == EmailDomain.STATUS_ACTIVE and domain.verified_at is None:
            domain.verified_at = now
        if status != EmailDomain.STATUS_ACTIVE:
            domain.verified_at = None
        domain.status = status
        domain.last_check = {"checkedAt": now.isoformat().replace("+00:00", "Z"), "missing": missing}
        stamp_update(domain)
        try:
            with transaction.atomic():  # a concurrent verification of the same name in another license
                domain.save()
        except IntegrityError as exc:
            raise Conflict("This domain is verified by another account.", code="domain_taken") from exc
    return domain


def active_domain_for(license_id: int, email: str) -> EmailDomain | None:
    """The license's active domain of the address `email` (jo@acme.example → acme.example), if any."""
    domain = (email or "").rpartition("@")[2].strip().strip(">").lower()
    if not domain:
        return None
    return EmailDomain.objects.filter(
        license_id=license_id, name=domain, status=EmailDomain.STATUS_ACTIVE
    ).first()
