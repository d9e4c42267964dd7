"""`manage.py rebuild_report_rollups [--license ID ...] [--check]`: recount the reports' rollups from the tickets,
their metrics and resolutions (tickets.reports.rollups.rebuild), one license per transaction; with --check,
compare them with a recount instead and exit 1 when they differ."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from accounts.models import License
from tickets.reports import rollups


class Command(BaseCommand):
    help = "Rebuild (or --check) the reports' rollups of every license, or of the licenses given."

    def add_arguments(self, parser):
        parser.add_argument("--license", type=int, action="append", dest="licenses", help="a license ID")
        parser.add_argument("--check", action="store_true", help="compare with a recount; change nothing")

    def handle(self, *args, licenses=None, check=False, **options):
        ids = licenses or list(License.objects.order_by("pk").values_list("pk", flat=True))
        differing = []
        for license_id in ids:
            started = time.perf_counter()
            if check:
                kept, recount = rollups.stored(license_id), rollups.expected(license_id)
                wrong = {k for k in kept.keys() | recount.keys() if kept.get(k) != recount.get(k)}
                if wrong:
                    differing.append(license_id)
                self.stdout.write(f"license {license_id}: {len(wrong)} rollup rows differ")
                continue
            rows = rollups.rebuild(license_id)
            self.stdout.write(
                f"license {license_id}: {rows} rollup rows ({time.perf_counter() - started:.1f} s)"
            )
        if differing:
            raise CommandError(f"rollups differ from a recount in licenses {differing}")
