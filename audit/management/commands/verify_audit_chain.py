from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit import chain, digests


class Command(BaseCommand):
    help = (
        "Recompute the audit log's hash chains, check them against the retention purges and the chain heads "
        "published in AUDIT_DIGEST_DIR, and report the first problem of each license."
    )

    def add_arguments(self, parser):
        parser.add_argument("--license", type=int, help="verify only this license's chain")
        parser.add_argument(
            "--digest-dir", help="read the published digests from here (default: AUDIT_DIGEST_DIR)"
        )

    def handle(self, *args, license=None, digest_dir=None, **options):
        if digest_dir:
            settings.AUDIT_DIGEST_DIR = digest_dir
        if license is not None:
            ids = [license]
        else:  # a license whose whole chain vanished still has its digests
            ids = sorted(set(chain.license_ids()) | set(digests.published_license_ids()))
        broken = 0
        for license_id in ids:
            published, problems = digests.load(license_id)
            report = chain.verify(license_id, published)
            problem = problems[0] if problems else report.problem
            if not problem:
                after = (
                    f"; starts at seq {report.anchor_seq + 1} after retention purges"
                    if report.anchor_seq
                    else ""
                )
                self.stdout.write(
                    f"license {license_id}: OK ({report.entries} entries){after}; "
                    f"{report.digests} published digest(s) hold"
                )
            else:
                broken += 1
                self.stderr.write(f"license {license_id}: BROKEN at {problem}")
        if broken:
            raise CommandError(f"{broken} of {len(ids)} audit chain(s) broken")
        self.stdout.write(self.style.SUCCESS(f"{len(ids)} audit chain(s) OK"))
