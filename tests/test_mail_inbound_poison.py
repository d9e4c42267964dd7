"""Mail in, malformed and pathological mail: stored as well as it can be (never "try again later" for a mail
that no retry can change), and in linear time. Each of these was answered 451 / exit 75 for days before."""

import email.policy
import uuid
from email.message import EmailMessage
from pathlib import Path

import pytest

from accounts.models import Attachment
from templates_app.addresses import license_address
from templates_app.inbound import parse
from templates_app.inbound.services import inbound_message_receive
from templates_app.models import InboundMessage
from tests.mail_helpers import simple
from tickets.models import Message, Ticket


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


def receive(license, raw, **kwargs):
    return inbound_message_receive(raw=raw, recipients=[license_address(license.pk)], **kwargs)


def only_message(result) -> Message:
    (message,) = Message.objects.filter(ticket_id=result.ticket_id)
    return message


def raw_mail(headers: list[bytes], body: bytes) -> bytes:
    message_id = f"Message-ID: <{uuid.uuid4().hex}@poison.example>".encode()
    return b"\r\n".join([*headers, message_id]) + b"\r\n\r\n" + body


def test_nul_characters_in_the_text_and_the_subject_are_dropped(license):
    raw = raw_mail(
        [b"From: Jo <jo@example.com>", b"To: x@example.com", b"Subject: Pr\x00inter"], b"Hel\x00lo\r\n"
    )
    # when
    result = receive(license, raw)
    # then
    ticket = Ticket.objects.get(pk=result.ticket_id)
    assert ticket.subject == "Printer"
    assert only_message(result).text == "Hello"


@pytest.mark.parametrize(
    ("from_header", "email", "name"),
    [
        ("Jiří Novák <jiri@example.com>".encode(), "jiri@example.com", "Jiří Novák"),  # raw UTF-8
        ("Jérôme <jerome@example.com>".encode("latin-1"), "jerome@example.com", "Jérôme"),  # raw Latin-1
        ("Jiří <jiří@example.com>".encode(), "jiří@example.com", "Jiří"),  # an internationalized address
    ],
)
def test_a_raw_8bit_from_is_read_as_utf8_or_latin1(license, from_header, email, name):
    result = receive(license, raw_mail([b"From: " + from_header, b"Subject: Hi"], b"Hello\r\n"))
    ticket = Ticket.objects.get(pk=result.ticket_id)
    assert (ticket.requester_email, ticket.requester_name) == (email, name)


def test_a_from_address_over_254_characters_is_no_address(license):
    long_address = "a" * 300 + "@example.com"
    raw = raw_mail([f"From: {long_address}".encode(), b"Subject: Hi"], b"Hello\r\n")
    # with an envelope sender, that one wrote
    result = receive(license, raw, envelope_sender="jo@example.com")
    assert Ticket.objects.get(pk=result.ticket_id).requester_email == "jo@example.com"
    # without one, the mail is kept (raw) but nobody can be answered
    raw = raw_mail([f"From: {long_address}".encode(), b"Subject: Hi again"], b"Hello\r\n")
    result = receive(license, raw)
    assert result.status == "stored" and result.kind == "loop" and "no sender" in result.note
    assert InboundMessage.objects.filter(pk=result.inbound_id).exists()


def test_a_long_display_name_is_cut(license):
    raw = raw_mail([b'From: "' + b"N" * 400 + b'" <jo@example.com>', b"Subject: Hi"], b"Hello\r\n")
    ticket = Ticket.objects.get(pk=receive(license, raw).ticket_id)
    assert ticket.requester_email == "jo@example.com" and ticket.requester_name == "N" * 200


def _with_files(count: int) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["Subject"], msg["Message-ID"] = "jo@example.com", "Scans", "<scans@poison.example>"
    msg.set_content("Here are the scans.")
    for number in range(1, count + 1):
        msg.add_attachment(
            b"scan %d" % number, maintype="application", subtype="pdf", filename=f"s{number}.pdf"
        )
    return msg.as_bytes(policy=email.policy.SMTP)


