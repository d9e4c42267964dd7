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


def test_learning_a_language_is_not_an_audited_license_change(owner):
    from audit.models import AuditEntry

    # given the license's own audit history so far
    before = AuditEntry.objects.filter(license_id=owner.license.pk, target="licenses").count()
    # when a ticket in a new language arrives through the API
    response = owner.client.post(
        "/v1/tickets",
        {
            "subject": "Rechnung",
            "requester": {"email": "kunde@example.com"},
            "message": {"text": "Ich möchte bitte eine Rückerstattung für meine letzte Rechnung."},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    # then the license learned it, and nobody is recorded as having changed the license
    assert License.objects.get(pk=owner.license.pk).detected_languages == ["de"]
    assert AuditEntry.objects.filter(license_id=owner.license.pk, target="licenses").count() == before


def test_noise_before_the_words_is_dropped_before_the_text_is_cut():
    # the first 1,000 characters that the model reads are words, not the addresses and links before them
    noise = "jo@example.com https://example.com/a/b 2026-11-25 " * 400
    text = noise + "Hello, my order did not arrive. Could you please check the delivery status?"
    assert detect_language(text) == "en"


def test_a_pathological_text_is_read_in_linear_time():
    """One 2,000,000-character token, a run of at-signs and URLs without spaces, a 15 MB one-character text: the
    old noise pattern (\\S+@\\S+ over the whole text) backtracked quadratically (80,000 characters: 15 s) and
    held the GIL. Run in a child process so that a regression fails on the timeout instead of hanging."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "from tickets.search import detect_language\n"
        "for text in ['a' * 2_000_000, 'a@' * 1_000_000, 'http://' * 300_000, ('x' * 15_000_000) + ' hello',\n"
        "             ('word ' * 400_000) + 'a' * 2_000_000, '.' * 2_000_000 + '@']:\n"
        "    print(detect_language(text))\n"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split()) == 6


def _words_by_the_patterns(text: str) -> str:
    """tickets.search._words as it was before letters-only tokens skipped the patterns (the reference)."""
    from tickets import search

    words, length = [], 0
    for match in search._TOKEN.finditer(text, 0, search.DETECT_SCAN_CHARS):
        token = match[0]
        if "@" in token:
            continue
        link = search._URL.search(token)
        for word in search._NOT_LETTERS.sub(" ", token if link is None else token[: link.start()]).split():
            words.append(word)
            length += len(word) + 1
            if length > search.DETECT_CHARS:
                return " ".join(words)[: search.DETECT_CHARS]
    return " ".join(words)


@pytest.mark.parametrize(
    "text",
    [
        "Hello, my order #123 never arrived; see https://shop.example/orders/123 or mail me@example.com",
        "Zażółć gęślą jaźń — Straße, naïve café, ΑΒΓ αβγ, русский текст, 日本語のテキスト",
        "x² ½ ٣ under_score snake_case_word CamelCase 3rd 2nd-rate e-mail http://a.b c:/d",
        "\u00a0nbsp\u2003em\u3000ideographic\x1cseparators\x1fend",
        " ".join(["word"] * 400),  # cut at DETECT_CHARS
        "",
    ],
)
def test_the_words_read_for_the_language_are_the_patterns_words(text):
    from tickets import search

    assert search._words(text) == _words_by_the_patterns(text)
