"""An agent's signature can carry attachments, sent as an attachment transaction (the spec's transactionID)."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.factories import TicketFactory


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


def _transaction_with(persona, name: str, content: bytes) -> str:
    txn_id = persona.client.post("/v1/transactions", {}, format="json").json()["ID"]
    upload = persona.client.post(
        f"/v1/transactions/{txn_id}/attachments",
        {"attachments": [SimpleUploadedFile(name, content, content_type="image/png")]},
        format="multipart",
    )
    assert upload.status_code == 201, upload.content
    return txn_id


def test_a_signature_gets_its_attachments_from_a_transaction(agent):
    # given a logo uploaded into a transaction
    txn_id = _transaction_with(agent, "logo.png", b"\x89PNG fake")
    # when the agent sets its signature with it
    response = agent.client.patch(
        f"/v1/agents/{agent.agent.pk}",
        {"signature": {"text": "Ann, Acme support"}, "transactionID": txn_id},
        format="json",
    )
    # then the signature shows the file with its facts
    assert response.status_code == 200, response.content
    signature = response.json()["signature"]
    assert signature["text"] == "Ann, Acme support"
    [attachment] = signature["attachments"]
    assert attachment["name"] == "logo.png" and attachment["type"] == "image/png"
    assert attachment["size"] == len(b"\x89PNG fake")
    assert attachment["sha256"] == hashlib.sha256(b"\x89PNG fake").hexdigest()
    assert agent.client.get(f"/v1/agents/{agent.agent.pk}").json()["signature"] == signature


def test_a_signature_transaction_cannot_serve_a_ticket_too(owner, license):
    txn_id = _transaction_with(owner, "logo.png", b"png")
    owner.client.patch(f"/v1/agents/{owner.agent.pk}", {"transactionID": txn_id}, format="json")
    ticket = TicketFactory(license=license)
    response = owner.client.patch(
        f"/v1/tickets/{ticket.pk}", {"message": {"text": "hi"}, "transactionID": txn_id}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["code"] == "transaction_bound"


def test_an_unknown_transaction_is_400_naming_it(owner):
    response = owner.client.post(
        "/v1/agents",
        {
            "email": "a@example.com",
            "roles": ["normal"],
            "transactionID": "6f1c8c1e-0000-4000-8000-000000000000",
        },
        format="json",
    )
    assert response.status_code == 400
    assert "transactionID" in response.json()["details"]
