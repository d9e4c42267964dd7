"""Attachment transactions: create, upload (stored through Django's storage), bind to a ticket, reuse → 409."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from accounts.models import Attachment, AttachmentTransaction
from tests.factories import TicketFactory


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


def _upload(persona, txn_id, *files):
    return persona.client.post(
        f"/v1/transactions/{txn_id}/attachments", {"attachments": list(files)}, format="multipart"
    )


def test_it_stores_attachments_with_their_facts(owner):
    # given
    txn_id = owner.client.post("/v1/transactions").json()["ID"]
    content = b"%PDF-1.4 invoice"
    # when
    response = _upload(
        owner, txn_id, SimpleUploadedFile("invoice.pdf", content, content_type="application/pdf")
    )
    # then
    assert response.status_code == 201, response.content
    [item] = response.json()
    assert list(item) == ["url", "cid", "name", "type", "sha256", "token", "size"]
    assert (
        item["name"] == "invoice.pdf" and item["type"] == "application/pdf" and item["size"] == len(content)
    )
    assert item["sha256"] == hashlib.sha256(content).hexdigest()
    assert len(item["token"]) >= 20
    stored = Attachment.objects.get()
    assert stored.file.read() == content
    assert stored.license == owner.license


def test_too_large_is_413(owner):
    txn_id = owner.client.post("/v1/transactions").json()["ID"]
    with override_settings(HELPDESK_MAX_ATTACHMENT_BYTES=10):
        response = _upload(owner, txn_id, SimpleUploadedFile("big.bin", b"x" * 11))
    assert response.status_code == 413
    assert not Attachment.objects.exists()


def test_no_files_is_400(owner):
    txn_id = owner.client.post("/v1/transactions").json()["ID"]
    response = owner.client.post(f"/v1/transactions/{txn_id}/attachments", {}, format="multipart")
    assert response.status_code == 400
    assert "attachments" in response.json()["details"]


def test_a_viewer_cannot_upload(viewer):
    assert viewer.client.post("/v1/transactions").status_code == 403


def test_a_transaction_binds_to_its_ticket_and_not_to_another(owner):
    # given
    txn_id = owner.client.post("/v1/transactions").json()["ID"]
    _upload(owner, txn_id, SimpleUploadedFile("a.txt", b"a"))
    body = {
        "subject": "With a file",
        "requester": {"email": "c@example.com"},
        "message": {"text": "see attached"},
        "transactionID": txn_id,
    }
    # when
    first = owner.client.post("/v1/tickets", body, format="json")
    other = TicketFactory(license=owner.license)
    reuse = owner.client.patch(
        f"/v1/tickets/{other.pk}", {"message": {"text": "again"}, "transactionID": txn_id}, format="json"
    )
    same = owner.client.patch(
        f"/v1/tickets/{first.json()['ID']}",
        {"message": {"text": "again"}, "transactionID": txn_id},
        format="json",
    )
    late_upload = _upload(owner, txn_id, SimpleUploadedFile("b.txt", b"b"))
    # then
    assert first.status_code == 201
    txn = AttachmentTransaction.objects.get(pk=txn_id)
    assert txn.bound_type == "ticket" and str(txn.bound_id) == first.json()["ID"]
    assert reuse.status_code == 409 and reuse.json()["code"] == "transaction_bound"
    assert same.status_code == 200
    assert late_upload.status_code == 409


def test_another_license_transaction_is_400(owner, outsider):
    txn_id = outsider.client.post("/v1/transactions").json()["ID"]
    response = owner.client.post(
        "/v1/tickets",
        {
            "subject": "x",
            "requester": {"email": "c@example.com"},
            "message": {"text": "y"},
            "transactionID": txn_id,
        },
        format="json",
    )
    assert response.status_code == 400
    assert "transactionID" in response.json()["details"]