def test_files_beyond_the_limit_are_dropped_with_a_note(license, settings):
    settings.UPLOAD_MAX_FILES_PER_TRANSACTION = 50
    # when
    result = receive(license, _with_files(53))
    # then the first 50 are on the message, and the ticket says which were not stored
    message = only_message(result)
    names = sorted(Attachment.objects.filter(transaction=message.transaction).values_list("name", flat=True))
    assert len(names) == 50 and "s50.pdf" in names and "s51.pdf" not in names
    assert "3 more files were not stored" in message.text and "s51.pdf, s52.pdf, s53.pdf" in message.text
    assert "3 more files" in InboundMessage.objects.get(pk=result.inbound_id).note


def _nested(depth: int) -> bytes:
    head = "From: Jo <jo@example.com>\r\nSubject: Deep\r\nMessage-ID: <deep@poison.example>\r\nMIME-Version: 1.0\r\n"
    opening = "".join(
        f'Content-Type: multipart/mixed; boundary="b{level}"\r\n\r\n--b{level}\r\n' for level in range(depth)
    )
    closing = "".join(f"\r\n--b{level}--" for level in reversed(range(depth)))
    return (head + opening + "Content-Type: text/plain\r\n\r\nInnermost" + closing + "\r\n").encode()


@pytest.mark.parametrize("depth", [60, 1000])
def test_mime_nested_too_deep_is_stored_with_the_original_attached(license, depth):
    raw = _nested(depth)
    # when
    result = receive(license, raw)
    # then
    ticket = Ticket.objects.get(pk=result.ticket_id)
    assert ticket.subject == "Deep" and ticket.requester_email == "jo@example.com"
    message = only_message(result)
    assert "could not be read" in message.text and "nested more than 50 levels" in message.text
    (original,) = Attachment.objects.filter(transaction=message.transaction)
    assert original.name == "original.eml" and original.file.read() == raw


def test_mime_nested_within_the_limit_is_read():
    mail = parse.parse(_nested(20))
    assert mail.text == "Innermost" and not mail.problem


def test_deeply_nested_html_is_flattened_before_sanitizing():
    html = "<div>" * 400_000 + "deep text" + "</div>" * 400_000 + "<p>after</p>"
    # when
    cleaned = parse.sanitize_html(html)
    # then the text is all there, and the nesting is bounded
    assert "deep text" in cleaned and "<p>after</p>" in cleaned
    assert cleaned.count("<div>") == parse.MAX_HTML_DEPTH


def test_html_that_is_not_deep_is_left_as_it_is():
    html = "<div><p>one</p><p>two<br>three</p><ul>" + "<li>item" * 200 + "</ul></div>"
    assert parse._flattened(html) == html


