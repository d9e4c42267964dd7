"""The reports' rollups: per license, metric, UTC hour and agent/team, the rows counted and their seconds summed
(models.ReportRollup), so a report over a year adds up at most 8,784 hours per bucket key instead of reading a
million rows.

Writing. A ticket contributes to the rollups through `contribution(state)`: its creation hour (`new`, `source`,
`status.<status>`), its rating hour (`rating`), its first response (`response`) and, apart, each resolution
(`resolution`); nothing while it is in spam or trash. A write's receiver (tickets.reports.wiring) takes the
contribution before (from the copies on TicketMetrics) and after (from the ticket), and `add` keeps the
difference until the unit of work's flush stage (helpdesk.transactions.FLUSH), which adds what all its writes
kept in one upsert per license (`apply`), in the write's transaction, after the rules have written: the rows are
locked from there to the commit, and by every write in one place of the lock order (docs/architecture.md). The
purge subtracts what it deletes (`forget`); a deleted agent's or team's current-assignee rows move to "none"
(`unassign`), as the tickets' SET_NULL does.

Reading (`run`): a report without ticket filters (or with `agentIDs[]` alone where the metric's agent rows are
the ticket's assignee now: `covers`), over a range that starts and ends on whole UTC hours, in a zone whose
offset is whole hours over the range (its buckets are then whole UTC hours), sums the rows of its hours per
bucket. Counts and averages are exact. Percentiles (median, p90) come from a histogram of quarter-octave
buckets (bounds 2^(k/4) seconds), interpolated within a bucket: within 9% of the exact value; a range of at
most EXACT_PERCENTILE_ROWS rows reads its rows instead and gives them exactly. Anything else: None, and the
caller reads the rows (tickets.reports.selectors).
"""

from __future__ import annotations

import bisect
import datetime
import hashlib
import json
import uuid
from typing import NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, Sum
from django.db.models.functions import ExtractHour, Trunc

from helpdesk.transactions import FLUSH, before_commit, current_unit, on_rollback
from tickets.reports.models import ReportRollup, TicketMetrics, TicketResolution
from tickets.reports.registry import (
    AGENTS,
    COUNT,
    HOURS,
    RATING,
    SERIES,
    SOURCE_NAMES,
    SOURCES,
    TEAMS,
    TIME,
    Report,
)

REPORTED_SILOS = ("tickets", "archive")  # as tickets.reports.selectors
RATIO = 2**0.25
BOUNDS = [RATIO**k for k in range(0, 129)]  # bucket 0: [0, 1 s); bucket k: [2^((k-1)/4), 2^(k/4)) s
EXACT_PERCENTILE_ROWS = 10_000
UTC = datetime.UTC
_ALL, _AGENT, _TEAM = "", "a", "t"
# The ticket's current assignee (response, resolution: "a" names who answered and who solved there), and the set
# of teams it is visible to now, whose members are the rows of metric TEAMS_METRIC, dim _MEMBER, hour EPOCH.
_CURRENT_AGENT, _VISIBLE, _MEMBER = "c", "v", "m"
TEAMS_METRIC = "teams"
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
HOUR, DAY = "h", "d"

# The time metrics' business variants: the rows with business seconds (a ticket under an SLA policy), in them.
BUSINESS = {"response": "response.business", "resolution": "resolution.business"}
# Which metric each report family reads, by report name prefix.
_METRICS = {"newTickets": "new", "responseTime": "response", "resolutionTime": "resolution", "rating": "rating",
            "ticketSources24": "source"}  # fmt: skip


def bucket(seconds: float) -> int:
    return bisect.bisect_right(BOUNDS, seconds)


def _hour(moment: datetime.datetime) -> datetime.datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _ident(value) -> str:
    return "" if value is None else str(value)


def team_set(text: str) -> tuple[str, ...]:
    """TicketMetrics.teams -> the team IDs, sorted (whatever order or UUID spelling stored them)."""
    return tuple(sorted(str(uuid.UUID(each)) for each in text.split(",") if each))


def team_set_key(teams: tuple[str, ...]) -> str:
    """A set of teams as one `ident` (a 128-bit digest: two sets of one license never share it); "" for none."""
    return hashlib.blake2b(",".join(teams).encode(), digest_size=16).hexdigest() if teams else ""


# --- writing ---------------------------------------------------------------------------------------------------


def state_of_metrics(metrics, created_at) -> dict:
    """What the rollups counted of a ticket: its copies on its metrics row."""
    return {
        "silo": metrics.silo,
        "created_at": created_at,
        "status": metrics.status,
        "agent": metrics.assignee_id,
        "team": metrics.assigned_team_id,
        "rated_at": metrics.rated_at,
        "rating": metrics.rating,
        "source": metrics.source,
        "response_at": metrics.first_response_at,
        "response_seconds": metrics.first_response_seconds,
        "response_agent": metrics.first_response_agent_id,
        "response_team": metrics.first_response_team_id,
        "teams": team_set(metrics.teams),
        "response_business": metrics.first_response_business_seconds,
    }


def copy_ticket(metrics, ticket) -> None:
    """The ticket's fields the rollups read, copied onto its metrics row (saved by the caller)."""
    metrics.silo = ticket.silo
    metrics.status = ticket.status
    metrics.assignee_id = ticket.assignment_agent_id
    metrics.assigned_team_id = ticket.assignment_team_id
    metrics.rated_at = ticket.rated_at
    metrics.rating = ticket.rating_score


