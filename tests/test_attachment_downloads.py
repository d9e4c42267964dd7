"""Attachment `url`s download the file: with the license's credentials, a signed expiring link, or the admin
session of the license's staff; another license, a wrong name or a forged link is a 404; the headers keep a
browser from running what it downloads; nothing is served from a public media path."""

import time
from unittest import mock
from urllib.parse import urlsplit

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from accounts.attachments import signed_attachment_url
from accounts.models import Attachment
from tests.admin_helpers import staff
from tests.factories import TicketFactory

APP_URL = "https://desk.example.com"


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path
    settings.HELPDESK_APP_URL = APP_URL


def _ticket_with(persona, *files):
    txn_id = persona.client.post("/v1/transactions").json()["ID"]
    uploaded = persona.client.post(
        f"/v1/transactions/{txn_id}/attachments", {"attachments": list(files)}, format="multipart"
    )
    assert uploaded.status_code == 201, uploaded.content
    body = {"subject": "Files", "requester": {"email": "ann@example.com"}, "message": {"text": "see attached"},
            "transactionID": txn_id}  # fmt: skip
    response = persona.client.post("/v1/tickets", body, format="json")
    assert response.status_code == 201, response.content
    return response.json(), uploaded.json()


def _path(url):
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _content(response):
    return b"".join(response.streaming_content)


def test_the_url_in_the_event_downloads_the_file_with_the_callers_credentials(owner):
    # given
    doc, uploaded = _ticket_with(owner, SimpleUploadedFile("invoice.pdf", b"%PDF-1.4 x", "application/pdf"))
    [attachment] = doc["events"][0]["attachments"]
    # then: the same object as the upload answered, with an absolute URL on the app's address
    assert attachment == uploaded[0]
    assert attachment["url"] == f"{APP_URL}/v1/attachments/{attachment['token']}/invoice.pdf"
    # when
    response = owner.client.get(_path(attachment["url"]))
    # then
    assert response.status_code == 200
    assert _content(response) == b"%PDF-1.4 x"
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="invoice.pdf"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]


def test_images_are_inline_and_other_types_never_run(owner):
    _, uploaded = _ticket_with(
        owner,
        SimpleUploadedFile("logo.png", b"\x89PNG...", "image/png"),
        SimpleUploadedFile("page.html", b"<script>alert(1)</script>", "text/html"),
        SimpleUploadedFile("vector.svg", b"<svg onload=alert(1)>", "image/svg+xml"),
        SimpleUploadedFile("odd.bin", b"x", "text/plain"),
    )
    # a declared type that is no media type (stored by some other path) is not echoed into a header
    Attachment.objects.filter(token=uploaded[3]["token"]).update(content_type="text/html\r\nX-Evil: 1")
    png, html, svg, odd = (owner.client.get(_path(a["url"])) for a in uploaded)
    assert png["Content-Disposition"] == 'inline; filename="logo.png"' and png["Content-Type"] == "image/png"
    assert (
        html["Content-Disposition"].startswith("attachment;") and html["X-Content-Type-Options"] == "nosniff"
    )
    assert svg["Content-Disposition"].startswith("attachment;")  # SVG can carry script
    assert odd.status_code == 200 and odd["Content-Type"] == "application/octet-stream"
    assert "X-Evil" not in odd


def test_a_non_ascii_name_is_encoded_safely(owner):
    _, [attachment] = _ticket_with(owner, SimpleUploadedFile('Fäktura "1".pdf', b"x", "application/pdf"))
    response = owner.client.get(_path(attachment["url"]))
    assert response.status_code == 200
    assert "filename*=utf-8''F%C3%A4ktura%20%221%22.pdf" in response["Content-Disposition"]


def test_another_license_a_wrong_name_or_no_credentials(owner, outsider):
    _, [attachment] = _ticket_with(owner, SimpleUploadedFile("a.txt", b"secret", "text/plain"))
    path = _path(attachment["url"])
    # another license's credentials: as if it did not exist
    response = outsider.client.get(path)
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    # the right token under another name, and an unknown token
    assert owner.client.get(path.replace("/a.txt", "/b.txt")).status_code == 404
    assert owner.client.get(f"/v1/attachments/{'x' * 32}/a.txt").status_code == 404
    # no credentials at all
    anonymous = Client(HTTP_USER_AGENT="browser/1.0").get(path)
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "not_authenticated"


def test_a_signed_link_works_without_credentials_until_it_expires(owner, settings):
    _, [item] = _ticket_with(owner, SimpleUploadedFile("photo.jpg", b"JPEG", "image/jpeg"))
    attachment = Attachment.objects.get(token=item["token"])
    anonymous = Client(HTTP_USER_AGENT="mail-client/1.0")
    # when
    url = signed_attachment_url(attachment)
    # then
    assert url.startswith(f"{item['url']}?sig=")
    response = anonymous.get(_path(url), HTTP_ACCEPT="image/avif,image/*")  # what an <img> asks for
    assert response.status_code == 200 and _content(response) == b"JPEG"
    # a forged or borrowed signature
    assert anonymous.get(_path(url)[:-3] + "abc").status_code == 404
    other = TicketFactory(license=owner.license)  # noqa: F841
    forged = _path(url).replace(item["token"], "y" * len(item["token"]))
    assert anonymous.get(forged).status_code == 404
    # expired after HELPDESK_ATTACHMENT_LINK_MAX_AGE_SECONDS
    settings.HELPDESK_ATTACHMENT_LINK_MAX_AGE_SECONDS = 60
    with mock.patch("time.time", return_value=time.time() + 61):
        expired = anonymous.get(_path(url))
    assert expired.status_code == 403 and expired.json()["code"] == "attachment_link_expired"


def test_the_admin_session_of_the_licenses_staff(owner, outsider):
    _, [item] = _ticket_with(owner, SimpleUploadedFile("a.txt", b"hello", "text/plain"))
    path = _path(item["url"])
    assert staff(owner.agent).get(path).status_code == 200
    assert staff(outsider.agent).get(path).status_code == 404


def test_the_admin_thread_links_download(owner):
    doc, [item] = _ticket_with(owner, SimpleUploadedFile("a.txt", b"hello", "text/plain"))
    admin = staff(owner.agent)
    page = admin.get(f"/admin/tickets/ticket/{doc['ID']}/change/").content.decode()
    [href] = [part.split('"')[0] for part in page.split('href="')[1:] if "/v1/attachments/" in part]
    href = href.replace("&amp;", "&")
    assert href.startswith(item["url"])
    assert _content(Client(HTTP_USER_AGENT="b/1").get(_path(href))) == b"hello"  # a signed link


def test_media_files_are_not_served_from_a_public_path(owner):
    _, [item] = _ticket_with(owner, SimpleUploadedFile("a.txt", b"hello", "text/plain"))
    stored = Attachment.objects.get(token=item["token"]).file.name
    for prefix in ("/media/", "/"):
        assert Client(HTTP_USER_AGENT="b/1").get(prefix + stored).status_code == 404
