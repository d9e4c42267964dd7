from django.core.management.base import BaseCommand, CommandError

from audit import chain


class Command(BaseCommand):
    help = "Recompute the audit log's hash chains and report the first broken link of each license."

    def add_arguments(self, parser):
        parser.add_argument("--license", type=int, help="verify only this license's chain")

    def handle(self, *args, license=None, **options):
        ids = [license] if license is not None else chain.license_ids()
        broken = 0
        for license_id in ids:
            report = chain.verify(license_id)
            if report.ok:
                self.stdout.write(f"license {license_id}: OK ({report.entries} entries)")
            else:
                broken += 1
                self.stderr.write(f"license {license_id}: BROKEN at {report.problem}")
        if broken:
            raise CommandError(f"{broken} of {len(ids)} audit chain(s) broken")
        self.stdout.write(self.style.SUCCESS(f"{len(ids)} audit chain(s) OK"))
