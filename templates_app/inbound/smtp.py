"""The SMTP/LMTP entrance (aiosmtpd): recipients are checked at RCPT time (550 for an address that names no
license of ours), the message goes through inbound_message_receive at DATA time.

aiosmtpd runs an asyncio loop; the ORM is synchronous, so every database step runs in a small thread pool
(each thread keeps its own connection; a mail or recipient check that finds it dead, a restarted database's,
runs once more on a new one, see `_in_thread`). Replies:
- 250 stored (also a duplicate, or a deliberately dropped loop);
- 550 5.1.1 unknown recipient (RCPT) / unknown license (DATA);
- 552 5.3.4 too large (aiosmtpd's own size check answers 552 too, and the EHLO SIZE extension announces it);
- 451 4.3.0 temporary failure (database trouble): the client retries, and a retry stores nothing twice.
With LMTP, DATA gets one reply per accepted recipient, in RCPT order (RFC 2033).

One process runs Python on one core at a time (the GIL), so `serve_forked` runs several: the parent binds the
port once (an address in use fails there, loudly), forks the children, which all accept on that one socket,
and on SIGTERM/SIGINT stops them and waits for the mails they are storing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, connections

from templates_app import send_relay
from templates_app.addresses import parse_inbound_address
from templates_app.inbound.selectors import license_copy
from templates_app.inbound.services import MessageTooLarge, UnknownRecipient, inbound_message_receive

logger = logging.getLogger("helpdesk.inbound")

OK = "250 2.0.0 Message accepted"
UNKNOWN = "550 5.1.1 No such recipient: no help desk receives mail at this address"
TOO_LARGE = "552 5.3.4 Message too large"
TEMPORARY = "451 4.3.0 Temporary failure, please try again later"


def _in_thread(function, *args):
    close_old_connections()  # CONN_MAX_AGE; a connection an error left unusable
    # No health check (Django's SELECT 1 before the first statement after close_old_connections, CONN_HEALTH_CHECKS)
    # before each mail: a connection found dead by the mail's own statements is replaced and the mail runs once
    # more (`_once_more_if_dead`). Issue 34: a round trip and a statement of the server's less per mail; the
    # client's instructions hardly change (23.99 -> 23.95 M, bench/mail_in.py --instructions; bench/README.md).
    connection.health_check_done = True
    try:
        return function(*args)
    finally:
        close_old_connections()


def _once_more_if_dead(function, *args):
    """`function(*args)`, run again once on a new connection when its connection turned out to be dead (a restarted
    PostgreSQL): what the client would do after a 451, without the 451. Safe for a mail: nothing of it was
    committed, or its commit went through and the retry finds it a duplicate (its Message-ID)."""
    opened = connection.connection is not None  # a connection kept from an earlier mail, maybe dead since
    try:
        return function(*args)
    except DatabaseError:
        if not opened or connection.in_atomic_block:
            raise
        if connection.connection is not None:
            close_old_connections()  # after an error: closed when is_usable() fails (the unit of work's rollback
            # closes it already when the rollback fails)
        if connection.connection is not None:
            raise  # the connection works: the error was the statement's (the usual 451)
        logger.warning("inbound mail: the database connection was dead, trying once more on a new one")
    return function(*args)


def _license_of(address: str) -> int | None:
    inbound = parse_inbound_address(address)
    # the copy DATA then uses: no statement
    if inbound is None or _once_more_if_dead(license_copy, inbound.license_id) is None:
        return None
    return inbound.license_id


def _deliver(raw: bytes, recipients: list[str], mail_from: str) -> str:
    try:
        _once_more_if_dead(
            lambda: inbound_message_receive(raw=raw, recipients=recipients, envelope_sender=mail_from)
        )
    except UnknownRecipient:
        return UNKNOWN
    except MessageTooLarge as exc:
        return f"{TOO_LARGE}: {exc}"
    except Exception:
        # database trouble (or a bug): a temporary failure keeps the mail at the sender's MTA, never lost
        logger.exception("inbound mail: temporary failure for %s", ", ".join(recipients))
        return TEMPORARY
    return OK


class InboundHandler:
    def __init__(self, *, lmtp: bool = False, workers: int = 4):
        self.lmtp = lmtp
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="smtp-inbound")

    def shutdown(self) -> None:
        """Close every worker thread's database connection, then the pool (each thread holds its own)."""
        workers = self.executor._max_workers
        barrier = threading.Barrier(workers)

        def close():
            barrier.wait(timeout=10)  # one task per thread: every thread runs exactly one of these
            connections.close_all()

        for future in [self.executor.submit(close) for _ in range(workers)]:
            future.result()
        self.executor.shutdown(wait=True)

    async def _run(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self.executor, _in_thread, function, *args)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        try:
            license_id = await self._run(_license_of, address)
        except Exception:
            logger.exception("inbound mail: temporary failure checking %s", address)
            return TEMPORARY
        if license_id is None:
            logger.warning("inbound mail refused at RCPT: no license for %s", address)
            return UNKNOWN
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content or envelope.content
        mail_from = "" if envelope.mail_from in (None, "", "<>") else envelope.mail_from
        # one delivery per license among the recipients (each license stores its own copy)
        groups: dict[int, list[str]] = {}
        for address in envelope.rcpt_tos:
            inbound = parse_inbound_address(address)
            groups.setdefault(inbound.license_id if inbound else 0, []).append(address)
        replies = {}
        for recipients in groups.values():
            reply = await self._run(_deliver, raw, recipients, mail_from)
            replies.update(dict.fromkeys(recipients, reply))
        if self.lmtp:
            return "\r\n".join(replies[address] for address in envelope.rcpt_tos)
        # SMTP has one reply: a temporary failure of any copy makes the client retry (the others dedupe)
        ordered = list(replies.values())
        for prefix in ("451", "552", "550"):
            failed = [reply for reply in ordered if reply.startswith(prefix)]
            if failed and (prefix == "451" or len(failed) == len(ordered)):
                return failed[0]
        return OK