def _adder(found: dict, sign: int):
    """add(metric, dim, hour, ident, key, seconds): into the hour's row and its UTC day's."""

    def add(metric, dim, hour, ident, key, seconds):
        day = hour.replace(hour=0)
        for row_key in ((metric, dim, HOUR, hour, ident, key), (metric, dim, DAY, day, ident, key)):
            values = found.setdefault(row_key, [0, 0.0])
            values[0] += sign
            values[1] += sign * seconds

    return add


def _three(add, metric, hour, key, agent, team, seconds=0.0):
    add(metric, _ALL, hour, "", key, seconds)
    add(metric, _AGENT, hour, _ident(agent), key, seconds)
    add(metric, _TEAM, hour, _ident(team), key, seconds)


def _visible(add, metric, hour, key, teams, seconds=0.0):
    """The row of the set of teams the ticket is visible to now (`teamIDs[]`)."""
    add(metric, _VISIBLE, hour, team_set_key(teams), key, seconds)


def contribution(state: dict | None, sign: int = 1, into: dict | None = None) -> dict:
    """{(metric, dim, grain, hour, ident, key): [count, seconds]} of one ticket's state (not its resolutions)."""
    found = {} if into is None else into
    add = _adder(found, sign)

    if state is None or state["silo"] not in REPORTED_SILOS:
        return found
    hour, teams = _hour(state["created_at"]), state["teams"]
    add("new", _ALL, hour, "", "", 0.0)
    add("source", _ALL, hour, "", state["source"] or "", 0.0)
    _three(add, f"status.{state['status']}", hour, "", state["agent"], state["team"])
    _visible(add, "new", hour, "", teams)
    _visible(add, "source", hour, state["source"] or "", teams)
    _visible(add, f"status.{state['status']}", hour, "", teams)
    for team in teams:  # the set's members: one row per team (per hour: the day row is left out)
        found_key = (TEAMS_METRIC, _MEMBER, HOUR, EPOCH, team, team_set_key(teams))
        found.setdefault(found_key, [0, 0.0])[0] += sign
    if state["rated_at"] is not None and state["rating"] in ("good", "bad"):
        _three(add, "rating", _hour(state["rated_at"]), state["rating"], state["agent"], state["team"])
        _visible(add, "rating", _hour(state["rated_at"]), state["rating"], teams)
    if state["response_at"] is not None:
        seconds = state["response_seconds"] or 0.0
        _three(add, "response", _hour(state["response_at"]), str(bucket(seconds)), state["response_agent"],
               state["response_team"], seconds)  # fmt: skip
        hour, key = _hour(state["response_at"]), str(bucket(seconds))
        _visible(add, "response", hour, key, teams, seconds)
        add("response", _CURRENT_AGENT, hour, _ident(state["agent"]), key, seconds)
        business = state["response_business"]
        if business is not None:  # the same rows of the business variant, in business seconds
            key = str(bucket(business))
            _three(
                add,
                BUSINESS["response"],
                hour,
                key,
                state["response_agent"],
                state["response_team"],
                business,
            )
            _visible(add, BUSINESS["response"], hour, key, teams, business)
            add(BUSINESS["response"], _CURRENT_AGENT, hour, _ident(state["agent"]), key, business)
    return found


def resolution_contribution(resolutions, sign: int = 1, into: dict | None = None, now=None) -> dict:
    """The same of resolutions: objects or dicts with solved_at, seconds, business_seconds, agent_id, team_id;
    `now`: their ticket's (current assignee, visible teams), else each dict's `current_agent` and `teams` (the
    text)."""
    found = {} if into is None else into
    add = _adder(found, sign)
    for each in resolutions:
        get = each.get if isinstance(each, dict) else each.__getattribute__
        seconds = get("seconds") or 0.0
        _three(add, "resolution", _hour(get("solved_at")), str(bucket(seconds)), get("agent_id"),
               get("team_id"), seconds)  # fmt: skip
        agent, teams = now if now is not None else (get("current_agent"), team_set(get("teams") or ""))
        hour, key = _hour(get("solved_at")), str(bucket(seconds))
        _visible(add, "resolution", hour, key, teams, seconds)
        add("resolution", _CURRENT_AGENT, hour, _ident(agent), key, seconds)
        business = get("business_seconds")
        if business is not None:  # the same rows of the business variant, in business seconds
            key = str(bucket(business))
            _three(add, BUSINESS["resolution"], hour, key, get("agent_id"), get("team_id"), business)
            _visible(add, BUSINESS["resolution"], hour, key, teams, business)
            add(BUSINESS["resolution"], _CURRENT_AGENT, hour, _ident(agent), key, business)
    return found


def difference(before: dict, after: dict) -> dict:
    changed = {}
    for row_key in before.keys() | after.keys():
        count = after.get(row_key, (0, 0.0))[0] - before.get(row_key, (0, 0.0))[0]
        seconds = after.get(row_key, (0, 0.0))[1] - before.get(row_key, (0, 0.0))[1]
        if count or seconds:
            changed[row_key] = [count, seconds]
    return changed


