"""Upload limits a real deployment needs: a request's declared size (checked before the body is read), files per
attachment transaction and bytes per license, each a 413 in the error shape with a clear code."""

import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from accounts.models import Attachment, AttachmentTransaction
from tickets import services


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert list(body) == ["error", "code", "details"], body
    return body


def _upload(persona, txn_id, *sizes, **extra):
    files = [SimpleUploadedFile(f"f{i}.bin", b"x" * size) for i, size in enumerate(sizes)]
    return persona.client.post(
        f"/v1/transactions/{txn_id}/attachments", {"attachments": files}, format="multipart", **extra
    )


def _txn(persona) -> str:
    return persona.client.post("/v1/transactions").json()["ID"]


# --- the request's size ---------------------------------------------------------------------------------


def test_a_request_larger_than_the_limit_is_a_413_and_nothing_is_stored(owner, settings):
    settings.UPLOAD_MAX_REQUEST_BYTES = 2_000
    txn_id = _txn(owner)
    body = _error(_upload(owner, txn_id, 3_000), 413)
    assert body["code"] == "payload_too_large" and "Content-Length" in body["details"]
    assert not Attachment.objects.exists()
    assert _upload(owner, txn_id, 1_000).status_code == 201


@pytest.mark.parametrize("authenticated", [True, False])
def test_the_declared_length_is_refused_before_the_body_is_read(owner, client, settings, authenticated):
    # the body is small, the declared length huge: reading it would fail the test client's payload
    settings.UPLOAD_MAX_REQUEST_BYTES = 10_000
    txn_id = _txn(owner)
    url = f"/v1/transactions/{txn_id}/attachments"
    files = {"attachments": [SimpleUploadedFile("a.bin", b"x")]}
    if authenticated:
        response = owner.client.post(url, files, format="multipart", CONTENT_LENGTH=str(10**12))
    else:
        response = client.post(url, files, CONTENT_LENGTH=str(10**12), HTTP_USER_AGENT="t/1")
    assert _error(response, 413)["code"] == "payload_too_large"


def test_a_json_body_over_the_request_limit_is_a_413_too(owner, settings):
    settings.UPLOAD_MAX_REQUEST_BYTES = 100
    response = owner.client.post("/v1/tags", {"name": "x" * 200}, format="json")
    assert _error(response, 413)["code"] == "payload_too_large"


# --- files per transaction ------------------------------------------------------------------------------


def test_files_per_transaction_are_bounded(owner, settings):
    settings.UPLOAD_MAX_FILES_PER_TRANSACTION = 3
    txn_id = _txn(owner)
    assert _upload(owner, txn_id, 1, 1).status_code == 201
    body = _error(_upload(owner, txn_id, 1, 1), 413)
    assert body["code"] == "transaction_file_limit"
    assert Attachment.objects.count() == 2
    assert _upload(owner, txn_id, 1).status_code == 201
    # a new transaction starts afresh
    assert _upload(owner, _txn(owner), 1, 1, 1).status_code == 201


# --- bytes per license -----------------------------------------------------------------------------------


def test_bytes_per_license_are_bounded(owner, outsider, settings):
    settings.UPLOAD_MAX_LICENSE_BYTES = 100
    assert _upload(owner, _txn(owner), 60).status_code == 201
    body = _error(_upload(owner, _txn(owner), 30, 20), 413)
    assert body["code"] == "license_storage_full"
    assert "UPLOAD_MAX_LICENSE_BYTES" in body["error"]
    assert Attachment.objects.filter(license=owner.license).count() == 1
    assert _upload(owner, _txn(owner), 40).status_code == 201  # exactly the quota
    assert _upload(outsider, _txn(outsider), 90).status_code == 201  # another license's own quota


def test_zero_means_no_license_quota(owner, settings):
    settings.UPLOAD_MAX_LICENSE_BYTES = 0
    assert _upload(owner, _txn(owner), 5_000).status_code == 201


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_uploads_cannot_both_pass_the_license_quota(license, settings):
    settings.UPLOAD_MAX_LICENSE_BYTES = 100
    txns = [AttachmentTransaction.objects.create(license=license) for _ in range(2)]
    barrier, outcomes = threading.Barrier(2), []

    def upload(txn):
        try:
            barrier.wait()
            services.attachments_add(txn=txn, files=[SimpleUploadedFile("a.bin", b"x" * 60)])
            outcomes.append("stored")
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test compares
            outcomes.append(getattr(exc, "code", type(exc).__name__))
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(txn,)) for txn in txns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["license_storage_full", "stored"]
    assert Attachment.objects.filter(license=license).count() == 1
