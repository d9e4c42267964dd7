"""The send tasks of a process that stores mail all day (smtp_inbound), published in batches by a thread of its own.

Every new ticket by mail queues its acknowledgement (an OutboundMessage row, committed with the ticket) and then
publishes the row's send task. Through Celery and kombu one publish costs ~2.8 M interpreter instructions (a
callgrind count of 100 publishes: the task message built, routed, serialized, a Redis client made for the LPUSH):
9% of a new ticket's 32.8 M, paid on the mail's thread before its 250 (bench/README.md, "Issue 34: mail in,
around ticket_create"). In a process with a relay the mail's thread only hands the committed row's ID over; the
relay thread waits `LINGER` seconds after the first ID, then publishes everything handed over meanwhile as one
task (`send_outbound_messages`; a lone ID as the usual `send_outbound_message`). At 50 mails/s per process that
is one publish per ~10 mails (and one task for a worker to receive instead of ten); the acknowledgement leaves
at most `LINGER` later.

Nothing is lost or sent twice by it: the IDs are handed over after the commit, so a row exists for each; a batch
that cannot be published (the broker away), or IDs still waiting when the process dies, are rows still pending,
which the sweeper enqueues again (templates_app.mail.sweep, as for any lost enqueue); `deliver()` claims a row
once, whichever task (or how many) names it. Stopping the relay publishes what waits.
"""

from __future__ import annotations

import logging
import threading

from django.db import connections, transaction

from helpdesk.queue import enqueue_now

log = logging.getLogger(__name__)

SEND_TASK = "templates_app.tasks.send_outbound_message"
SEND_MANY_TASK = "templates_app.tasks.send_outbound_messages"
LINGER = 0.2  # seconds from the first waiting ID to the publish
MOST = 200  # IDs per task


class Relay:
    def __init__(self, *, linger: float = LINGER):
        self.linger = linger
        self._waiting: list[str] = []
        self._wake = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="send-relay", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, message_id: str) -> None:
        with self._wake:
            self._waiting.append(message_id)
            if len(self._waiting) == 1:
                self._wake.notify()

    def stop(self) -> None:
        """Publish what waits, then end the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            while True:
                with self._wake:
                    while not self._waiting and not self._stopping:
                        self._wake.wait()
                    if not self._waiting:
                        return
                    # more rows commit meanwhile; a stop publishes at once
                    self._wake.wait_for(lambda: self._stopping, timeout=self.linger)
                    batch, self._waiting = self._waiting, []
                for start in range(0, len(batch), MOST):
                    publish(batch[start : start + MOST])
        finally:
            connections.close_all()  # an eager task (the tests) ran here with a connection of this thread


def publish(message_ids: list[str]) -> bool:
    """One task for these rows; False (logged by enqueue_now) if the broker cannot be reached: the rows stay
    pending for the sweeper."""
    if len(message_ids) == 1:
        return enqueue_now(SEND_TASK, message_ids[0])
    return enqueue_now(SEND_MANY_TASK, message_ids)


_relay: Relay | None = None  # this process's, while one runs


def install(relay: Relay) -> None:
    """Make `relay` (started) this process's: from now on `send_after_commit` hands rows to it."""
    global _relay
    _relay = relay


def uninstall(relay: Relay) -> None:
    """Stop handing rows to `relay` (if it is the process's); then stop it, which publishes what waits."""
    global _relay
    if _relay is relay:
        _relay = None
    relay.stop()


def send_after_commit(message_id: str) -> None:
    """Send the row once the current transaction commits: through the process's relay when one runs, else its
    own task at once (helpdesk.queue.enqueue_on_commit)."""

    def hand_over():
        relay = _relay
        if relay is None:
            enqueue_now(SEND_TASK, message_id)
        else:
            relay.add(message_id)

    transaction.on_commit(hand_over)
