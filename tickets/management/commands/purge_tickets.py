"""Operators: `purge_tickets --dry-run` shows what the purge would delete; without it, purges now."""

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.models import License
from helpdesk.context import HELPDESK_SYSTEM, Actor, acting_as
from tickets import purge


class Command(BaseCommand):
    help = (
        "Purge spam tickets PURGE_SPAM_DAYS and trash tickets PURGE_TRASH_DAYS after their last update "
        "(the scheduled purge, run now). --dry-run only counts, per license."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="count per license and silo; delete nothing"
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, dry_run, no_progress, **options):
        cutoff = purge.cutoffs()
        self.stdout.write(
            f"Spam updated on or before {cutoff['spam']:%Y-%m-%d %H:%M:%S} UTC ({settings.PURGE_SPAM_DAYS} days), "
            f"trash on or before {cutoff['trash']:%Y-%m-%d %H:%M:%S} UTC ({settings.PURGE_TRASH_DAYS} days)."
        )
        total = purge.count_eligible(cutoff)
        # The bar only for runs of more than one batch, on stderr so that stdout stays a plain report.
        bar = tqdm(
            total=total,
            unit="ticket",
            disable=no_progress or total <= settings.PURGE_BATCH_SIZE,
            file=self.stderr._out,
        )
        started = time.monotonic()
        with bar:
            if dry_run:
                lost = purge.preview(progress=bar.update)
            else:
                with acting_as(Actor(type=HELPDESK_SYSTEM)):
                    result = purge.purge_expired(trigger="command", progress=bar.update)
                if result.skipped:
                    raise CommandError("Another purge is running (it holds the lock); nothing was deleted.")
                lost = result.counts
        seconds = time.monotonic() - started
        self._table(lost)
        if dry_run:
            self.stdout.write(f"Dry run: nothing was deleted ({seconds:.2f} s).")
        else:
            run = result.run
            self.stdout.write(
                f"Purge run {run.pk} {run.status}: deleted {run.tickets_deleted} tickets and "
                f"{run.files_deleted} attachment files in {seconds:.2f} s."
            )

    def _table(self, lost: dict) -> None:
        if not lost:
            self.stdout.write("No ticket is due for purging.")
            return
        names = {lic.pk: str(lic) for lic in License.objects.filter(pk__in=list(lost))}
        width = max(len("license"), *(len(names.get(pk, str(pk))) for pk in lost))
        self.stdout.write(f"{'license':<{width}}  {'spam':>8}  {'trash':>8}")
        for pk in sorted(lost):
            self.stdout.write(
                f"{names.get(pk, str(pk)):<{width}}  {lost[pk]['spam']:>8}  {lost[pk]['trash']:>8}"
            )
        spam = sum(c["spam"] for c in lost.values())
        trash = sum(c["trash"] for c in lost.values())
        self.stdout.write(f"{'total':<{width}}  {spam:>8}  {trash:>8}")
