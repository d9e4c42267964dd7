"""Pure parsing of a received e-mail (no database): addresses, threading headers, loop signals, the text (quoted
history stripped), the sanitized HTML, the files, and what a delivery status notification (bounce) reports.

The standard library's `email` package with `policy.default` does the MIME work (RFC 2047 headers, charsets,
quoted-printable, base64, RFC 2231 file names). What it cannot decode (an unknown or lying charset) is read as
UTF-8 with replacement characters rather than refused: a customer's mail is never lost to a bad header.
"""

from __future__ import annotations

import dataclasses
import email
import email.header
import email.parser
import email.policy
import email.utils
import functools
import hashlib
import html as html_lib
import logging
import mimetypes
import re
from email.message import EmailMessage
from html.parser import HTMLParser

import nh3

logger = logging.getLogger("helpdesk.inbound")

_MSGID = re.compile(r"<[^<>\s]+>")
MAX_ADDRESS = 254  # RFC 5321 4.5.3.1.3: a path is at most 256 octets with its angle brackets
# An address header is read up to this many characters (about 3,000 addresses): the standard library's parser is
# quadratic in a header's length (3,000 Cc: 1.2 s; 10,000: 29 s), and nobody needs more people in the loop.
MAX_ADDRESS_HEADER_CHARS = 100_000
MAX_MIME_DEPTH = 50  # deeper MIME nesting is not read (the parser and walk() recurse: 1,000 levels overflow)
MAX_HTML_CHARS = (
    2_000_000  # a larger HTML body is kept as a file, not sanitized into the message (nh3: ~5 MB/s)
)
MAX_HTML_DEPTH = 100  # deeper elements are flattened before nh3, which is quadratic in nesting depth
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
    cc_omitted: int = 0  # Cc addresses beyond MAX_ADDRESS_HEADER_CHARS, not read
    problem: str = ""  # why the mail could not be read as it is (its text says so too), "" when it could

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


def clean(value: str) -> str:
    """Text that a database stores: no NUL (PostgreSQL refuses it in text and JSON), no lone surrogates (raw
    8-bit bytes in a header come out of the parser as surrogate escapes: read as UTF-8, else as Latin-1)."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is no escaped byte
        return value.encode("utf-8", "replace").decode("utf-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _header(msg: EmailMessage, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # a header the parser cannot even represent
        value = None
    if value is None:
        return ""
    try:
        return clean(str(value).strip())
    except Exception:
        return ""


def _raw_header(msg: EmailMessage, name: str) -> str:
    """The header as received (undecoded), for values that are not text (Message-IDs)."""
    for key, value in msg.raw_items():
        if key.lower() == name.lower():
            return clean(str(value))
    return ""


def _decoded(words: str) -> str:
    """A display name with RFC 2047 encoded words decoded."""
    if "=?" not in words:
        return words
    try:
        return str(email.header.make_header(email.header.decode_header(words)))
    except Exception:
        return words


def _addresses(msg: EmailMessage, name: str) -> tuple[list[Address], int]:
    """The addresses of every `name` header, and how many more were not read (beyond MAX_ADDRESS_HEADER_CHARS).

    Read from the raw header with email.utils.getaddresses, in linear time; the policy's header parser is
    quadratic in the header's length. An "address" longer than MAX_ADDRESS is none (no server takes it)."""
    found, omitted = [], 0
    for key, value in msg.raw_items():
        if key.lower() != name.lower():
            continue
        value = clean(str(value)).replace("\r", "").replace("\n", "")
        if len(value) > MAX_ADDRESS_HEADER_CHARS:
            cut = value.rfind(",", 0, MAX_ADDRESS_HEADER_CHARS)
            cut = cut if cut > 0 else MAX_ADDRESS_HEADER_CHARS
            omitted += value.count("@", cut)
            value = value[:cut]
        for display, addr in email.utils.getaddresses([value]):
            addr = (addr or "").strip().strip("<>")
            if "@" in addr and len(addr) <= MAX_ADDRESS:
                found.append(Address(addr.lower(), clean(_decoded(display or "")).strip()[:200]))
    return found, omitted


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


_TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)[^<>]*>")
# elements that never hold themselves open (void, or closed by the next of their kind): not counted as depth
_FLAT = frozenset(
    "area base br col embed hr img input link meta source track wbr p li dt dd tr td th option".split()  # noqa: SIM905
)


def _flattened(html: str) -> str:
    """`html` without the tags nested deeper than MAX_HTML_DEPTH (their text stays): one linear pass, so that
    nh3 (quadratic in depth: 400,000 nested <div> took minutes) sees a bounded tree."""
    if html.count("<") <= MAX_HTML_DEPTH:
        return html
    depth = 0

    def tag(match) -> str:
        nonlocal depth
        if match[2].lower() in _FLAT or match[0].endswith("/>"):
            return match[0]
        if match[1]:  # an end tag
            depth = max(depth - 1, 0)
            return match[0] if depth < MAX_HTML_DEPTH else ""
        depth += 1
        return match[0] if depth <= MAX_HTML_DEPTH else ""

    return _TAG.sub(tag, html)


def sanitize_html(html: str) -> str:
    return nh3.clean(_flattened(html), url_schemes=_URL_SCHEMES).strip()


def _rough_text(html: str) -> str:
    """The text of an HTML body too large to sanitize: tags dropped by a linear pattern, entities decoded."""
    return html_lib.unescape(re.sub(r"<[^<>]*>", " ", html))


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


# where a cut line may start (the patterns below): found in C, so that only those lines are looked at in Python
_CANDIDATE = re.compile(r"^[ \t]*(?:-|\*|On |Le |Am |From:|De:|Von:|Od:)", re.M | re.I)


def _candidate_lines(lines: list[str]):
    """Indexes of the lines that may start a quote, in order (a 25 MB mail of short lines is not walked)."""
    text = "\n".join(lines)
    index, position = 0, 0
    for match in _CANDIDATE.finditer(text):
        index += text.count("\n", position, match.start())
        position = match.start()
        yield index


def strip_quoted(text: str, *, subject: str = "") -> str:
    """The new part of a reply: cut at the client's "On ... wrote:" / "-----Original Message-----" / Outlook's
    "From: ... Sent: ..." header block, then drop a trailing block of `>` quotes. Forwards keep the forwarded
    mail (that is their content); a mail that is nothing but quotes is kept whole."""
    lines = text.replace("\r\n", "\n").split("\n")
    is_forward = bool(_FORWARD_SUBJECT.match(subject or ""))
    cut = len(lines)
    for index in _candidate_lines(lines):
        line = lines[index]
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


def _too_deep(msg: EmailMessage) -> bool:
    """Whether the MIME tree is nested deeper than MAX_MIME_DEPTH (walked without recursion)."""
    stack = [(msg, 1)]
    while stack:
        part, depth = stack.pop()
        if depth > MAX_MIME_DEPTH:
            return True
        payload = part.get_payload() if part.is_multipart() else None
        if isinstance(payload, list):
            stack.extend((child, depth + 1) for child in payload if hasattr(child, "is_multipart"))
    return False


def parse(raw: bytes) -> ParsedMail:
    """The mail as the help desk reads it. A mail that cannot be read as it is (MIME nested too deep, a parser
    failure) is never refused for that: it becomes `unreadable()`, its original attached."""
    try:
        msg: EmailMessage = email.message_from_bytes(raw, policy=POLICY)
        if _too_deep(msg):
            return unreadable(raw, f"its MIME parts are nested more than {MAX_MIME_DEPTH} levels deep")
        return _parse(raw, msg)
    except RecursionError:
        return unreadable(raw, f"its MIME parts are nested more than {MAX_MIME_DEPTH} levels deep")
    except Exception:
        logger.exception("inbound mail: could not be parsed; stored with the original attached")
        return unreadable(raw, "it could not be parsed")


