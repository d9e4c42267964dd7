from celery import shared_task

from audit import digests
from audit.services import audit_entries_purge


@shared_task
def purge_expired_audit_entries() -> int:
    return audit_entries_purge()


@shared_task
def publish_audit_digests() -> int:
    return digests.publish()