class _Pending:
    """What the unit of work's writes add to the rollups until its flush: (license ID, delta) in write order."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, dict]] = []
        self.registered = False  # its flush is registered with the unit (run at most once per registration)

    def forget(self, entry) -> None:
        for i, each in enumerate(self.entries):
            if each is entry:
                del self.entries[i]
                return


_PENDING = "tickets.reports.rollups"


def add(license_id: int, delta: dict) -> None:
    """Add `delta` to the license's rollups at the flush of the open unit of work (at once outside one).

    Locking the rows when the write is done with everything else it locks makes one lock order for all writes:
    applied where each write computed its delta, a new ticket by mail held the license's "new" rows while a rule
    then waited for a team's row that a create in that team held, waiting for the same rows (a deadlock).
    A write in a nested unit that rolls back is forgotten with it (helpdesk.transactions.on_rollback)."""
    delta = {key: v for key, v in delta.items() if v[0] or v[1]}
    if not delta:
        return
    unit = current_unit()
    if unit is None:
        apply(license_id, delta)
        return
    pending = unit.state.get(_PENDING)
    if pending is None:
        pending = unit.state[_PENDING] = _Pending()
    if not pending.registered:
        pending.registered = True
        before_commit(_flush, stage=FLUSH)
    entry = (license_id, delta)
    pending.entries.append(entry)
    on_rollback(lambda: pending.forget(entry))


def _merged(entries) -> dict[int, dict]:
    """{license ID: delta}: the entries' deltas added up, in write order."""
    merged: dict[int, dict] = {}
    for license_id, delta in entries:
        rows = merged.setdefault(license_id, {})
        for key, (count, seconds) in delta.items():
            row = rows.setdefault(key, [0, 0])
            row[0] += count
            row[1] += seconds
    return merged


def _flush() -> None:
    """The unit of work's flush stage: what its writes added, one upsert per license (licenses in order)."""
    pending = current_unit().state[_PENDING]
    applied, pending.entries, pending.registered = pending.entries, [], False
    if len(applied) == 1:  # one write's (a request's, a mail's without a rule that writes)
        apply(*applied[0])
        return
    merged = _merged(applied)
    for license_id in sorted(merged):
        apply(license_id, {key: v for key, v in merged[license_id].items() if v[0] or v[1]})


class _Row(NamedTuple):
    metric: str
    dim: str
    grain: str
    hour: datetime.datetime
    ident: str
    key: str
    count: int
    seconds: float


def _rows(license_id: int, dim: str, *, ident=None, metric=None, current: bool = False) -> list[_Row]:
    """The license's rows of `dim` (of `ident`, of `metric`, of the metrics that read the current assignee),
    as the commit will leave them: as stored, plus what the open unit of work's writes keep for its flush.

    For `unassign`, which moves rows of a deletion's agent or team: its unit's writes (the tickets the agent
    leaves, given back to their teams) are not applied yet, and applying them there would lock the rows before
    the rest of the deletion's locks (its rules', the audit's), out of the order every other write takes."""
    stored = ReportRollup.objects.filter(license_id=license_id, dim=dim)
    if ident is not None:
        stored = stored.filter(ident=ident)
    if metric is not None:
        stored = stored.filter(metric=metric)
    if current:
        stored = stored.filter(Q(metric__startswith="status.") | Q(metric__in=_CURRENT))
    rows = {(r.metric, r.dim, r.grain, r.hour, r.ident, r.key): [r.count, r.seconds] for r in stored}
    unit = current_unit()
    pending = unit.state.get(_PENDING) if unit is not None else None
    for key, (count, seconds) in _merged(pending.entries if pending else []).get(license_id, {}).items():
        row_metric, row_dim, _grain, _hour, row_ident, _key = key
        if (
            row_dim == dim
            and (ident is None or row_ident == ident)
            and (metric is None or row_metric == metric)
            and (not current or _reads_current(row_metric))
        ):
            row = rows.setdefault(key, [0, 0.0])
            row[0] += count
            row[1] += seconds
    return [_Row(*key, *values) for key, values in rows.items()]


