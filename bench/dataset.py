# ruff: noqa: SIM905
"""Generate the benchmark data set (PostgreSQL only; see bench/README.md). Never run it on a real database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench \\
        .venv/bin/python bench/dataset.py --tickets 1000000 --licenses 50 --credentials bench/credentials.json

Licenses of skewed size (the first holds 30%), each with teams, agents, tags and an owner token (written to
--credentials for bench/search.py); tickets with 1-3 messages in several languages (common and rare words),
teams, tags, followers, assignment, custom fields, ratings, parents, and dates spread over three years in random
order. Rows go in through COPY with secondary indexes and foreign-key triggers off, then the tsvectors are
computed in SQL, the indexes rebuilt and the tables vacuumed and analyzed (visibility map for index-only counts).
A script beside the other benchmarks, not a management command: operators never need it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime

from tqdm import tqdm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
# Building indexes and computing tsvectors over a million rows takes minutes: the server's statement timeout
# (DB_STATEMENT_TIMEOUT_MS, 30 s by default, issue 37) is for requests, not for this script.
os.environ.setdefault("DB_STATEMENT_TIMEOUT_MS", "0")

import django  # noqa: E402
from django.apps import apps  # noqa: E402

if not apps.ready:  # the tests import this module with Django set up already
    django.setup()

from django.db import connection, transaction  # noqa: E402

from accounts import services as account_services  # noqa: E402
from accounts.models import ROLE_NORMAL, ROLE_OWNER, Account, Agent, License, Team  # noqa: E402
from tickets.models import CustomField, Tag, Ticket  # noqa: E402
from tickets.reports import rollups  # noqa: E402
from tickets.search import search_vector_sql  # noqa: E402

TABLES = [
    "tickets_ticket",
    "tickets_message",
    "tickets_ticket_teams",
    "tickets_ticket_tags",
    "tickets_ticket_followers",
    "tickets_ticketsearchcopy",
    "tickets_ticketmetrics",
    "tickets_reportrollup",
]
TICKET_COLUMNS = [
    "id", "license_id", "number", "short_id", "created_at", "created_by", "created_by_type", "updated_at",
    "updated_by", "status", "priority", "silo", "subject", "requester_email", "requester_name",
    "people_in_the_loop", "custom_fields", "rating_requeest_sent", "rating_score", "rating_comment", "rated_at",
    "language", "status_changed_at", "last_message_at", "last_agent_message_at", "last_client_message_at",
    "search_text", "assignment_agent_id", "assignment_team_id", "parent_id",
]  # fmt: skip
UNCOPIED_DEFAULTS = ["sla_breached"]  # issue 31's flag: false for every generated ticket
COPIES = {
    "tickets": f"COPY bench_ticket_stage ({', '.join(TICKET_COLUMNS)}) FROM STDIN",
    "messages": "COPY tickets_message (id, license_id, ticket_id, text, is_private, author_type, author_agent_id, "
    "created_at, rich_text_html, delivery_status, no_auto_reply) FROM STDIN",
    "teams": "COPY tickets_ticket_teams (ticket_id, team_id, license_id, silo, status) FROM STDIN",
    "tags": "COPY tickets_ticket_tags (ticket_id, tag_id) FROM STDIN",
    "followers": "COPY tickets_ticket_followers (ticket_id, agent_id) FROM STDIN",
}

WORDS = {
    "en": (
        "order delivery invoice refund account password login problem issue help please thanks hello "
        "payment card shipping package parcel arrived delayed broken error update cancel subscription "
        "price discount question email phone address change support urgent again still waiting received "
        "wrong item size color return exchange warranty product app website crash slow loading page "
        "settings profile export report data billing plan upgrade downgrade team member access "
        "permission invite link expired reset code "
    ).split(),
    "de": (
        "Bestellung Lieferung Rechnung Erstattung Konto Passwort Anmeldung Problem Fehler bitte danke "
        "Hallo Zahlung Karte Versand Paket angekommen verspätet kaputt Frage Adresse ändern dringend "
        "immer noch warten falsch Artikel Rückgabe Umtausch Garantie Produkt Seite langsam Einstellungen "
        "Abonnement kündigen Preis "
    ).split(),
    "fr": (
        "commande livraison facture remboursement compte mot de passe connexion problème erreur merci "
        "bonjour paiement carte envoi colis arrivé retard cassé question adresse changer urgent toujours "
        "attendre reçu mauvais article retour échange garantie produit page lente paramètres abonnement "
        "annuler prix "
    ).split(),
    "es": (
        "pedido entrega factura reembolso cuenta contraseña acceso problema error gracias hola pago "
        "tarjeta envío paquete llegado retraso roto pregunta dirección cambiar urgente todavía esperando "
        "recibido artículo devolución cambio garantía producto página lenta configuración suscripción "
        "cancelar precio "
    ).split(),
    "pl": (
        "zamówienie dostawa faktura zwrot konto hasło logowanie problem błąd dziękuję dzień dobry "
        "płatność karta wysyłka paczka dotarła opóźnienie zepsuty pytanie adres zmienić pilne nadal "
        "czekam otrzymałem produkt "
    ).split(),
}
LANGUAGE_WEIGHTS = {"en": 60, "de": 15, "fr": 10, "es": 8, "pl": 4, "none": 3}
# Mostly open: the largest license must hold > 200,000 open tickets for the deep-cursor class.
STATUS_WEIGHTS = {"open": 80, "pending": 6, "onhold": 3, "solved": 6, "closed": 5}
SILO_WEIGHTS = {"tickets": 92, "archive": 4, "spam": 2, "trash": 2}
PRIORITY_WEIGHTS = {0: 70, 10: 15, 20: 5, -10: 10}
SYLLABLES = "ka ro mi tu ze pa li no vu sa gre bri tol zan mek quo fir dax lum pew".split()
THREE_YEARS = 3 * 365 * 24 * 3600


def _weighted(mapping):
    return list(mapping), list(mapping.values())


def _ts(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat()


_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"})


def _line(values) -> str:
    """One row of COPY's text format (NULL is \\N; backslash, tab and newlines escaped)."""
    return "\t".join(r"\N" if v is None else str(v).translate(_ESCAPES) for v in values) + "\n"


