"""DNS look-ups of the e-mail app (a domain's records at verification, DKIM keys of received mail) through one
resolver: `HELPDESK_DNS_RESOLVER` ("host" or "host:port"; empty: the system's), `HELPDESK_DNS_TIMEOUT_SECONDS`."""

from __future__ import annotations

import dns.exception
import dns.resolver
from django.conf import settings


class DnsUnavailable(Exception):
    """The resolver did not answer (timeout, SERVFAIL, no configuration): the answer is unknown, not "none"."""


def _nameserver(value: str) -> tuple[str, int]:
    value = value.strip()
    if value.startswith("["):  # [::1]:5353
        host, _, port = value[1:].partition("]")
        return host, int(port.lstrip(":") or 53)
    if value.count(":") == 1:
        host, _, port = value.partition(":")
        return host, int(port)
    return value, 53


def resolver() -> dns.resolver.Resolver:
    configured = settings.HELPDESK_DNS_RESOLVER
    try:
        resolver = dns.resolver.Resolver(configure=not configured)
    except dns.resolver.NoResolverConfiguration as exc:
        raise DnsUnavailable("no DNS resolver is configured (HELPDESK_DNS_RESOLVER)") from exc
    if configured:
        host, port = _nameserver(configured)
        resolver.nameservers, resolver.port = [host], port
    resolver.lifetime = resolver.timeout = float(settings.HELPDESK_DNS_TIMEOUT_SECONDS)
    return resolver


def txt(name: str) -> list[str]:
    """The TXT records at `name`, each one's strings joined; [] when there is none (NXDOMAIN, no TXT)."""
    try:
        answer = resolver().resolve(name, "TXT", raise_on_no_answer=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return []
    except (dns.exception.Timeout, dns.resolver.NoNameservers, dns.resolver.YXDOMAIN, OSError) as exc:
        raise DnsUnavailable(f"DNS look-up of {name} failed: {exc}") from exc
    if answer.rrset is None:
        return []
    return [b"".join(rdata.strings).decode("utf-8", "replace") for rdata in answer.rrset]


def dkim_dnsfunc(name, timeout=5):
    """dkimpy's `dnsfunc`: the first TXT record at `name` as bytes (b"" when there is none or DNS failed)."""
    if isinstance(name, bytes):
        name = name.decode("ascii", "replace")
    try:
        records = txt(name.rstrip("."))
    except DnsUnavailable:
        return b""
    return records[0].encode() if records else b""