def apply(license_id: int, delta: dict) -> None:
    """Add `delta` to the license's rollups: one INSERT ... ON CONFLICT DO UPDATE (rows in key order, so two
    writes of one license lock them in the same order)."""
    if not delta:
        return
    table = ReportRollup._meta.db_table
    rows = sorted(delta.items())
    upsert = (
        f"ON CONFLICT (license_id, metric, dim, grain, hour, ident, key) DO UPDATE "
        f"SET count = {table}.count + EXCLUDED.count, seconds = {table}.seconds + EXCLUDED.seconds"
    )
    columns = "license_id, metric, dim, grain, hour, ident, key, count, seconds"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The rows as one JSON array of rows: a statement of 2 parameters whatever the number of rows (with a
            # value per row and column psycopg converted the statement anew on every write: it caches the
            # conversion of statements of at most 50 parameters), encoded by the json module's C encoder. As
            # nine arrays, psycopg's Python list dumper quoted each element: the upsert cost 2.07 M instructions
            # per new ticket; create 19.67 -> 18.20 M, mail in 20.89 -> 19.44 M (bench/README.md "create and
            # mail in, fourth round"). The hour in ISO 8601 with its offset, the seconds as repr() gives them
            # (read back exactly); WITH ORDINALITY ... ORDER BY keeps the key order.
            cursor.execute(
                f"INSERT INTO {table} ({columns}) "
                f"SELECT %s, r->>0, r->>1, r->>2, (r->>3)::timestamptz, r->>4, r->>5, (r->>6)::bigint, "
                f"(r->>7)::float8 FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS delta (r, n) ORDER BY n "
                f"{upsert}",
                [
                    license_id,
                    json.dumps(
                        [
                            (metric, dim, grain, hour.isoformat(), ident, key, count, float(seconds))
                            for (metric, dim, grain, hour, ident, key), (count, seconds) in rows
                        ]
                    ),
                ],
            )
            return
        adapt = connection.ops.adapt_datetimefield_value
        rows = [
            (metric, dim, grain, adapt(hour), ident, key, count, seconds)
            for (metric, dim, grain, hour, ident, key), (count, seconds) in rows
        ]
        cursor.execute(
            f"INSERT INTO {table} ({columns}) VALUES {', '.join(['(%s, %s, %s, %s, %s, %s, %s, %s, %s)'] * len(rows))} "
            f"{upsert}",
            [value for row in rows for value in (license_id, *row)],
        )


def forget(license_id: int, ticket_ids) -> None:
    """The purge's: subtract what these tickets (about to be deleted, with their metrics) contribute."""
    delta: dict = {}
    created = dict(
        TicketMetrics.objects.filter(license_id=license_id, ticket_id__in=ticket_ids).values_list(
            "ticket_id", "ticket__created_at"
        )
    )
    for metrics in TicketMetrics.objects.filter(license_id=license_id, ticket_id__in=ticket_ids):
        contribution(state_of_metrics(metrics, created[metrics.ticket_id]), -1, delta)
    reported = TicketResolution.objects.filter(
        license_id=license_id, ticket_id__in=ticket_ids, silo__in=REPORTED_SILOS
    )
    resolution_contribution(_resolved(reported), -1, delta)
    add(license_id, delta)


# What a resolution's rows read (its ticket's current assignee and teams through the ticket's metrics row).
_RESOLVED = ("solved_at", "seconds", "business_seconds", "agent_id", "team_id", "current_agent", "teams")
_RESOLVED_EXPRESSIONS = {
    "current_agent": F("ticket__metrics__assignee_id"),
    "teams": F("ticket__metrics__teams"),
}


def _resolved(resolutions):
    return resolutions.annotate(**_RESOLVED_EXPRESSIONS).values(*_RESOLVED)


_CURRENT = ("rating",)  # and every status.*: the ticket's current assignee, which a deletion sets to none


def _reads_current(metric: str) -> bool:
    """Whether the metric's rows per agent or team are of the ticket's assignee now (not of who answered)."""
    return metric.startswith("status.") or metric in _CURRENT


def _move(rows, dim: str, to: str, delta: dict) -> None:
    """Rows of `dim` to the same rows of ident `to`."""
    for row in rows:
        for sign, who in ((-1, row.ident), (1, to)):
            values = delta.setdefault((row.metric, dim, row.grain, row.hour, who, row.key), [0, 0.0])
            values[0] += sign * row.count
            values[1] += sign * row.seconds


def unassign(license_id: int, dim: str, ident) -> None:
    """An agent (dim "a") or a team ("t") is deleted: its tickets' assignment becomes none (SET_NULL), so do
    the rows of the metrics that read the current assignee (and an agent's "c" rows), and the copies on the
    metrics rows; a team's links go too (`_unlink_team`)."""
    ident = _ident(ident)
    delta: dict = {}
    _move(_rows(license_id, dim, ident=ident, current=True), dim, "", delta)
    if dim == _AGENT:
        _move(_rows(license_id, _CURRENT_AGENT, ident=ident), _CURRENT_AGENT, "", delta)
    else:
        _unlink_team(license_id, ident, delta)
    add(license_id, delta)
    field = "assignee_id" if dim == _AGENT else "assigned_team_id"
    TicketMetrics.objects.filter(license_id=license_id, **{field: ident}).update(**{field: None})


def _unlink_team(license_id: int, team: str, delta: dict) -> None:
    """A deleted team's links go with it (CASCADE): every set of teams holding it becomes the set without it,
    its rows and its members' rows the other set's, and the metrics rows' copies of the links lose it."""
    members = _rows(license_id, _MEMBER, metric=TEAMS_METRIC)
    keys = {row.key for row in members if row.ident == team}
    sets: dict = {}
    for row in members:
        if row.key in keys:
            sets.setdefault(row.key, []).append(row)
    for key, rows in sets.items():
        smaller = tuple(sorted(row.ident for row in rows if row.ident != team))
        count = next(row.count for row in rows if row.ident == team)  # every member's: the set's tickets
        for member, change in [(row.ident, -row.count) for row in rows] + [(m, count) for m in smaller]:
            member_key = key if change < 0 else team_set_key(smaller)
            delta.setdefault((TEAMS_METRIC, _MEMBER, HOUR, EPOCH, member, member_key), [0, 0.0])[0] += change
        _move(_rows(license_id, _VISIBLE, ident=key), _VISIBLE, team_set_key(smaller), delta)
    table, cut = TicketMetrics._meta.db_table, "replace(',' || teams || ',', %s, ',')"
    with connection.cursor() as cursor:  # the sorted list without the team, in every silo
        cursor.execute(
            f"UPDATE {table} SET teams = CASE WHEN {cut} = ',' THEN '' ELSE substr({cut}, 2, length({cut}) - 2) "
            "END WHERE license_id = %s AND teams LIKE %s",
            [f",{team},"] * 3 + [license_id, f"%{team}%"],
        )


# --- rebuilding ------------------------------------------------------------------------------------------------


def rebuild(license_id: int, *, chunk: int = 20_000) -> int:
    """Recount the license's rollups from its tickets, metrics and resolutions (in one transaction): the copies
    on the metrics rows are set from the tickets first (a missing metrics row is made, source `system`).
    Returns the rows written."""
    from tickets.models import Ticket

    with transaction.atomic():
        missing = Ticket.objects.filter(license_id=license_id, metrics__isnull=True)
        TicketMetrics.objects.bulk_create(
            TicketMetrics(ticket_id=pk, license_id=license_id, source="system", created_at=created, silo=silo)
            for pk, created, silo in missing.values_list("pk", "created_at", "silo").iterator(
                chunk_size=chunk
            )
        )
        _copy_tickets(license_id)
        totals = expected(license_id, chunk=chunk)
        ReportRollup.objects.filter(license_id=license_id).delete()
        adapt_rows = [
            ReportRollup(
                license_id=license_id, metric=m, dim=d, grain=g, hour=h, ident=i, key=k, count=c, seconds=s
            )
            for (m, d, g, h, i, k), (c, s) in totals.items()
            if c or s
        ]
        ReportRollup.objects.bulk_create(adapt_rows, batch_size=5000)
    return len(adapt_rows)


def expected(license_id: int, *, chunk: int = 20_000) -> dict:
    """The rollups the license's rows make now, recomputed (the rebuild's, and the tests' reference)."""
    totals: dict = {}
    names = ["silo", "status", "assignee_id", "assigned_team_id", "rated_at", "rating", "source"]
    names += [
        "first_response_at",
        "first_response_seconds",
        "first_response_agent_id",
        "first_response_team_id",
        "teams",
        "first_response_business_seconds",
    ]
    rows = TicketMetrics.objects.filter(license_id=license_id).values_list("ticket__created_at", *names)
    for created_at, *values in rows.iterator(chunk_size=chunk):
        state = dict(zip(["silo", "status", "agent", "team", "rated_at", "rating", "source", "response_at",
                          "response_seconds", "response_agent", "response_team", "teams", "response_business"],
                         values, strict=True))  # fmt: skip
        state["teams"] = team_set(state["teams"])
        contribution(state | {"created_at": created_at}, 1, totals)
    resolutions = TicketResolution.objects.filter(license_id=license_id, silo__in=REPORTED_SILOS)
    resolution_contribution(_resolved(resolutions).iterator(chunk_size=chunk), 1, totals)
    return {k: v for k, v in totals.items() if v[0] or v[1]}


def _copy_tickets(license_id: int) -> None:
    from tickets.models import TicketTeam

    metrics, tickets, links = TicketMetrics._meta.db_table, "tickets_ticket", TicketTeam._meta.db_table
    # the team links, sorted, on PostgreSQL in the same statement; SQLite's group_concat neither sorts nor spells
    # UUIDs as Python does: through Python (`_copy_team_links`)
    teams = (
        f", teams = coalesce((SELECT string_agg(l.team_id::text, ',' ORDER BY l.team_id) FROM {links} l "
        "WHERE l.ticket_id = t.id), '')"
        if connection.vendor == "postgresql"
        else ""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {metrics} SET silo = t.silo, status = t.status, assignee_id = t.assignment_agent_id, "
            "assigned_team_id = t.assignment_team_id, rated_at = t.rated_at, rating = t.rating_score, "
            f"created_at = t.created_at, resolved = (SELECT count(*) FROM {TicketResolution._meta.db_table} r "
            f"WHERE r.ticket_id = t.id){teams} FROM {tickets} t WHERE t.id = {metrics}.ticket_id "
            f"AND {metrics}.license_id = %s",
            [license_id],
        )
    if not teams:
        _copy_team_links(license_id)


def _copy_team_links(license_id: int) -> None:
    from tickets.models import TicketTeam

    links: dict = {}
    for ticket_id, team_id in TicketTeam.objects.filter(license_id=license_id).values_list(
        "ticket_id", "team_id"
    ):
        links.setdefault(ticket_id, []).append(str(team_id))
    changed = []
    for row in TicketMetrics.objects.filter(license_id=license_id).only("ticket_id", "teams"):
        teams = ",".join(sorted(links.get(row.ticket_id, ())))
        if row.teams != teams:
            row.teams = teams
            changed.append(row)
    TicketMetrics.objects.bulk_update(changed, ["teams"], batch_size=1000)


def stored(license_id: int) -> dict:
    """The license's rollups as kept (zero rows left out): compared with `expected` by the tests and --check."""
    rows = ReportRollup.objects.filter(license_id=license_id).exclude(count=0, seconds=0)
    return {(r.metric, r.dim, r.grain, r.hour, r.ident, r.key): [r.count, r.seconds] for r in rows.order_by()}


# --- reading ---------------------------------------------------------------------------------------------------


def metric_of(report: Report, query) -> str:
    if report.name.startswith("status"):
        return f"status.{query.status}"
    metric = next(metric for prefix, metric in _METRICS.items() if report.name.startswith(prefix))
    return BUSINESS[metric] if query.clock == "business" else metric


def _metrics(report: Report, query) -> list[str]:
    """The metrics whose rows add up to the report: with `agentIDs[]`, newTickets is the sum of the status.*
    metrics (a reported ticket is in exactly one status, and they have the agent rows `new` has not)."""
    metric = metric_of(report, query)
    if metric == "new" and query.agent_ids:
        from tickets.models import STATUSES

        return [f"status.{status}" for status in STATUSES]
    return [metric]


# The metrics whose agent rows name the ticket's assignee now, as `agentIDs[]` selects tickets (`new` through
# the status.* metrics). The first response's and the resolution's name who answered and who solved: their
# current assignee is in their "c" rows. The team rows name the assigned team, which is not `teamIDs[]` (the
# teams a ticket is visible to): the "v" rows, per set of visible teams.
_BY_ASSIGNEE = ("new", "rating")
_BY_CURRENT_AGENT = ("response", "resolution", *BUSINESS.values())


def _assignee_filter(report: Report, query) -> bool:
    """Whether `agentIDs[]` alone is summed from the agent rows (the listed agents' rows: a ticket has one
    assignee, so none counts twice): from the "a" rows, also per agent; from the "c" rows, not per agent or
    team (they would need two agents per row)."""
    metric = metric_of(report, query)
    if metric in _BY_CURRENT_AGENT:
        return report.layout in (SERIES, HOURS)
    return (metric in _BY_ASSIGNEE or metric.startswith("status.")) and report.layout != TEAMS


def covers(report: Report, query) -> bool:
    """Whether the rollups answer this report exactly as its rows would (counts) or within the histogram's
    precision (percentiles): no ticket filter but `agentIDs[]` where the agent rows are the assignee's or
    `teamIDs[]` alone (not per agent or team: the "v" rows hold no agent or team), whole UTC hours at both ends,
    a whole-hour offset throughout."""
    if report.name == "failedEmails" or query.tag_ids or query.license_ids:
        return False
    if query.team_ids and (query.agent_ids or report.layout not in (SERIES, HOURS)):
        return False
    if query.agent_ids and not _assignee_filter(report, query):
        return False
    if report.family not in (COUNT, TIME, RATING, SOURCES):
        return False
    inner = _ceil_hour(query.start), _hour(query.end)
    if inner[0] >= inner[1]:  # less than one whole hour
        return False
    return whole_hour_offsets(query.tz, query.start, query.end)


def _ceil_hour(moment: datetime.datetime) -> datetime.datetime:
    hour = _hour(moment)
    return hour if hour == moment else hour + datetime.timedelta(hours=1)


def whole_hour_offsets(tz, start, end) -> bool:
    """The zone's offset is whole hours at both ends and at every change in between (sampled every 15 days: a
    zone changes its offset at most a few times a year)."""
    moment = start
    while True:
        if tz.utcoffset(moment.astimezone(tz).replace(tzinfo=None)).total_seconds() % 3600:
            return False
        if moment >= end:
            return True
        moment = min(moment + datetime.timedelta(days=15), end)


def run(report: Report, query, starts: list, edge_parts) -> tuple[dict, dict | None] | None:
    """({bucket key: values}, the summary or None for the buckets' sum) from the rollups, for
    tickets.reports.selectors to shape; `starts`: the series' bucket starts. The range's parts of an hour at
    either end come from the rows: `edge_parts(start, end)` gives them as {bucket key: [(key, n, seconds)]}.
    None: read the rows."""
    start, end = _ceil_hour(query.start), _hour(query.end)
    dim = {AGENTS: _AGENT, TEAMS: _TEAM}.get(report.layout, _AGENT if query.agent_ids else _ALL)
    listed = Q(ident__in=[str(agent) for agent in query.agent_ids]) if query.agent_ids else Q()
    if query.agent_ids and metric_of(report, query) in _BY_CURRENT_AGENT:
        dim = _CURRENT_AGENT
    if query.team_ids:  # the sets holding any of the teams: each ticket counted once, as its rows' EXISTS
        dim, listed = _VISIBLE, Q(ident__in=_sets_of(query.license_id, query.team_ids))
    if report.layout == HOURS:  # the hour of the day: hour rows only
        ranges = Q(grain=HOUR, hour__gte=start, hour__lt=end)
    elif report.layout == SERIES:
        edges = sorted({min(max(moment, start), end) for moment in starts} | {start, end})
        ranges = cover(list(zip(edges, edges[1:], strict=False)))
    else:
        ranges = cover([(start, end)])
    metrics = _metrics(report, query)
    rows = ReportRollup.objects.filter(
        ranges, listed, license_id=query.license_id, dim=dim,
        **({"metric": metrics[0]} if len(metrics) == 1 else {"metric__in": metrics}),
    )  # fmt: skip
    if report.layout == SERIES:
        key = Trunc("hour", query.interval, tzinfo=query.tz)
    elif report.layout == HOURS:
        key = ExtractHour("hour", tzinfo=query.tz)
    else:
        key = F("ident")
    if report.family == TIME and sql_percentiles() and (start, end) == (query.start, query.end):
        found, summary = _time_in_sql(rows.annotate(_key=key))  # no edges: every bucket whole in the rollups
        if _exact_from_rows(summary["count"], query, metrics[0], ranges):
            return None  # few rows: their exact percentiles cost less than the target
        found = {_wall(bucket_key, report, query): values for bucket_key, values in found.items()}
        if report.layout not in (SERIES, HOURS):
            found = {(uuid.UUID(k) if k else None): v for k, v in found.items()}
        return found, summary
    grouped: dict = {}
    for bucket_key, part_key, n, seconds in _sums(rows.annotate(_key=key)):
        if n:
            grouped.setdefault(_wall(bucket_key, report, query), []).append((part_key, n, seconds))
    for piece in ((query.start, start), (end, query.end)):
        if piece[0] < piece[1]:
            for bucket_key, parts in edge_parts(*piece).items():
                grouped.setdefault(_wall(bucket_key, report, query), []).extend(parts)
    if report.family == TIME and _exact_from_rows(
        sum(n for parts in grouped.values() for _, n, _ in parts), query, metrics[0], ranges
    ):
        return None  # few rows: their exact percentiles cost less than the target
    found = {key: _values(report, parts) for key, parts in grouped.items()}
    if report.layout not in (SERIES, HOURS):
        found = {(uuid.UUID(k) if k else None): v for k, v in found.items()}
    summary = None
    if report.family == TIME:
        summary = _values(report, [part for parts in grouped.values() for part in parts])
    return found, summary


def _exact_from_rows(count: int, query, metric: str, ranges) -> bool:
    """Whether a time report of `count` rows reads them instead (exact percentiles): when they are few and, with
    `teamIDs[]`/`agentIDs[]`, the license's rows in the range are few too, as the rows' statement reads them all
    and filters them through their tickets (one agent's ~2,900 responses of 30 days among ~57,000 at 1M tickets:
    460-490 ms from the rows, 4 ms from the rollups; bench/README.md, "Rollups, part 3")."""
    if count > exact_limit():
        return False
    if not (query.team_ids or query.agent_ids):
        return True
    rows = ReportRollup.objects.filter(ranges, license_id=query.license_id, metric=metric, dim=_ALL)
    return (rows.aggregate(n=Sum("count"))["n"] or 0) <= exact_limit()


def _sets_of(license_id: int, team_ids):
    """The keys of the sets of visible teams holding any of `team_ids` (a subquery)."""
    members = ReportRollup.objects.filter(
        license_id=license_id, metric=TEAMS_METRIC, dim=_MEMBER, grain=HOUR, hour=EPOCH,
        ident__in=[str(team) for team in team_ids],
    )  # fmt: skip
    return members.values("key")


def _sums(rows):
    """(bucket key, part key, rows, seconds) per group. On PostgreSQL through the cursor: Django's converters
    (a time zone conversion per row) cost more than the statement over a year of histogram rows (6,700 rows:
    240 -> 40 ms)."""
    grouped = rows.values("_key", "key").annotate(n=Sum("count"), s=Sum("seconds")).order_by()
    if connection.vendor != "postgresql":
        return [(row["_key"], row["key"], row["n"], row["s"]) for row in grouped]
    sql, params = grouped.values_list("_key", "key", "n", "s").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(key, part, int(n), float(seconds)) for key, part, n, seconds in cursor.fetchall()]


