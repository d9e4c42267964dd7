"""Pure parsing of a received e-mail (no database): addresses, threading headers, loop signals, the text (quoted
history stripped), the sanitized HTML, the files, and what a delivery status notification (bounce) reports.

The standard library's `email` package with `policy.default` does the MIME work (RFC 2047 headers, charsets,
quoted-printable, base64, RFC 2231 file names). What it cannot decode (an unknown or lying charset) is read as
UTF-8 with replacement characters rather than refused: a customer's mail is never lost to a bad header.
"""

from __future__ import annotations

import dataclasses
import email
import email.policy
import email.utils
import functools
import hashlib
import mimetypes
import re
from email.message import EmailMessage
from html.parser import HTMLParser

import nh3

_MSGID = re.compile(r"<[^<>\s]+>")
SUBJECT_TAG = re.compile(r"\[#([0-9A-Za-z]{1,20})\]")
BULK_PRECEDENCE = {"bulk", "list", "junk"}
# cid: keeps inline images pointing at their attachment (the Content-ID is stored on it)
_URL_SCHEMES = nh3.ALLOWED_URL_SCHEMES | {"cid"}


@dataclasses.dataclass
class Address:
    email: str
    name: str = ""


@dataclasses.dataclass
class File:
    name: str
    content_type: str
    content: bytes
    cid: str = ""


@dataclasses.dataclass
class Bounce:
    """What a DSN (RFC 3464) says: the Message-ID of the mail that bounced and the failed recipients."""

    original_message_id: str = ""
    recipients: list[tuple[str, str, str]] = dataclasses.field(
        default_factory=list
    )  # (address, action, status)


@dataclasses.dataclass
class ParsedMail:
    message_id: str  # "<...>", derived from the bytes when the header is missing
    has_message_id: bool
    in_reply_to: list[str]
    references: list[str]
    subject: str
    sender: Address | None  # From
    reply_to: list[Address]
    to: list[Address]
    cc: list[Address]
    delivered_to: list[str]  # Delivered-To, X-Original-To (what the MTA says it delivered to)
    return_path: str | None  # None: no Return-Path header; "": the null reverse path <>
    auto_submitted: str
    precedence: str
    spam_flag: bool
    bounce: Bounce | None  # a DSN or a mailer-daemon's mail
    text: str  # quoted history stripped
    full_text: str  # before stripping
    html: str  # sanitized, "" when the mail has no HTML
    files: list[File]

    @property
    def thread_ids(self) -> list[str]:
        """The Message-IDs this mail answers, nearest first."""
        ids = [*self.in_reply_to, *reversed(self.references)]
        return list(dict.fromkeys(ids))

    @property
    def subject_tag(self) -> str | None:
        match = SUBJECT_TAG.search(self.subject)
        return match[1] if match else None


# --- headers --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _parsed_header(name: str, value: str):
    return email.policy.default.header_fetch_parse(name, value)


class _Policy(email.policy.EmailPolicy):
    """policy.default, except that a header is parsed once: the standard library parses a header again on every
    read (get_body() and get_content_type() read Content-Type over and over, ~30 parses per mail). Parsed
    headers are immutable str objects, so one is shared by every read of the same name and value."""

    def header_fetch_parse(self, name, value):
        if hasattr(value, "name"):
            return value
        return _parsed_header(name, value)


POLICY = _Policy()


