"""The admin index's dashboard, per license: the reads (a selector) behind tickets/templatetags/dashboard.py.

A fixed number of queries whatever the number of licenses, tickets or failures shown (one per panel, each
grouped or windowed by license): the index page stays as fast for an operator of many licenses as for an owner.
Only the first MAX_LICENSES licenses are shown at once; `?license=<id>` shows one.

The e-mail app (above tickets) fills its part of the panels, the failed mail, through `register_part` from its
admin module (templates_app/admin.py), loaded with the admin before any page.
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db.models import Count, F, Max, Window
from django.db.models.functions import RowNumber
from django.http import Http404, HttpResponse
from django.utils import timezone

from accounts.admin.tenancy import admin_license_ids, license_label
from accounts.models import License
from tickets.models import Ticket, TicketTeam
from tickets.models_purge import PurgeRun
from tickets.reports import definitions  # noqa: F401 - the reports the chart reads
from tickets.reports.registry import REPORTS
from tickets.reports.selectors import Query, counts_by_license
from tickets.webhooks.models import STATUS_FAILING, Webhook, WebhookDelivery

DAYS = 30
OLDEST = 5
MAX_LICENSES = 10
FAILING_WEBHOOKS = 5


@dataclass
class Day:
    date: datetime.date
    created: int = 0
    solved: int = 0


@dataclass
class LicensePanel:
    license: License
    label: str
    teams: list[dict] = field(default_factory=list)  # {"name", "open", "pending"}
    days: list[Day] = field(default_factory=list)
    oldest: list[Ticket] = field(default_factory=list)
    nearest_breach: list[Ticket] = field(default_factory=list)  # running SLA clocks, nearest due first
    mail_failures: int = 0  # the e-mail app's part (templates_app/admin.py)
    last_mail_failure: datetime.datetime | None = None
    delivery_failures: int = 0
    last_delivery_failure: datetime.datetime | None = None
    failing_webhooks: list[Webhook] = field(default_factory=list)
    purged: dict | None = None  # the last purge run's counts for this license

    @property
    def created_total(self) -> int:
        return sum(day.created for day in self.days)

    @property
    def solved_total(self) -> int:
        return sum(day.solved for day in self.days)


# Parts of the panels that apps above tickets fill: `part(panels, license_ids)` sets its fields on the panels
# ({license ID: LicensePanel}) in one query, grouped by license.
PARTS: list[Callable[[dict, list[int]], None]] = []


def register_part(part: Callable[[dict, list[int]], None]) -> None:
    if part not in PARTS:
        PARTS.append(part)


@dataclass
class Dashboard:
    panels: list[LicensePanel]
    license_count: int
    last_purge: PurgeRun | None


def dashboard(license_ids: list[int] | None, *, only: int | None = None, now=None) -> Dashboard:
    """The panels of the licenses in `license_ids` (None: every license, for a superuser)."""
    now = now or timezone.now()
    licenses = License.objects.order_by("pk")
    if license_ids is not None:
        licenses = licenses.filter(pk__in=license_ids)
    if only is not None:
        licenses = licenses.filter(pk=only)
    shown = list(licenses[:MAX_LICENSES])
    license_count = len(shown) if len(shown) < MAX_LICENSES else licenses.count()
    panels = {lic.pk: LicensePanel(license=lic, label=license_label(lic)) for lic in shown}
    last_purge = PurgeRun.objects.order_by("-started_at").first()
    if not panels:
        return Dashboard(panels=[], license_count=license_count, last_purge=last_purge)
    ids = list(panels)

    _teams(panels, ids)
    _days(panels, ids, now)
    _oldest(panels, ids)
    _nearest_breach(panels, ids)
    _failures(panels, ids)
    for part in PARTS:
        part(panels, ids)
    if last_purge is not None:
        for pk, panel in panels.items():
            panel.purged = last_purge.counts.get(str(pk))
    return Dashboard(panels=list(panels.values()), license_count=license_count, last_purge=last_purge)


def _teams(panels, ids) -> None:
    rows = (
        TicketTeam.objects.filter(license_id__in=ids, silo="tickets", status__in=["open", "pending"])
        .values("license_id", "team_id", "team__name", "status")
        .annotate(n=Count("ticket_id"))
    )
    teams: dict = {}
    for row in rows:
        key = (row["license_id"], row["team_id"])
        team = teams.setdefault(key, {"name": row["team__name"], "open": 0, "pending": 0})
        team[row["status"]] = row["n"]
    for (license_id, _), team in sorted(teams.items(), key=lambda item: item[1]["name"].lower()):
        panels[license_id].teams.append(team)


def _days(panels, ids, now) -> None:
    """Created and solved per day: the reports `newTickets` and `resolutionTime` (tickets/reports/), counted for
    every shown license in one statement each, in the site's time zone."""
    today = timezone.localdate(now)
    first = today - datetime.timedelta(days=DAYS - 1)
    tz = timezone.get_current_timezone()
    since = timezone.make_aware(datetime.datetime.combine(first, datetime.time()), tz)
    until = timezone.make_aware(
        datetime.datetime.combine(today + datetime.timedelta(days=1), datetime.time()), tz
    )
    for panel in panels.values():
        panel.days = [Day(first + datetime.timedelta(days=n)) for n in range(DAYS)]
    query = Query(license_id=0, license_ids=tuple(ids), start=since, end=until, tz=tz, interval="day")
    for name, attr in (("newTickets", "created"), ("resolutionTime", "solved")):
        for (license_id, wall), count in counts_by_license(REPORTS[name], query).items():
            index = (wall.date() - first).days
            if 0 <= index < DAYS:
                setattr(panels[license_id].days[index], attr, count)