def sql_percentiles() -> bool:
    """Whether the time reports' percentiles are located in SQL (`_time_in_sql`); else `_values` reads every
    histogram bucket (the same numbers)."""
    return connection.vendor == "postgresql"


def _time_in_sql(rows) -> tuple[dict, dict]:
    """({bucket key: time values}, the summary) of a time report's rollups, the percentiles of each bucket
    located in SQL: per bucket its rows, seconds and only the histogram buckets around the ranks its median and
    p90 need (the rows before each found by a window's running sum), so Python reads ~2 rows per bucket instead
    of ~25-50 (a year of days, bench/README.md: 9,195 -> 770); the summary's histogram is grouped in the same
    statement. The values are `_values`' own (the same ranks and interpolation), PostgreSQL only."""
    grouped = rows.values("_key", "key").annotate(n=Sum("count"), s=Sum("seconds")).order_by()
    sql, params = grouped.values_list("_key", "key", "n", "s").query.sql_with_params()
    # the ranks each fraction needs, int((count - 1) * f) and the next, in integers (tenths: 0.5 and 0.9) with one
    # rank of slack either way for Python's float product
    ranks = [f"(count - 1) * {round(fraction * 10)} / 10" for fraction in _FRACTIONS]
    near = " OR ".join(f"(seen <= {rank} + 2 AND seen + n > {rank} - 1)" for rank in ranks)
    statement = f"""
        WITH parts (bucket, part, n, s) AS ({sql}),
        ranked AS (
            SELECT bucket, part, n, s, sum(n) OVER w - n AS seen, sum(n) OVER b AS count, sum(s) OVER b AS total
            FROM (SELECT bucket, part::int AS part, n::int AS n, s FROM parts WHERE n <> 0) AS nonzero
            WINDOW b AS (PARTITION BY bucket), w AS (b ORDER BY part))
        SELECT bucket, part, n, s, seen, count, total FROM ranked WHERE {near}
        UNION ALL
        SELECT NULL, part::int, sum(n)::bigint, sum(s), NULL, NULL, NULL FROM parts WHERE n <> 0 GROUP BY part::int"""
    buckets: dict = {}
    histogram, count, total = [], 0, 0.0
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        for bucket_key, part, n, seconds, seen, in_bucket, seconds_in_bucket in cursor.fetchall():
            if seen is None:  # the summary's histogram
                histogram.append((part, int(n)))
                count, total = count + int(n), total + float(seconds)
                continue
            found = buckets.setdefault(bucket_key, (int(in_bucket), float(seconds_in_bucket), []))
            found[2].append((int(seen), part, int(n)))
    values = {
        key: _time_values(n, seconds, sorted(located)) for key, (n, seconds, located) in buckets.items()
    }
    if not count:
        return values, {"count": 0, "averageSeconds": None, "medianSeconds": None, "p90Seconds": None}
    return values, _time_values(count, total, _located(sorted(histogram)))


