"""A real DNS server on loopback for the tests (dnslib): UDP and TCP on one free port, answering TXT look-ups from
`records` ({name: [value, ...]}), NXDOMAIN for any other name. `HELPDESK_DNS_RESOLVER` points the product at it."""

from __future__ import annotations

import socket
import threading

from dnslib import QTYPE, RCODE, RR, TXT
from dnslib.server import BaseResolver, DNSLogger, DNSServer


class Zone(BaseResolver):
    def __init__(self):
        self.records: dict[str, list[str]] = {}
        self.queries: list[str] = []

    def publish(self, name: str, value: str) -> None:
        self.records.setdefault(name.rstrip(".").lower(), []).append(value)

    def resolve(self, request, handler):
        reply = request.reply()
        name = str(request.q.qname).rstrip(".").lower()
        self.queries.append(name)
        values = self.records.get(name)
        if values is None:
            reply.header.rcode = RCODE.NXDOMAIN
        elif request.q.qtype == QTYPE.TXT:
            for value in values:
                data = value.encode()
                chunks = [data[i : i + 255] for i in range(0, len(data), 255)]  # TXT strings hold 255 bytes
                reply.add_answer(RR(request.q.qname, QTYPE.TXT, rdata=TXT(chunks), ttl=60))
        return reply


class _Quiet(DNSLogger):
    def __init__(self):
        super().__init__(log="-request,-reply,-truncated,-error,-recv,-send,-data", prefix=False)


def _free_port() -> int:
    """A port free for both UDP and TCP on 127.0.0.1."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            port = udp.getsockname()[1]
            with socket.socket() as tcp:
                try:
                    tcp.bind(("127.0.0.1", port))
                except OSError:
                    continue
        return port
    raise RuntimeError("no free port for the test DNS server")


class DnsServer:
    def __init__(self):
        self.zone = Zone()
        self.port = _free_port()
        self._servers = [
            DNSServer(self.zone, address="127.0.0.1", port=self.port, tcp=tcp, logger=_Quiet())
            for tcp in (False, True)
        ]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def publish(self, name: str, value: str) -> None:
        self.zone.publish(name, value)

    def start(self):
        # serve_forever's loop polls for shutdown every 0.05 s (socketserver's default, 0.5 s, made every stop of
        # the two servers wait ~1 s: a second of each DNS test's teardown)
        self._threads = [
            threading.Thread(target=server.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            for server in self._servers
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self):
        for server in self._servers:
            server.server.shutdown()
            server.server.server_close()