def test_a_huge_html_body_is_kept_as_a_file_and_its_text_read(license, settings):
    body = b"<p>Hello &amp; welcome</p>" + b"<b>x</b>" * (parse.MAX_HTML_CHARS // 8 + 10)
    raw = raw_mail([b"From: jo@example.com", b"Subject: Big", b"Content-Type: text/html"], body)
    result = receive(license, raw)
    message = only_message(result)
    assert message.text.startswith("Hello & welcome") and message.rich_text_html == ""
    (page,) = Attachment.objects.filter(transaction=message.transaction)
    assert page.name == "message.html" and page.size == len(body)


def test_a_message_id_with_a_nul_is_stored(license):
    raw = simple(headers={"Message-ID": "<a\x00b@poison.example>"})
    assert receive(license, raw).status == "stored"


def test_cc_beyond_the_limit_are_not_put_in_the_loop(license, settings):
    settings.MAIL_MAX_PEOPLE_IN_THE_LOOP = 50
    cc = ", ".join(f"Person {n} <p{n}@example.com>" for n in range(3000))
    # when
    result = receive(license, simple(headers={"Cc": cc}))
    # then
    ticket = Ticket.objects.get(pk=result.ticket_id)
    assert [p["email"] for p in ticket.people_in_the_loop] == [f"p{n}@example.com" for n in range(50)]
    assert (
        "[2950 more Cc were not put in the loop: at most 50 people per ticket.]" in only_message(result).text
    )


def _multipart(subtype="alternative", linesep="\r\n", preamble=None, epilogue=None, text="plain words"):
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "a@example.com", "b@example.com", "parts"
    msg.set_content(text)
    if subtype == "mixed":
        msg.add_alternative("<p>html words</p>", subtype="html")
        msg.make_mixed()
        msg.add_attachment(
            b"\x00\x01 bytes", maintype="application", subtype="octet-stream", filename="a.bin"
        )
    else:
        msg.add_alternative("<p>html words</p>", subtype="html")
    msg.preamble, msg.epilogue = preamble, epilogue
    raw = msg.as_bytes(policy=email.policy.SMTP)
    return raw if linesep == "\r\n" else raw.replace(b"\r\n", linesep.encode())


def _same_as_the_standard_librarys(raw):
    parsed, expected = parse._message(raw), email.message_from_bytes(raw, policy=parse.POLICY)
    assert parsed.as_bytes() == expected.as_bytes()
    assert parsed.get_boundary() == expected.get_boundary()
    assert (parsed.preamble, parsed.epilogue) == (expected.preamble, expected.epilogue)
    assert [type(d) for d in parsed.defects] == [type(d) for d in expected.defects]
    mine = [(p.get_content_type(), p.get_payload(decode=True), p.items()) for p in parsed.walk()]
    theirs = [(p.get_content_type(), p.get_payload(decode=True), p.items()) for p in expected.walk()]
    assert mine == theirs
    return parsed


def _cut_before_close(raw):
    boundary = email.message_from_bytes(raw).get_boundary().encode()
    return raw[: raw.rindex(b"--" + boundary + b"--")]


def _spy(monkeypatch) -> list:
    """What parse._with_parts answers for each mail read (True: parsed under the canonical boundary)."""
    answers, real = [], parse._with_parts
    monkeypatch.setattr(
        parse, "_with_parts", lambda msg, body: answers.append(real(msg, body)) or answers[-1]
    )
    return answers


@pytest.mark.parametrize(
    "raw",
    [
        _multipart(),
        _multipart(linesep="\n"),
        _multipart("mixed"),  # nested: mixed > alternative, and a file
        _multipart(preamble="This is a MIME message.", epilogue="the end\r\n"),
        _cut_before_close(_multipart()),  # no closing delimiter: the same defect
        _multipart().replace(b"==\r\nContent-Type: text/plain", b"==  \r\nContent-Type: text/plain", 1),
    ],
    ids=["alternative", "lf", "mixed", "preamble", "unclosed", "blanks-after-delimiter"],
)
def test_a_multipart_mail_is_parsed_under_the_canonical_boundary_as_the_standard_library_parses_it(
    monkeypatch, raw
):
    # given a multipart mail whose boundary appears only as delimiter lines
    answers = _spy(monkeypatch)
    # when it is read, then it is what the standard library makes of it, parsed the faster way
    _same_as_the_standard_librarys(raw)
    assert answers == [True]


def test_a_mail_whose_boundary_appears_elsewhere_is_parsed_by_the_standard_library(monkeypatch):
    raw = _multipart()
    boundary = email.message_from_bytes(raw).get_boundary().encode()
    assert raw.count(b"plain words") == 1
    for text in [
        b"quoting the boundary " + boundary + b" in a text",  # not on a delimiter line
        b"--" + boundary + b"xyz",  # a longer one
        b"a " + parse.CANONICAL_BOUNDARY,  # the canonical one in the body
    ]:
        answers = _spy(monkeypatch)
        _same_as_the_standard_librarys(raw.replace(b"plain words", text))
        assert answers == [False]
        monkeypatch.undo()
    assert parse._only_delimiters(b"--b\r\nx\r\n--b--\r\n", b"b")
    assert parse._only_delimiters(b"--b \t\nx\n--b--", b"b")
    assert not parse._only_delimiters(b"--b\r\nsee b\r\n--b--\r\n", b"b")
    assert not parse._only_delimiters(b"--b\r\nx--b\r\n", b"b")
    assert not parse._only_delimiters(b"--bc\r\n", b"b")


_CORPUS = sorted((Path(__file__).parent / "mail").glob("*.eml"))


@pytest.mark.parametrize("path", _CORPUS, ids=[p.stem for p in _CORPUS])
def test_the_headers_read_as_text_read_as_the_standard_library_reads_them(path):
    # given each mail of the corpus, read by the help desk's policy and by the standard library's
    raw = path.read_bytes()
    ours, theirs = parse._message(raw), email.message_from_bytes(raw, policy=email.policy.default)
    # then every part's content type, parameters, boundary, subject and payload read the same
    for mine, expected in zip(ours.walk(), theirs.walk(), strict=True):
        assert mine.get_content_type() == expected.get_content_type()
        assert mine.get_boundary() == expected.get_boundary()
        assert mine.get_params() == expected.get_params()
        assert mine.get_content_charset() == expected.get_content_charset()
        assert str(mine.get("Subject", "")) == str(expected.get("Subject", ""))
        assert mine.get_payload(decode=True) == expected.get_payload(decode=True)


@pytest.mark.parametrize(
    "name, value",
    [
        ("Subject", "plain words"),
        ("Subject", "  a folded\r\n long subject line \t"),
        ("Subject", "=?utf-8?q?caf=C3=A9?= order"),  # encoded word: parsed as before
        ("Subject", "caf\udcc3\udca9 raw bytes"),  # not ASCII: parsed as before
        ("Content-Type", 'multipart/alternative;\r\n boundary="===============1234=="'),
        ("Content-Type", "multipart/mixed; boundary=simple; charset=us-ascii"),
        ("Content-Type", "Multipart/Related; type=\"text/html\"; BOUNDARY='quoted'"),
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Type", 'multipart/alternative;\r\n\tboundary="_000_outlook_"'),
        ("Content-Type", 'Multipart/Alternative; BOUNDARY="upper"'),
        ("Content-Type", 'multipart/alternative; boundary="a\\"b"'),
        ("Subject", ""),
        ("Subject", "   "),
        ("Subject", 'tab\there (comment) "quoted" <angle> a\x00b\x7f'),
    ],
)
def test_a_header_read_as_its_text_is_what_its_structured_parse_gives(name, value):
    assert parse.POLICY.header_fetch_parse(name, value) == email.policy.default.header_fetch_parse(
        name, value
    )


def test_the_usual_multipart_content_type_and_subject_are_read_as_text():
    for name, value in [
        ("Content-Type", 'multipart/alternative;\r\n boundary="===============1234=="'),
        ("Subject", "plain words"),
    ]:
        assert type(parse.POLICY.header_fetch_parse(name, value)) is str
    assert type(parse.POLICY.header_fetch_parse("Subject", "=?utf-8?q?caf=C3=A9?=")) is not str


@pytest.mark.parametrize(
    "raw",
    [
        # no blank line between the headers and the first delimiter: the headers end at the first non-header line
        b'From: a@example.com\nSubject: hi\nContent-Type: multipart/mixed; boundary="zzQQ"\n'
        b"--zzQQ\nContent-Type: text/plain\n\nhello there\n--zzQQ--\n",
        # the same for a single part: a line that is no header before the blank line
        b"From: a@example.com\nSubject: hi\nnot a header line\nmore text\n\nthe rest\n",
        # an 8-bit byte in the boundary: the structured Content-Type replaces it, and nothing is split
        b'From: a@example.com\r\nSubject: hi\r\nContent-Type: multipart/mixed; boundary="b\xe9ndary"\r\n\r\n'
        b"--b\xe9ndary\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b\xe9ndary--\r\n",
    ],
    ids=["multipart-no-separator", "single-part-no-separator", "8bit-boundary"],
)
def test_a_mail_the_short_cuts_do_not_fit_reads_as_the_standard_library_reads_it(raw):
    parsed, expected = parse._message(raw), email.message_from_bytes(raw, policy=parse.POLICY)
    assert parsed.is_multipart() == expected.is_multipart()
    assert [type(d) for d in parsed.defects] == [type(d) for d in expected.defects]
    mine = [(p.get_content_type(), p.get_payload(decode=True), p.items()) for p in parsed.walk()]
    theirs = [(p.get_content_type(), p.get_payload(decode=True), p.items()) for p in expected.walk()]
    assert mine == theirs
    assert parse.parse(raw).full_text == parse._parse(raw, expected).full_text