def _header(msg: EmailMessage, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # a header the parser cannot even represent
        value = None
    if value is None:
        return ""
    try:
        return str(value).strip()
    except Exception:
        return ""


def _raw_header(msg: EmailMessage, name: str) -> str:
    """The header as received (undecoded), for values that are not text (Message-IDs)."""
    for key, value in msg.raw_items():
        if key.lower() == name.lower():
            return str(value)
    return ""


def _addresses(msg: EmailMessage, name: str) -> list[Address]:
    found = []
    for header_value in msg.get_all(name) or []:
        try:
            pairs = [(a.display_name, a.addr_spec) for a in header_value.addresses]
        except Exception:
            pairs = email.utils.getaddresses([str(header_value)])
        for display, addr in pairs:
            addr = (addr or "").strip().strip("<>")
            if "@" in addr:
                found.append(Address(addr.lower(), (display or "").strip()[:200]))
    return found


def message_ids(value: str) -> list[str]:
    return _MSGID.findall(value or "")


# --- bodies ---------------------------------------------------------------------------------------------


def _text_of(part) -> str:
    try:
        content = part.get_content()
        if isinstance(content, str):
            return content
    except Exception:  # unknown charset, broken transfer encoding
        pass
    payload = part.get_payload(decode=True) or b""
    return payload.decode("utf-8", errors="replace")


def _bytes_of(part) -> bytes:
    if part.get_content_maintype() == "message":
        inner = part.get_payload()
        inner = inner[0] if isinstance(inner, list) and inner else inner
        try:
            return inner.as_bytes(policy=email.policy.default) if hasattr(inner, "as_bytes") else bytes(inner)
        except Exception:
            return str(inner).encode("utf-8", errors="replace")
    payload = part.get_payload(decode=True)
    return payload if payload is not None else b""


class _TextExtractor(HTMLParser):
    """HTML to plain text: block elements become line breaks, lists get bullets, links keep their target."""

    BLOCKS = {"p", "div", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "ul", "ol"}
    SKIP = {"script", "style", "head", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skipping = 0
        self.href: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skipping += 1
        elif tag == "br":
            self.out.append("\n")
        elif tag == "li":
            self.out.append("\n- ")
        elif tag in self.BLOCKS:
            self.out.append("\n")
        elif tag == "a":
            self.href = dict(attrs).get("href")
        elif tag in ("td", "th"):
            self.out.append(" ")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.BLOCKS:
            self.out.append("\n")
        elif tag == "a":
            if (
                self.href
                and self.href.startswith(("http:", "https:"))
                and self.href not in "".join(self.out[-3:])
            ):
                self.out.append(f" ({self.href})")
            self.href = None

    def handle_data(self, data):
        if not self.skipping:
            self.out.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.out).splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def sanitize_html(html: str) -> str:
    return nh3.clean(html, url_schemes=_URL_SCHEMES).strip()


# --- quoted history -------------------------------------------------------------------------------------

_CUT_LINES = [
    re.compile(r"^-{2,}\s*Original Message\s*-{2,}\s*$", re.I),  # Outlook, older clients
    re.compile(r"^-{2,}\s*Reply message\s*-{2,}\s*$", re.I),
    re.compile(r"^On .{1,300} wrote:\s*$", re.S),  # Gmail, Apple Mail, Thunderbird
    re.compile(r"^Le .{1,300} a écrit\s*:\s*$", re.S),
    re.compile(r"^Am .{1,300} schrieb .{0,200}:\s*$", re.S),
]
_OUTLOOK_FROM = re.compile(r"^\*?(From|De|Von|Od):\*?\s", re.I)
_OUTLOOK_NEXT = re.compile(r"^\*?(Sent|Date|Envoyé|Gesendet|Odesláno|Wysłane):\*?\s", re.I)
_FORWARD_SUBJECT = re.compile(r"^\s*(fwd?|fw|wg|tr|přeposlat)\s*:", re.I)


def strip_quoted(text: str, *, subject: str = "") -> str:
    """The new part of a reply: cut at the client's "On ... wrote:" / "-----Original Message-----" / Outlook's
    "From: ... Sent: ..." header block, then drop a trailing block of `>` quotes. Forwards keep the forwarded
    mail (that is their content); a mail that is nothing but quotes is kept whole."""
    lines = text.replace("\r\n", "\n").split("\n")
    is_forward = bool(_FORWARD_SUBJECT.match(subject or ""))
    cut = len(lines)
    for index, line in enumerate(lines):
        stripped = line.strip()
        joined = f"{stripped} {lines[index + 1].strip()}" if index + 1 < len(lines) else stripped
        if any(p.match(stripped) for p in _CUT_LINES) or (
            stripped.startswith("On ") and not stripped.endswith(":") and _CUT_LINES[2].match(joined)
        ):
            cut = index
            break
        if _OUTLOOK_FROM.match(stripped) and not is_forward:
            following = [each.strip() for each in lines[index + 1 : index + 5]]
            if any(_OUTLOOK_NEXT.match(each) for each in following):
                cut = index
                # an Outlook separator line (underscores) just above belongs to the quote
                while cut > 0 and (not lines[cut - 1].strip() or set(lines[cut - 1].strip()) <= {"_", "-"}):
                    cut -= 1
                break
    kept = lines[:cut]
    while kept and (not kept[-1].strip() or kept[-1].lstrip().startswith(">")):
        kept.pop()
    result = "\n".join(kept).strip()
    return result or text.strip()


# --- bounces --------------------------------------------------------------------------------------------


def _dsn(msg: EmailMessage) -> Bounce:
    bounce = Bounce()
    for part in msg.walk():
        content_type = part.get_content_type()
        if content_type == "message/delivery-status":
            blocks = part.get_payload()
            for block in blocks if isinstance(blocks, list) else []:
                recipient = str(block.get("Final-Recipient") or block.get("Original-Recipient") or "")
                if recipient:
                    address = recipient.split(";", 1)[-1].strip().strip("<>").lower()
                    bounce.recipients.append(
                        (
                            address,
                            str(block.get("Action", "")).strip().lower(),
                            str(block.get("Status", "")).strip(),
                        )
                    )
        elif content_type in ("message/rfc822", "text/rfc822-headers") and not bounce.original_message_id:
            if content_type == "message/rfc822":
                inner = part.get_payload()
                inner = inner[0] if isinstance(inner, list) and inner else inner
                value = str(inner.get("Message-ID", "")) if hasattr(inner, "get") else ""
            else:
                headers = email.message_from_string(_text_of(part), policy=email.policy.default)
                value = str(headers.get("Message-ID", ""))
            ids = message_ids(value)
            bounce.original_message_id = ids[0] if ids else ""
    return bounce


# --- the whole message ----------------------------------------------------------------------------------


def _is_attachment(part) -> bool:
    if part.get_content_maintype() in ("multipart",):
        return False
    if part.get_filename():
        return True
    disposition = (part.get_content_disposition() or "").lower()
    if disposition == "attachment":
        return True
    return part.get_content_type() not in ("text/plain", "text/html")


def _leaves(part):
    """Leaf parts, not descending into attached messages (a forwarded mail is one file)."""
    if part.is_multipart() and part.get_content_maintype() == "multipart":
        for child in part.iter_parts():
            yield from _leaves(child)
    else:
        yield part


def _file_name(part, index: int) -> str:
    try:
        name = part.get_filename()
    except Exception:
        name = None
    if name:
        return name.replace("/", "_").replace("\\", "_").strip()[:200] or f"attachment-{index}"
    content_type = part.get_content_type()
    if content_type == "message/rfc822":
        return f"message-{index}.eml"
    if content_type == "text/calendar":
        return f"invite-{index}.ics"
    return f"attachment-{index}{mimetypes.guess_extension(content_type) or '.bin'}"


def parse(raw: bytes) -> ParsedMail:
    msg: EmailMessage = email.message_from_bytes(raw, policy=POLICY)
    ids = message_ids(_raw_header(msg, "Message-ID"))
    message_id = ids[0] if ids else f"<{hashlib.sha256(raw).hexdigest()}@no-message-id>"

    senders = _addresses(msg, "From")
    return_path = None
    if msg.get("Return-Path") is not None:
        return_path = _raw_header(msg, "Return-Path").strip().strip("<>").strip()

    try:
        plain = msg.get_body(preferencelist=("plain",))
        html_part = msg.get_body(preferencelist=("html",))
    except Exception:
        plain = html_part = None
    if plain is None and html_part is None and msg.get_content_maintype() == "text":
        plain = msg
    html = sanitize_html(_text_of(html_part)) if html_part is not None else ""
    full_text = _text_of(plain).strip() if plain is not None else html_to_text(html)

    files, extra_text = [], []
    if msg.is_multipart():
        for index, part in enumerate(_leaves(msg), start=1):
            if part is plain or part is html_part or part.get_content_type() == "message/delivery-status":
                continue
            if not _is_attachment(part):
                if part.get_content_type() == "text/plain":
                    extra_text.append(_text_of(part).strip())
                continue
            files.append(
                File(
                    name=_file_name(part, index),
                    content_type=part.get_content_type(),
                    content=_bytes_of(part),
                    cid=_header(part, "Content-ID").strip("<>")[:255],
                )
            )
    if extra_text:
        full_text = "\n\n".join(filter(None, [full_text, *extra_text]))

    subject = _header(msg, "Subject").replace("\r", "").replace("\n", " ")[:500]
    sender = senders[0] if senders else None
    content_type = msg.get_content_type()
    is_dsn = (
        content_type == "multipart/report" and msg.get_param("report-type", "").lower() == "delivery-status"
    )
    from_daemon = sender is not None and sender.email.split("@")[0] in ("mailer-daemon", "mail-daemon")
    bounce = None
    if is_dsn or from_daemon or msg.get("X-Failed-Recipients") is not None:
        bounce = _dsn(msg)
        if not bounce.original_message_id:
            answered = message_ids(_raw_header(msg, "In-Reply-To")) or message_ids(
                _raw_header(msg, "References")
            )
            bounce.original_message_id = answered[0] if answered else ""

    return ParsedMail(
        message_id=message_id[:500],
        has_message_id=bool(ids),
        in_reply_to=message_ids(_raw_header(msg, "In-Reply-To")),
        references=message_ids(_raw_header(msg, "References")),
        subject=subject,
        sender=sender,
        reply_to=_addresses(msg, "Reply-To"),
        to=_addresses(msg, "To"),
        cc=_addresses(msg, "Cc"),
        delivered_to=[a.email for name in ("Delivered-To", "X-Original-To") for a in _addresses(msg, name)],
        return_path=return_path,
        auto_submitted=_header(msg, "Auto-Submitted").split(";")[0].strip().lower(),
        precedence=_header(msg, "Precedence").strip().lower(),
        spam_flag=_header(msg, "X-Spam-Flag").strip().upper() == "YES",
        bounce=bounce,
        text=strip_quoted(full_text, subject=subject),
        full_text=full_text,
        html=html,
        files=files,
    )
