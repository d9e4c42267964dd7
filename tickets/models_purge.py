"""Records of the spam/trash purge (tickets/purge.py): runs for operators, and files still to delete.

Neither is license-owned: a run crosses licenses, as only operator work may. Loaded by TicketsConfig.ready()
so that tickets/models.py stays the tickets' own.
"""

from django.db import models
from django.utils import timezone

RUN_RUNNING, RUN_FINISHED, RUN_FAILED, RUN_INTERRUPTED = "running", "finished", "failed", "interrupted"
RUN_STATUSES = [RUN_RUNNING, RUN_FINISHED, RUN_FAILED, RUN_INTERRUPTED]


class PurgeRun(models.Model):
    """One purge run: when, what started it, the cutoffs, and how many tickets each license lost per silo.

    `counts` is {"<license id>": {"spam": n, "trash": n, "seconds": s}}, updated in the transaction of every
    batch, so even a run that was killed shows exactly what it deleted. `seconds` is the license's share of
    the time spent in batches (batches cross licenses).
    """

    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=[(s, s) for s in RUN_STATUSES], default=RUN_RUNNING)
    trigger = models.CharField(max_length=12, default="schedule")  # schedule, command
    spam_cutoff = models.DateTimeField()
    trash_cutoff = models.DateTimeField()
    counts = models.JSONField(default=dict, blank=True)
    tickets_deleted = models.PositiveIntegerField(default=0)
    files_deleted = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["-started_at"], name="purge_run_started")]

    def __str__(self):
        return f"purge run {self.pk} ({self.status})"

    @property
    def seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class PurgedFile(models.Model):
    """A stored attachment file whose rows a committed purge batch deleted, until it is gone from storage.

    Written in the batch's transaction and removed once the file is deleted after the commit, so that a
    process killed between the commit and the file deletion leaves a note for the next run.
    """

    name = models.CharField(max_length=500)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return self.name