def _wall(bucket_key, report: Report, query):
    """A bucket's key as one form whatever read it: series, the bucket's wall start (naive); hours, an int."""
    if report.layout == SERIES:
        return (
            bucket_key if bucket_key.tzinfo is None else bucket_key.astimezone(query.tz).replace(tzinfo=None)
        )
    if report.layout == HOURS:
        return int(bucket_key)
    return bucket_key


def cover(pieces) -> Q:
    """The rows that add up to each [start, end) of `pieces` (whole hours): the UTC days wholly inside one from
    their day rows, the rest from hour rows; adjacent ranges of one grain merged."""
    found = {HOUR: [], DAY: []}
    for start, end in pieces:
        first_day = _ceil_day(start)
        last_day = end.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        if first_day < last_day:
            found[DAY].append((first_day, last_day))
            found[HOUR] += [(start, first_day), (last_day, end)]
        else:
            found[HOUR].append((start, end))
    condition = Q(pk__in=[])
    for grain, ranges in found.items():
        merged: list = []
        for start, end in sorted(r for r in ranges if r[0] < r[1]):
            if merged and merged[-1][1] >= start:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        for start, end in merged:
            condition |= Q(grain=grain, hour__gte=start, hour__lt=end)
    return condition


def _ceil_day(moment: datetime.datetime) -> datetime.datetime:
    day = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day if day == moment else day + datetime.timedelta(days=1)


