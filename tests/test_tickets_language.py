"""Language detection (offline, bundled model) fills the ticket and the license's detectedLanguages."""

import pytest

from accounts.models import License
from tests.factories import TicketFactory
from tickets.search import detect_language


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Hello, my order did not arrive. Could you please check the delivery status?", "en"),
        ("Guten Tag, meine Bestellung ist noch nicht angekommen. Können Sie bitte nachsehen?", "de"),
        ("Bonjour, ma commande n'est toujours pas arrivée. Pouvez-vous vérifier s'il vous plaît ?", "fr"),
        ("Dzień dobry, moje zamówienie jeszcze nie dotarło. Czy możecie sprawdzić?", "pl"),
        ("", "none"),
        ("12345 !!! ###", "none"),
    ],
)
def test_it_detects_the_language_offline(text, code):
    assert detect_language(text) == code


def test_a_ticket_gets_its_language_and_the_license_learns_it(license):
    # when
    english = TicketFactory(
        license=license, subject="Refund", text="I would like a refund for my last invoice, please."
    )
    german = TicketFactory(
        license=license,
        subject="Rechnung",
        text="Ich möchte bitte eine Rückerstattung für meine letzte Rechnung.",
    )
    TicketFactory(license=license, subject="Again", text="Another English message about my account settings.")
    # then
    assert english.language == "en"
    assert german.language == "de"
    assert License.objects.get(pk=license.pk).detected_languages == ["de", "en"]


def test_an_undetectable_ticket_is_none_and_not_added(license):
    ticket = TicketFactory(license=license, subject="#42", text="1234 5678")
    assert ticket.language == "none"
    assert License.objects.get(pk=license.pk).detected_languages == []


def test_the_license_object_shows_detected_languages(owner):
    TicketFactory(
        license=owner.license, subject="Hi", text="Hello, please reset my password, I cannot log in."
    )
    body = owner.client.get(f"/v1/licenses/{owner.license.pk}").json()
    assert body["detectedLanguages"] == ["en"]
