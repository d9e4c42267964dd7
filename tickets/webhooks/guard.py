"""No request forgery: a webhook URL must be http(s) and resolve only to public addresses.

Checked when a webhook is saved and again before every attempt, where the request is then sent to the very
address that was checked (the URL's host stays in the Host header and in TLS's SNI and certificate check), so a
name that resolves to a public address at the check and to 127.0.0.1 at the connect (DNS rebinding) cannot
reach the host's network. `WEBHOOKS_ALLOW_PRIVATE=true` lifts the address check (tests, on-premise use).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import unicodedata
from urllib.parse import urlsplit

from django.conf import settings

SCHEMES = {"http": 80, "https": 443}


class UnsafeURL(Exception):
    """The URL may not be called; the message says why (shown to the owner)."""


@dataclasses.dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written in the URL (IDNA-encoded)
    port: int
    ip: str  # the address the request goes to


# NAT64's well-known prefix (RFC 6052): the IPv4 address is the last 32 bits, and a NAT64 gateway on the
# host's network would carry the request to it. (The stdlib names 6to4, Teredo and IPv4-mapped forms itself.)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, which a relay or translator would reach."""
    embedded = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if ip in _NAT64:
        embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [address for address in embedded if address is not None]


def _non_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global  # shared address space (100.64/10) and the like
    )


def forbidden(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """A non-public address, or an IPv6 one that carries a non-public IPv4 address (IPv4-mapped, 6to4,
    Teredo, NAT64: `2002:7f00:1::1` is 127.0.0.1 through a 6to4 relay)."""
    if ip.version == 6:
        embedded = _embedded_ipv4(ip)
        if ip.ipv4_mapped is not None:
            return _non_public(ip.ipv4_mapped)
        if any(_non_public(address) for address in embedded):
            return True
    return _non_public(ip)


def parse(url: str) -> tuple[str, str, int]:
    # urlsplit() silently drops tabs and newlines: a URL with them is refused, not quietly rewritten.
    if any(unicodedata.category(char) == "Cc" for char in url):
        raise UnsafeURL("The URL contains a control character (such as a line break).")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UnsafeURL("Not a valid URL.") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise UnsafeURL("Only http and https URLs can receive webhooks.")
    if not parts.hostname:
        raise UnsafeURL("The URL has no host.")
    if parts.username or parts.password:
        raise UnsafeURL("Credentials in the URL are not allowed; check the signature instead.")
    try:
        host = parts.hostname.encode("idna").decode("ascii")
    except UnicodeError:
        raise UnsafeURL("The URL's host is not a valid name.") from None
    return scheme, host, port or SCHEMES[scheme]


def resolve(url: str) -> Target:
    """The address to send to, or UnsafeURL. Every address of the name must be allowed, not just one."""
    scheme, host, port = parse(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        raise UnsafeURL(f"The host {host} could not be resolved.") from None
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    if not addresses:
        raise UnsafeURL(f"The host {host} could not be resolved.")
    if not settings.WEBHOOKS_ALLOW_PRIVATE:
        for address in addresses:
            if forbidden(address):
                raise UnsafeURL(
                    f"The host {host} resolves to {address}, a loopback, private, link-local or otherwise "
                    "non-public address; webhooks only call public addresses."
                )
    return Target(scheme, host, port, str(addresses[0]))


def check(url: str) -> None:
    """At create/update: the scheme and host always; the addresses unless private ones are allowed."""
    parse(url)
    if not settings.WEBHOOKS_ALLOW_PRIVATE:
        resolve(url)