def unreadable(raw: bytes, why: str) -> ParsedMail:
    """A mail whose body cannot be read: its headers (parsed alone, which cannot recurse), a text that says
    why, and the original message as a file, so that an agent still has all of it."""
    try:
        msg = email.parser.BytesHeaderParser(policy=POLICY).parsebytes(raw)
        mail = _parse(raw, msg, headers_only=True)
    except Exception:
        digest = hashlib.sha256(raw).hexdigest()
        mail = ParsedMail(
            message_id=f"<{digest}@no-message-id>", has_message_id=False, in_reply_to=[], references=[],
            subject="", sender=None, reply_to=[], to=[], cc=[], delivered_to=[], return_path=None,
            auto_submitted="", precedence="", spam_flag=False, bounce=None, text="", full_text="", html="",
            files=[],
        )  # fmt: skip
    mail.problem = f"This e-mail could not be read: {why}. The original message is attached."
    mail.text = mail.full_text = mail.problem
    mail.html, mail.bounce = "", None
    mail.files = [File(name="original.eml", content_type="message/rfc822", content=raw)]
    return mail


def _parse(raw: bytes, msg: EmailMessage, *, headers_only: bool = False) -> ParsedMail:
    ids = message_ids(_raw_header(msg, "Message-ID"))
    message_id = ids[0] if ids else f"<{hashlib.sha256(raw).hexdigest()}@no-message-id>"

    senders, _ = _addresses(msg, "From")
    return_path = None
    if msg.get("Return-Path") is not None:
        return_path = _raw_header(msg, "Return-Path").strip().strip("<>").strip()

    plain = html_part = None
    if not headers_only:
        try:
            plain = msg.get_body(preferencelist=("plain",))
            html_part = msg.get_body(preferencelist=("html",))
        except Exception:
            plain = html_part = None
        if plain is None and html_part is None and msg.get_content_maintype() == "text":
            plain = msg
    files, extra_text = [], []
    html = clean(_text_of(html_part)) if html_part is not None else ""
    if len(html) > MAX_HTML_CHARS:
        # too large to sanitize in time: kept as a file, its text read roughly
        files.append(File(name="message.html", content_type="text/html", content=html.encode()))
        full_text = "" if plain is not None else _rough_text(html)
        html = ""
    else:
        html = sanitize_html(html) if html else ""
        full_text = "" if plain is not None else html_to_text(html)
    if plain is not None:
        full_text = _text_of(plain).strip()

    if msg.is_multipart() and not headers_only:
        for index, part in enumerate(_leaves(msg), start=1):
            if part is plain or part is html_part or part.get_content_type() == "message/delivery-status":
                continue
            if not _is_attachment(part):
                if part.get_content_type() == "text/plain":
                    extra_text.append(_text_of(part).strip())
                continue
            files.append(
                File(
                    name=clean(_file_name(part, index)),
                    content_type=clean(part.get_content_type()),
                    content=_bytes_of(part),
                    cid=_header(part, "Content-ID").strip("<>")[:255],
                )
            )
    if extra_text:
        full_text = "\n\n".join(filter(None, [full_text, *extra_text]))
    full_text = clean(full_text)

    subject = _header(msg, "Subject").replace("\r", "").replace("\n", " ")[:500]
    sender = senders[0] if senders else None
    content_type = msg.get_content_type()
    is_dsn = (
        content_type == "multipart/report" and msg.get_param("report-type", "").lower() == "delivery-status"
    )
    from_daemon = sender is not None and sender.email.split("@")[0] in ("mailer-daemon", "mail-daemon")
    bounce = None
    if not headers_only and (is_dsn or from_daemon or msg.get("X-Failed-Recipients") is not None):
        bounce = _dsn(msg)
        if not bounce.original_message_id:
            answered = message_ids(_raw_header(msg, "In-Reply-To")) or message_ids(
                _raw_header(msg, "References")
            )
            bounce.original_message_id = answered[0] if answered else ""
    cc, cc_omitted = _addresses(msg, "Cc")
    return ParsedMail(
        message_id=message_id[:500],
        has_message_id=bool(ids),
        in_reply_to=message_ids(_raw_header(msg, "In-Reply-To")),
        references=message_ids(_raw_header(msg, "References")),
        subject=subject,
        sender=sender,
        reply_to=_addresses(msg, "Reply-To")[0],
        to=_addresses(msg, "To")[0],
        cc=cc,
        cc_omitted=cc_omitted,
        delivered_to=[
            a.email for name in ("Delivered-To", "X-Original-To") for a in _addresses(msg, name)[0]
        ],
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
