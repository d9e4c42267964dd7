"""A real HTTP receiver for webhook tests: a threaded http.server on 127.0.0.1 (ephemeral port) that keeps
what it gets and answers with the status codes it is told (200 once the list is used up)."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclasses.dataclass
class Received:
    path: str
    headers: dict
    body: bytes


class Receiver:
    def __init__(self):
        self.received: list[Received] = []
        self.answers: list[int] = []
        self.always: int | None = None
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.received.append(Received(self.path, dict(self.headers.items()), body))
                code = receiver.always or (receiver.answers.pop(0) if receiver.answers else 200)
                payload = (b"thanks " if code < 300 else b"broken ") + b"x" * 3000  # more than a KB
                self.send_response(code)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def verify(secret: str, headers, body: bytes, tolerance: int = 300) -> bool:
    """docs/api.md's receiver check, copied verbatim (keep them the same)."""
    timestamp = headers["X-Webhook-Timestamp"]
    if abs(time.time() - int(timestamp)) > tolerance:  # refuse replays of old deliveries
        return False
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers["X-Webhook-Signature"], f"v1={expected}")