def _oldest(panels, ids) -> None:
    """The open tickets waiting longest since their last message, OLDEST per license, in one query."""
    rank = Window(RowNumber(), partition_by=[F("license_id")], order_by=[F("last_message_at").asc(), F("id")])
    rows = (
        Ticket.objects.filter(license_id__in=ids, silo="tickets", status="open")
        .annotate(rank=rank)
        .filter(rank__lte=OLDEST)
        .select_related("assignment_team", "assignment_agent")
        .order_by("license_id", "rank")
    )
    for ticket in rows:
        panels[ticket.license_id].oldest.append(ticket)


def _nearest_breach(panels, ids) -> None:
    """The tickets whose SLA clock runs out first (overdue ones, not yet recorded, first), OLDEST per license, in
    one query on the partial index (license, sla_due_at, id)."""
    rank = Window(RowNumber(), partition_by=[F("license_id")], order_by=[F("sla_due_at").asc(), F("id")])
    rows = (
        Ticket.objects.filter(license_id__in=ids, silo="tickets", sla_due_at__isnull=False)
        .annotate(rank=rank)
        .filter(rank__lte=OLDEST)
        .only("id", "license_id", "short_id", "subject", "sla_due_at", "sla")
        .order_by("license_id", "rank")
    )
    for ticket in rows:
        panels[ticket.license_id].nearest_breach.append(ticket)


def _failures(panels, ids) -> None:
    deliveries = (
        WebhookDelivery.objects.filter(license_id__in=ids, status=WebhookDelivery.FAILED)
        .values("license_id")
        .annotate(n=Count("id"), last=Max("created_at"))
    )
    for row in deliveries:
        panel = panels[row["license_id"]]
        panel.delivery_failures, panel.last_delivery_failure = row["n"], row["last"]
    rank = Window(RowNumber(), partition_by=[F("license_id")], order_by=[F("updated_at").desc(), F("id")])
    failing = (
        Webhook.objects.filter(license_id__in=ids, status=STATUS_FAILING)
        .annotate(rank=rank)
        .filter(rank__lte=FAILING_WEBHOOKS)
        .order_by("license_id", "rank")
    )
    for webhook in failing:
        panels[webhook.license_id].failing_webhooks.append(webhook)


def created_solved_csv(request):
    """The chart's numbers as CSV (`?license=<id>`, one of the user's licenses): date, created, solved."""
    only = request.GET.get("license", "")
    allowed = admin_license_ids(request)
    if not only.isdigit() or (allowed is not None and int(only) not in allowed):
        raise Http404
    license = License.objects.filter(pk=int(only)).first()
    if license is None:
        raise Http404
    panels = {license.pk: LicensePanel(license=license, label=license_label(license))}
    _days(panels, [license.pk], timezone.now())
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="license-{license.pk}-created-solved.csv"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow(["date", "created", "solved"])
    for day in panels[license.pk].days:
        writer.writerow([day.date.isoformat(), day.created, day.solved])
    writer.writerow(["total", panels[license.pk].created_total, panels[license.pk].solved_total])
    return response
