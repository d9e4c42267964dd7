"""DKIM signatures of our mail: a message whose From is an address of one of its license's active e-mail domains
(templates_app.domains) is signed with that domain's key (dkimpy), so the customer's domain passes DMARC.

Django's SMTP backend sends `email.message().as_bytes(linesep="\\r\\n")`: `SignedEmail.message()` signs those very
bytes and returns the message with the `DKIM-Signature` header put in front of them, byte for byte."""

from __future__ import annotations

import logging
from email.utils import getaddresses

import dkim
from django.core.mail import EmailMultiAlternatives

from templates_app.domains import active_domain_for

log = logging.getLogger(__name__)

# What a receiver shows and threads by: changing any of them after signing breaks the signature.
SIGNED_HEADERS = [
    b"from", b"to", b"cc", b"subject", b"date", b"message-id", b"reply-to", b"in-reply-to", b"references",
    b"mime-version", b"content-type", b"auto-submitted",
]  # fmt: skip


class _Signed:
    """The MIME message with its DKIM-Signature header in front (whatever line ending is asked for)."""

    def __init__(self, msg, header: bytes):
        self._msg, self._header = msg, header

    def as_bytes(self, unixfrom=False, linesep="\n"):
        return self._header.replace(b"\r\n", linesep.encode()) + self._msg.as_bytes(unixfrom, linesep=linesep)

    def as_string(self, unixfrom=False, linesep="\n"):
        return self.as_bytes(unixfrom, linesep).decode("utf-8", "replace")

    def __getattr__(self, name):
        return getattr(self._msg, name)


class SignedEmail(EmailMultiAlternatives):
    """An e-mail that DKIM-signs itself when `dkim_key` = (domain, selector, private key PEM) is set."""

    dkim_key: tuple[str, str, str] | None = None

    def message(self, *args, **kwargs):
        msg = super().message(*args, **kwargs)
        if self.dkim_key is None:
            return msg
        domain, selector, private_key = self.dkim_key
        raw = msg.as_bytes(linesep="\r\n")  # fixes the MIME boundaries: the bytes sent are these
        header = dkim.sign(
            raw,
            selector.encode(),
            domain.encode(),
            private_key.encode(),
            canonicalize=(b"relaxed", b"relaxed"),
            include_headers=[h for h in SIGNED_HEADERS if msg.get(h.decode()) is not None],
        )
        return _Signed(msg, header)


def sign_if_ours(email: SignedEmail, *, license_id: int, from_header: str) -> SignedEmail:
    """Set the key of the license's active domain of the From address, if there is one."""
    addresses = [address for _, address in getaddresses([from_header or ""]) if "@" in address]
    if len(addresses) != 1:
        return email
    domain = active_domain_for(license_id, addresses[0])
    if domain is not None:
        email.dkim_key = (domain.name, domain.selector, domain.private_key)
    return email
