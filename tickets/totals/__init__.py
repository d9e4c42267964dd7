"""Exact totals for ticket search: cached per license generation and filter set, carried across writes.

Entry points for writers and readers, and nothing else of this package is used outside it:
- writers: `changing(license_id, ticket_ids)`, called by a write inside its unit of work
  (helpdesk.transactions.unit_of_work) once it holds the tickets' row locks and before it changes them;
  `new=True` for tickets it is about to create; no IDs when it changes the license's tickets in ways it does
  not list (a purge): their totals are then counted again;
- readers: `exact_count(queryset, license, digest=None)`, the search's total (tickets.selectors), and
  `exact_counts(querysets, license, digests=None)`, several at once with one cache round trip for those cached (the saved views' counts);
  `count_sql(queryset)`, the SQL a total counts, which `exact_count` also takes instead of the queryset.
tickets.apps connects the package at ready() (`wiring.connect`): the model signals that catch every change of
tickets no write declared, and the search generation joined into the API's caller query.

Reading (`reading.py`). A count is cached under the license, the license's *generation* and a digest naming
the filter set: the search's applied filter values (`TicketFilterSet.count_digest`: relative dates resolved,
and what a filter reads besides its value; one digest, one SQL), else a digest of the filtered query's SQL.
The search's SQL is then compiled only on a miss; a miss's count runs with `TICKET_COUNT_WORK_MEM` and no JIT. The generation lives in PostgreSQL, not in the cache:
`SearchGeneration.value` (a row per license), raised by every transaction that changes the license's tickets,
in that transaction. A miss counts with one statement that also reads the generation, so the count and the
generation come from the same snapshot and the entry stored under generation G is the exact count at G (not
"at least G"). A request looks its entry up under the generation its authentication loaded (`wiring.py`).

Writing (`writing.py`). Every write to tickets runs in a unit of work; its bookkeeping here, finished by the
unit's last before-commit callback (after the audit's and any other, so every write takes its final locks in
one order), is the one place that keeps totals:
- a write declares, once it holds the rows' locks and before it changes them, the tickets it will change or
  create (`changing`); a change of a license's teams, tags or agents that reaches its tickets without such a
  declaration (a cascade) only drops the totals;
- at its end, in the write's transaction, the unit of work raises each license's generation (G → G'), locking
  the generation rows in license ID order, after every other lock of the write (docs/architecture.md, "Locks
  are taken in one order"), and so drops every total;
- and, for an exact declared write, it *carries* totals over: each license keeps a small registry (in the
  cache, `registry.py`) of the filter sets whose count was expensive; `changing` re-tests the declared tickets
  against them in one statement that also reads the generation (how many rows each set counts among those
  tickets, before the change, at generation G0). At the end the generation is raised from G to G'; only if
  G0 = G (no other write committed in between, so the re-test saw the tickets as they are at G, links
  included) is anything carried: still inside the transaction, with the generation row locked by the raise
  (so no other write of the license can commit before this one), one statement re-tests the same tickets
  again, which is the state at G' (a unit of work inside a bare atomic() block, whose transaction goes on
  after it, carries nothing); right after the commit every entry cached under G becomes, under G', its count
  plus the difference, and each set gets a *step* (G -> G', difference). New tickets counted nowhere before.
  A miss rolls the set's newest known count forward through the steps (`reading._roll_forward`): a count that
  takes longer than the time between two writes (300-500 ms for common words at 1M tickets, against 200 ms
  between writes at 5/s) is stored under a generation the next write has already left; without the steps it
  would never be carried. A step exists only for an exact write, so a drop ends every chain.
The registry admits a set on its second expensive count (or at once when very expensive), so that one-off
searches do not push out the ones a license runs all day; idle sets, then cheap ones, leave it. With
TICKET_COUNT_CARRY_SETS=0 nothing is registered and every write drops its license's totals.
A miss is counted by one request at a time per filter set; the others wait for its count.
A lost cache write, a Redis outage or a generation that moved on only mean a miss later: nothing that decides
what is exact is kept in Redis. A unit of work nested in another (a bulk action of the admin calls the
services in its own unit of work) is part of the outer one: one bookkeeping, one raise of the generation.

By construction: model signals (`wiring.py`) report every saved ticket, every change of a ticket's teams, tags
or followers, and the deletion of a team, tag or agent (whose cascades change tickets without a ticket save).
Inside a unit of work an undeclared change turns that license's write into a plain drop; outside any unit of
work the signal raises the generation itself. `QuerySet.update()` sends no signal: the services use it only on
tickets they declared, and a test walks every write path.

Why the generation is in PostgreSQL: the earlier design kept it in Redis, and an increment lost during an
outage served a stale total once Redis came back. The new value is at least the current time in microseconds,
so a generation is not reused after a database restore rewinds the column; still flush the cache (or change
CACHE_KEY_PREFIX) after a restore. Why in a row of its own, not a column of the license: a team's or an agent's
deletion locks the license row and then, through its cascade, tickets; a ticket write locks its ticket and, at
its end, the generation. With the generation on the license row the two deadlocked (PostgreSQL aborted one).
"""

from tickets.totals.keys import GENERATION_SQL
from tickets.totals.reading import count_sql, exact_count, exact_counts, generation_unloaded
from tickets.totals.writing import changing

__all__ = ["GENERATION_SQL", "changing", "count_sql", "exact_count", "exact_counts", "generation_unloaded"]
