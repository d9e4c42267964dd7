"""A contact form in headless Chromium (Debian's package, driven by Playwright, as tests/test_admin_browser.py):
a customer opens the page, forgets the subject and sees the errors tied to their inputs, fills it in, sends it
and sees the thanks; the ticket is there, from the form. Screenshots are saved under test-artifacts/.
"""

from __future__ import annotations

import pytest

from templates_app.contact_forms import contact_form_create
from tests import test_admin_browser
from tests.factories import LicenseFactory
from tickets.models import Ticket, TicketEvent

pytestmark = pytest.mark.browser
ARTIFACTS = test_admin_browser.ARTIFACTS
browser_page = test_admin_browser.browser_page  # the fixture: headless Chromium, one page


def test_a_customer_writes_in_through_the_form_in_a_browser(
    transactional_db, live_server, browser_page, settings
):
    # given a form with a question of its own (and a time token that a person beats in a browser test)
    settings.CONTACT_FORM_MIN_SECONDS = 1
    license = LicenseFactory(company_name="Browser Corp")
    form = contact_form_create(
        license=license,
        name="Write to Browser Corp",
        fields=[{"key": "phone", "label": "Phone", "type": "text", "required": True}],
    )
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    # when a customer opens it and sends it without a subject nor a phone
    page.goto(f"{live_server.url}/forms/{form.pk}")
    page.get_by_label("Your name").fill("Jo Customer")
    page.get_by_label("Your e-mail").fill("jo@customer.example")
    page.get_by_label("Message").fill("My parcel never came.")
    page.wait_for_timeout(1100)
    page.get_by_role("button", name="Send").click()
    # then the form comes back with the errors, each tied to its input, and the answers kept
    subject = page.get_by_label("Subject")
    assert subject.get_attribute("aria-invalid") == "true"
    assert (
        page.locator(f"#{subject.get_attribute('aria-describedby')}").inner_text().strip()
        == "Subject is required."
    )
    assert page.get_by_label("Phone").get_attribute("aria-describedby") == "e-phone"
    assert page.get_by_label("Message").input_value() == "My parcel never came."
    page.screenshot(path=str(ARTIFACTS / "contact-form-errors.png"), full_page=True)
    assert Ticket.objects.count() == 0
    # when they complete it and send it again
    subject.fill("Lost parcel")
    page.get_by_label("Phone").fill("+33 1 23 45 67 89")
    page.wait_for_timeout(1100)
    page.get_by_role("button", name="Send").click()
    # then they see the thanks, and the ticket is there, from the form
    page.get_by_text("we received your message").wait_for()
    page.screenshot(path=str(ARTIFACTS / "contact-form-thanks.png"), full_page=True)
    ticket = Ticket.objects.get(license=license)
    assert (ticket.subject, ticket.requester_email) == ("Lost parcel", "jo@customer.example")
    assert set(TicketEvent.objects.filter(ticket=ticket).values_list("source_type", flat=True)) == {"form"}