def exact_limit() -> int:
    return getattr(settings, "REPORTS_EXACT_PERCENTILE_ROWS", EXACT_PERCENTILE_ROWS)


def _values(report: Report, parts) -> dict:
    if report.family == COUNT:
        return {"count": sum(n for _, n, _ in parts)}
    if report.family == RATING:
        good = sum(n for key, n, _ in parts if key == "good")
        bad = sum(n for key, n, _ in parts if key == "bad")
        return {"good": good, "bad": bad, "count": good + bad}
    if report.family == SOURCES:
        values = {name: {"count": 0} for name in SOURCE_NAMES}
        for key, n, _ in parts:
            values[key if key in SOURCE_NAMES else "system"]["count"] += n
        return values
    histogram: dict = {}
    total, count = 0.0, 0
    for key, n, seconds in parts:
        index = int(key)
        histogram[index] = histogram.get(index, 0) + n
        total += seconds
        count += n
    return _time_values(count, total, _located(sorted(histogram.items())))


_FRACTIONS = (0.5, 0.9)


def _time_values(count: int, total: float, located: list) -> dict:
    """A time report's values of `count` rows, `total` seconds and `located`: [(rows before, bucket, rows)] by
    bucket, at least the buckets holding the ranks the percentiles read."""
    median, p90 = (percentile(located, count, fraction) for fraction in _FRACTIONS)
    return {
        "count": count,
        "averageSeconds": round(total / count, 1),
        "medianSeconds": round(median, 1),
        "p90Seconds": round(p90, 1),
    }


def _located(ordered: list) -> list:
    """[(bucket, rows)] by bucket -> [(rows before, bucket, rows)]."""
    located, seen = [], 0
    for index, n in ordered:
        located.append((seen, index, n))
        seen += n
    return located


def percentile(located: list, count: int, fraction: float) -> float:
    """percentile_cont's interpolation between ranks, each rank's value read from its bucket as if the bucket's
    values were spread evenly over it; `located`: [(rows before, bucket, rows)] by bucket."""
    position = (count - 1) * fraction
    low = int(position)
    value_low, value_high = _ranked(located, low), _ranked(located, min(low + 1, count - 1))
    return value_low + (value_high - value_low) * (position - low)


def _ranked(located: list, rank: int) -> float:
    for seen, index, n in located:
        if seen <= rank < seen + n:
            lower = 0.0 if index == 0 else BOUNDS[index - 1]
            upper = BOUNDS[index] if index < len(BOUNDS) else lower * RATIO
            return lower + (upper - lower) * (rank - seen + 0.5) / n
    raise AssertionError("rank beyond the histogram")  # pragma: no cover