class InboundController(Controller):
    """aiosmtpd's threaded controller; `sock`: accept on this listening socket (shared with sibling processes)
    instead of binding hostname:port."""

    def __init__(self, handler: InboundHandler, *, sock: socket.socket | None = None, **kwargs):
        kwargs.setdefault("data_size_limit", settings.INBOUND_MAX_MESSAGE_BYTES)
        super().__init__(handler, **kwargs)
        self.sock = sock

    def _create_server(self):
        if self.sock is None:
            return super()._create_server()
        return self.loop.create_server(self._factory_invoker, sock=self.sock, ssl=self.ssl_context)

    def _trigger_server(self):
        if self.sock is None:
            return super()._trigger_server()
        # aiosmtpd checks its factory with a test connection, which a sibling process could accept: call the
        # factory in the loop's thread instead
        self.loop.call_soon_threadsafe(self._factory_invoker)
        return None

    def start(self, *args, **kwargs):
        # the acknowledgements' send tasks, published in batches off the mails' threads (templates_app.send_relay)
        self.relay = send_relay.Relay()
        self.relay.start()
        send_relay.install(self.relay)
        super().start(*args, **kwargs)

    def stop(self, *args, **kwargs):
        try:
            super().stop(*args, **kwargs)
            self.handler.shutdown()
        finally:
            send_relay.uninstall(self.relay)  # publishes what waits

    def factory(self):
        server_class = _LongLinesLMTP if self.handler.lmtp else _LongLinesSMTP
        return server_class(self.handler, **self.SMTP_kwargs)


# Lines of any length up to the message size limit, as the receive_mail pipe takes them: a sender's 5,000-character
# line is stored, not refused with aiosmtpd's permanent "500 Line too long". `line_length_limit` is aiosmtpd's
# public attribute (read when a connection starts); an over-size message still gets 552 from the size check,
# and commands keep their own 512-octet limit.
class _LongLinesSMTP(SMTP):
    @property
    def line_length_limit(self):
        return max(SMTP.line_length_limit, settings.INBOUND_MAX_MESSAGE_BYTES + 3)


class _LongLinesLMTP(LMTP):
    @property
    def line_length_limit(self):
        return max(LMTP.line_length_limit, settings.INBOUND_MAX_MESSAGE_BYTES + 3)


def make_controller(
    *, host: str, port: int, lmtp: bool = False, workers: int = 4, sock: socket.socket | None = None
) -> InboundController:
    return InboundController(
        InboundHandler(lmtp=lmtp, workers=workers),
        sock=sock,
        hostname=host,
        port=port,
        # not a user-facing mail server: no AUTH, and large messages are read whole before the size reply
        ident="helpdesk inbound",
    )


# --- running ------------------------------------------------------------------------------------------------

_stop = threading.Event()  # set by SIGTERM/SIGINT; each process (parent, child) has its own


def _on_stop_signal(signum, frame) -> None:
    _stop.set()


def serve(controller: InboundController, *, ready=None) -> None:
    """Run `controller` until SIGTERM or SIGINT, then stop it (in-flight mails are finished first)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_stop_signal)
    controller.start()
    if ready is not None:
        ready()
    try:
        _stop.wait()
    finally:
        controller.stop()


def serve_forked(*, host: str, port: int, lmtp: bool, workers: int, processes: int, ready=None) -> int:
    """`processes` listener processes accepting on one socket; returns the exit status (0: stopped by a signal,
    1: a child died, and then the others are stopped too, so that the supervisor restarts the whole)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_stop_signal)
    listening = socket.create_server((host, port), backlog=128)
    connections.close_all()  # a connection must never be shared across a fork
    children = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:  # the child: serve on the inherited socket until told to stop, never return
            status = 1
            try:
                serve(make_controller(host=host, port=port, lmtp=lmtp, workers=workers, sock=listening))
                status = 0
            except BaseException:
                logger.exception("smtp_inbound: listener process %s failed", os.getpid())
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        children.append(pid)
    listening.close()  # the children hold it; the port is free again once they are gone
    if ready is not None:
        ready()
    status = 0
    while not _stop.is_set():
        pid, code = os.waitpid(-1, os.WNOHANG)
        if pid:
            logger.error("smtp_inbound: listener process %s exited (%s): stopping the others", pid, code)
            children.remove(pid)
            status = 1
            break
        _stop.wait(0.5)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in children:
        os.waitpid(pid, 0)
    return status