def progress(iterable=None, *, file=None, **kwargs):
    """A progress bar on a terminal only. Piped into a file, tqdm would print each bar at its start and twice at
    its end (its last refresh, then close), which made the output look duplicated; the results are on stdout."""
    return tqdm(iterable, disable=None, file=file or sys.stderr, **kwargs)


def _sizes_summary(sizes: list[int]) -> str:
    """The largest and smallest licenses' sizes (all of them when few: never the same license twice)."""
    if len(sizes) <= 8:
        return str(sizes)
    return f"{sizes[:5]} ... {sizes[-3:]}"


def license_sizes(total: int, licenses: int, largest_share: float = 0.30) -> list[int]:
    """The first license holds `largest_share`; the rest follow a Zipf-like curve."""
    first = round(total * largest_share)
    weights = [1 / (i**1.1) for i in range(1, licenses)]
    rest = total - first
    sizes = [max(1, int(rest * w / sum(weights))) for w in weights]
    sizes[0] += rest - sum(sizes)
    return [first, *sizes]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/dataset.py",
        description="Generate the ticket benchmark data set with COPY into a dedicated PostgreSQL database "
        "(DATABASE_URL); never on a real one. Progress bars go to stderr (a terminal only), results to stdout.",
    )
    parser.add_argument(
        "--tickets",
        type=int,
        default=1_000_000,
        metavar="N",
        help="how many tickets in all, each with 1-3 messages (default: %(default)s)",
    )
    parser.add_argument(
        "--licenses",
        type=int,
        default=50,
        metavar="N",
        help="how many licenses share them; the first holds 30%%, the rest a Zipf-like curve "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=42,
        help="seed of the random generator: the same seed makes the same data set (default: %(default)s)",
    )
    parser.add_argument(
        "--credentials",
        default="bench/credentials.json",
        metavar="PATH",
        help="where to write each license's owner token for bench/search.py (default: %(default)s)",
    )
    parser.add_argument(
        "--truncate", action="store_true",
        help="empty the ticket tables first (required when there are tickets already; default: off)",
    )  # fmt: skip
    return parser


