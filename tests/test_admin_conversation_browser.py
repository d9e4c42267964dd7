"""The ticket's conversation in the real admin (headless Chromium): the thread reads as a conversation and its
attachment links open the files. A screenshot is saved under test-artifacts/."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile

from accounts.models import Account, Attachment, AttachmentTransaction
from tests.factories import AgentFactory, LicenseFactory, TicketFactory
from tests.test_admin_browser import ARTIFACTS, browser_page  # noqa: F401 (the fixture)
from tickets import services

pytestmark = pytest.mark.browser

# a 1x1 PNG
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf000000030101007d3b4e"
    "0a0000000049454e44ae426082"
)


def test_the_admin_reads_the_conversation_and_opens_an_attachment(
    transactional_db,
    live_server,
    browser_page,  # noqa: F811 (the fixture imported above)
    settings,
):
    # given: a customer's ticket, an agent's reply with a screenshot, a status change, a private note
    settings.HELPDESK_APP_URL = live_server.url
    license = LicenseFactory(company_name="Thread Corp")
    mia = AgentFactory(license=license, name="Mia Agent")
    ticket = TicketFactory(
        license=license, subject="Lamp broken", requester={"email": "jane@example.com", "name": "Jane Client"},
        text="My lamp arrived broken.\nCan you help?",
    )  # fmt: skip
    txn = AttachmentTransaction.objects.create(license=license)
    attachment = Attachment(license=license, transaction=txn, name="label.png", content_type="image/png",
                            size=len(PIXEL), sha256="x", token="tok" + "a" * 29)  # fmt: skip
    attachment.file.save("label.png", ContentFile(PIXEL), save=False)
    attachment.save()
    services.ticket_update(
        ticket=ticket, author_agent=mia, message={"text": "Sorry! Here is a return label."}, status="pending",
        transaction_id=txn.pk,
    )  # fmt: skip
    services.ticket_update(
        ticket=ticket, author_agent=mia, message={"text": "Refund approved", "isPrivate": True}
    )
    Account.objects.create_superuser(email="support@example.com", password="correct horse battery")
    page = browser_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "support@example.com")
    page.fill("#id_password", "correct horse battery")
    page.click("input[type=submit]")
    page.wait_for_selector("text=Support administration")
    # when
    page.goto(f"{live_server.url}/admin/tickets/ticket/{ticket.pk}/change/")
    thread = page.locator(".helpdesk-conversation")
    # then: who and what, in order, with the change between
    text = thread.inner_text()
    order = [text.index(s) for s in ("Jane Client", "My lamp arrived broken.", "Mia Agent", "return label",
                                     "status: open → pending", "private note", "Refund approved")]  # fmt: skip
    assert order == sorted(order), text
    ARTIFACTS.mkdir(exist_ok=True)
    thread.screenshot(path=str(ARTIFACTS / "admin-ticket-conversation.png"))
    # and the attachment link opens the file
    href = thread.locator("a", has_text="label.png").get_attribute("href")
    response = page.request.get(href)
    assert response.status == 200 and response.body() == PIXEL
    assert response.headers["content-type"] == "image/png"
