"""Loading the hand-written message corpus of tests/mail/ with its placeholders filled in."""

import email.policy
from pathlib import Path

MAIL_DIR = Path(__file__).parent / "mail"


def load(name: str, **placeholders) -> bytes:
    raw = (MAIL_DIR / name).read_bytes()
    for key, value in placeholders.items():
        raw = raw.replace(b"{" + key.encode() + b"}", str(value).encode())
    return raw


def simple(
    *, sender="client@example.com", to="support@acme.example", subject="Hello", body="Hi there", headers=None
) -> bytes:
    """A minimal plain-text message (unique Message-ID unless one is given in `headers`)."""
    from email.message import EmailMessage
    from email.utils import make_msgid

    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    for key, value in (headers or {}).items():
        msg[key] = value
    if "Message-ID" not in msg:
        msg["Message-ID"] = make_msgid(domain="client.example")
    msg.set_content(body)
    return msg.as_bytes(policy=email.policy.SMTP)  # CRLF line ends, as on the wire