class Generator:
    def __init__(self, *, seed: int, stdout=None):
        self.rng = random.Random(seed)
        self.now = time.time()
        self.stdout = stdout or sys.stdout

    def run(self, options: argparse.Namespace) -> None:
        if connection.vendor != "postgresql":
            raise SystemExit("The benchmark data set needs PostgreSQL (DATABASE_URL).")
        if Ticket.objects.exists():
            if not options.truncate:
                raise SystemExit("There are tickets already; use --truncate on a benchmark database.")
            with connection.cursor() as cursor:
                cursor.execute(f"TRUNCATE {', '.join(TABLES)}")
        started = time.monotonic()
        sizes = license_sizes(options.tickets, options.licenses)
        worlds = self._licenses(sizes, options.credentials)
        self.stdout.write(
            f"licenses ready in {time.monotonic() - started:.0f}s; sizes: {_sizes_summary(sizes)}\n"
        )
        indexes = self._drop_indexes()
        self._copy(worlds, sizes)
        self._finish(indexes, worlds)
        self.stdout.write(f"done in {time.monotonic() - started:.0f}s\n")

    # --- licenses, teams, agents, tags, tokens --------------------------------------------------------------

    def _licenses(self, sizes, credentials_path):
        rng, worlds, credentials = self.rng, [], []
        for index, size in enumerate(progress(sizes, desc="licenses")):
            with transaction.atomic():
                license = account_services.license_create(
                    owner_email=f"owner{index}-{uuid.uuid4().hex[:6]}@bench.example",
                    company_name=f"Bench {index}",
                )
                scale = max(1, size // 20_000)
                teams = [license.default_team] + Team.objects.bulk_create(
                    [Team(license=license, name=f"Team {i}") for i in range(min(2 + scale, 20))]
                )
                n_agents = min(5 + 3 * scale, 80)
                accounts = Account.objects.bulk_create(
                    [
                        Account(email=f"a{index}-{i}-{uuid.uuid4().hex[:6]}@bench.example", password="!")
                        for i in range(n_agents)
                    ]
                )
                agents = list(license.agents.all()) + Agent.objects.bulk_create(
                    [
                        Agent(
                            license=license, account=a, email=a.email, name=f"Agent {i}", roles=[ROLE_NORMAL]
                        )
                        for i, a in enumerate(accounts)
                    ]
                )
                tags = Tag.objects.bulk_create(
                    [Tag(license=license, name=f"tag{i}") for i in range(min(10 + 5 * scale, 100))]
                )
                # the custom fields the tickets carry (every ticket write checks its values against them)
                CustomField.objects.bulk_create(
                    [
                        CustomField(license=license, api_key=key, display_name=key, type="singleLine")
                        for key in ("orderNo", "plan", "region")
                    ]
                )
                owner = next(a for a in agents if ROLE_OWNER in a.roles)
                _, token = account_services.token_issue(account=owner.account, name="bench")
            credentials.append(
                {"licenseID": license.pk, "accountID": str(owner.account_id), "token": token, "tickets": size}
            )
            worlds.append(
                {
                    "license": license,
                    "teams": [t.pk for t in teams],
                    "agents": [a.pk for a in agents],
                    "tags": [t.pk for t in tags],
                    "number": 0,
                    "ids": [],
                }
            )
            rng.shuffle(worlds[-1]["tags"])
        with open(credentials_path, "w") as handle:
            json.dump(credentials, handle, indent=1)
        self.stdout.write(f"credentials of the {len(credentials)} owners written to {credentials_path}\n")
        return worlds

    # --- bulk load -------------------------------------------------------------------------------------------

    def _drop_indexes(self) -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.tablename = ANY(%s) "
                "AND i.indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))",
                [TABLES],
            )
            rows = cursor.fetchall()
            for name, _ in rows:
                cursor.execute(f'DROP INDEX "{name}"')
        return [definition for _, definition in rows]

    def _text(self, language: str, rare_words, lo=8, hi=30) -> str:
        rng = self.rng
        if language == "none":
            return " ".join(
                f"#{rng.randrange(10**6)} ERR-{rng.randrange(100)}" for _ in range(rng.randint(1, 3))
            )
        words = rng.choices(WORDS[language], k=rng.randint(lo, hi))
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), rng.choice(rare_words))
        return " ".join(words)

    def _copy(self, worlds, sizes):
        rng = self.rng
        rare_words = ["".join(rng.choices(SYLLABLES, k=4)) for _ in range(30_000)]
        languages, language_weights = _weighted(LANGUAGE_WEIGHTS)
        statuses, status_weights = _weighted(STATUS_WEIGHTS)
        silos, silo_weights = _weighted(SILO_WEIGHTS)
        priorities, priority_weights = _weighted(PRIORITY_WEIGHTS)
        order = [i for i, size in enumerate(sizes) for _ in range(size)]
        rng.shuffle(order)  # licenses interleaved, dates random: nothing arrives in date order
        weights = (
            languages,
            language_weights,
            statuses,
            status_weights,
            silos,
            silo_weights,
            priorities,
            priority_weights,
        )
        with tempfile.TemporaryDirectory() as folder:
            files = {name: open(os.path.join(folder, name), "w") for name in COPIES}  # noqa: SIM115
            self._rows(worlds, order, files, rare_words, weights)
            for handle in files.values():
                handle.close()
            with connection.cursor() as cursor:
                cursor.execute("SET session_replication_role = replica")  # no FK triggers during the load
                cursor.execute("CREATE UNLOGGED TABLE IF NOT EXISTS bench_ticket_stage (LIKE tickets_ticket)")
                cursor.execute("TRUNCATE bench_ticket_stage")
                # Columns not in TICKET_COLUMNS that are NOT NULL with a model default (no database default).
                for column in UNCOPIED_DEFAULTS:
                    cursor.execute(f"ALTER TABLE bench_ticket_stage ALTER COLUMN {column} SET DEFAULT false")
                for name, copy_sql in COPIES.items():
                    path = os.path.join(folder, name)
                    with (
                        cursor.cursor.copy(copy_sql) as copy,
                        open(path, "rb") as handle,
                        progress(
                            total=os.path.getsize(path), desc=f"COPY {name}", unit="B", unit_scale=True
                        ) as bar,
                    ):
                        while chunk := handle.read(1 << 20):
                            copy.write(chunk)
                            bar.update(len(chunk))
                cursor.execute("SET session_replication_role = DEFAULT")

    def _rows(self, worlds, order, files, rare_words, weights):
        rng, now = self.rng, self.now
        tickets, messages = files["tickets"], files["messages"]
        teams_file, tags_file, followers_file = files["teams"], files["tags"], files["followers"]
        (
            languages,
            language_weights,
            statuses,
            status_weights,
            silos,
            silo_weights,
            priorities,
            priority_weights,
        ) = weights
        for license_index in progress(order, desc="tickets", unit_scale=True, mininterval=2):
            world = worlds[license_index]
            world["number"] += 1
            number = world["number"]
            ticket_id = uuid.uuid4()
            language = rng.choices(languages, language_weights)[0]
            created = now - rng.random() * THREE_YEARS
            span = min(now - created, rng.expovariate(1 / (5 * 86400)))
            updated = created + span
            status = rng.choices(statuses, status_weights)[0]
            team = rng.choice(world["teams"])
            agent = rng.choice(world["agents"]) if rng.random() < 0.7 else None
            subject = self._text(language if language != "none" else "en", rare_words, 3, 7).capitalize()
            n_messages = rng.randint(1, 3)
            times = sorted([created] + [created + rng.random() * span for _ in range(n_messages - 1)])
            texts, last_agent, last_client = [], None, None
            for i, at in enumerate(times):
                author = "client" if i % 2 == 0 else "agent"
                text = self._text(language, rare_words)
                texts.append(text)
                if author == "agent":
                    last_agent = at
                else:
                    last_client = at
                messages.write(
                    _line(
                        [
                            uuid.uuid4(),
                            world["license"].pk,
                            ticket_id,
                            text,
                            "f",
                            author,
                            agent if author == "agent" and agent else None,
                            _ts(at),
                            "",
                            "[]",
                            "f",
                        ]
                    )  # fmt: skip
                )
            requester_name = f"Customer {rng.randrange(100_000)}"
            requester_email = f"customer{rng.randrange(1_000_000)}@example.com"
            short_id = str(number)
            search_text = "\n".join([short_id, requester_name, requester_email, subject, *texts])
            custom = {}
            if rng.random() < 0.5:
                custom = {
                    "orderNo": str(rng.randrange(100_000)),
                    "plan": rng.choice(["free", "pro", "enterprise"]),
                }
                if rng.random() < 0.3:
                    custom["region"] = rng.choice(["eu", "us", "apac"])
            rated = status in ("solved", "closed") and rng.random() < 0.3
            parent = rng.choice(world["ids"]) if world["ids"] and rng.random() < 0.02 else None
            priority = rng.choices(priorities, priority_weights)[0]
            silo = rng.choices(silos, silo_weights)[0]
            tickets.write(
                _line(
                    [
                        ticket_id, world["license"].pk, number, short_id, _ts(created), None, "agent", _ts(updated),
                        None, status, priority, silo, subject, requester_email, requester_name, "[]",
                        json.dumps(custom), "t" if rated else "f", rng.choice(["good", "bad"]) if rated else "", "",
                        _ts(updated) if rated else None, language, _ts(created + rng.random() * span),
                        _ts(times[-1]), _ts(last_agent), _ts(last_client), search_text, agent,
                        team if agent or rng.random() < 0.5 else None, parent,
                    ]
                )
            )  # fmt: skip
            if len(world["ids"]) < 5000:
                world["ids"].append(ticket_id)
            license_id = world["license"].pk
            teams_file.write(_line([ticket_id, team, license_id, silo, status]))
            if rng.random() < 0.2:
                other = rng.choice(world["teams"])
                if other != team:
                    teams_file.write(_line([ticket_id, other, license_id, silo, status]))
            for tag in set(rng.choices(world["tags"][:20], k=rng.choice([0, 0, 1, 1, 2, 3]))):
                tags_file.write(_line([ticket_id, tag]))
            for follower in set(rng.choices(world["agents"], k=rng.choice([0, 0, 1, 2]))):
                followers_file.write(_line([ticket_id, follower]))

    def _finish(self, indexes, worlds):
        columns = ", ".join(TICKET_COLUMNS + UNCOPIED_DEFAULTS)
        steps = [
            ("tsvectors", f"INSERT INTO tickets_ticket ({columns}, search_vector) SELECT {columns}, {search_vector_sql()} FROM bench_ticket_stage"),
            # the copy full-text totals count (tickets.models.TicketSearchCopy): its triggers are off in this load
            ("search copy", "INSERT INTO tickets_ticketsearchcopy (ticket_id, license_id, silo, status, search_vector) SELECT id, license_id, silo, status, search_vector FROM tickets_ticket"),
            ("drop stage", "DROP TABLE bench_ticket_stage"),
        ]  # fmt: skip
        steps += [(f"index {definition.split()[2]}", definition) for definition in indexes]
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            cursor.execute("SET session_replication_role = replica")
            for label, sql in progress(steps, desc="finish"):
                started = time.monotonic()
                cursor.execute(sql)
                tqdm.write(f"  {label}: {time.monotonic() - started:.1f}s")
            cursor.execute("SET session_replication_role = DEFAULT")
            for world in worlds:
                cursor.execute(
                    "INSERT INTO tickets_ticketsequence (license_id, last_number) VALUES (%s, %s) "
                    "ON CONFLICT (license_id) DO UPDATE SET last_number = EXCLUDED.last_number",
                    [world["license"].pk, world["number"]],
                )
            License.objects.filter(pk__in=[w["license"].pk for w in worlds]).update(
                detected_languages=sorted(code for code in LANGUAGE_WEIGHTS if code != "none")
            )
        # every ticket's metrics row and the reports' rollups, as production has them (a write then takes the
        # usual path of tickets.reports.wiring, not the rare one of a ticket without its row)
        for world in progress(worlds, desc="report rollups"):
            rollups.rebuild(world["license"].pk)
        connection.close()
        with connection.cursor() as cursor:  # VACUUM cannot run in a transaction block
            for table in TABLES:
                started = time.monotonic()
                cursor.execute(f"VACUUM ANALYZE {table}")
                self.stdout.write(f"  vacuum analyze {table}: {time.monotonic() - started:.1f}s\n")


def main(argv: list[str] | None = None) -> None:
    options = build_parser().parse_args(argv)
    Generator(seed=options.seed).run(options)


if __name__ == "__main__":
    main()
