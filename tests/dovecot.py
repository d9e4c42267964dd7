"""A real IMAP server for the tests: Debian's Dovecot (`apt-get install dovecot-imapd`; tests/run.sh installs it),
started with a throwaway configuration in a temporary folder: loopback ports of its own (one per xdist worker,
since each worker starts its own), passwd-file users, Maildirs in the folder, no system users, a self-signed
certificate made here (its PEM is the CA file a test trusts). Under root Dovecot refuses to run its login
processes as root: they run as Debian's `dovenull` and `dovecot` users then, and the mail as `nobody`.
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DOVECOT = shutil.which("dovecot") or ("/usr/sbin/dovecot" if os.path.exists("/usr/sbin/dovecot") else None)


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


def _certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def _users() -> dict[str, str]:
    if os.getuid() != 0:
        me = pwd.getpwuid(os.getuid())
        return {"internal": me.pw_name, "login": me.pw_name, "uid": str(me.pw_uid), "gid": str(me.pw_gid)}
    nobody = pwd.getpwnam("nobody")
    return {"internal": "dovecot", "login": "dovenull", "uid": str(nobody.pw_uid), "gid": str(nobody.pw_gid)}


CONFIG = """
base_dir = {dir}/run
state_dir = {dir}/state
log_path = {dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
login_trusted_networks = 127.0.0.0/8
default_internal_user = {internal}
default_internal_group = {internal}
default_login_user = {login}
first_valid_uid = 1
mail_location = maildir:{dir}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {dir}/users/%u
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={dir}/mail/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {ssl_port}
  }}
}}
service anvil {{
  chroot =
}}
"""


class Dovecot:
    def __init__(self):
        # not under pytest's tmp_path: its parents are private to us, and Dovecot's own users must get in
        folder = self.dir = Path(tempfile.mkdtemp(prefix="dovecot-"))
        (folder / "mail").mkdir()
        os.chmod(folder, 0o755)
        os.chmod(folder / "mail", 0o777)  # the mail processes run as another user under root
        self.cert, key = _certificate(folder)
        os.chmod(key, 0o644)
        self.port, self.ssl_port = _free_port(), _free_port()
        (
            folder / "users"
        ).mkdir()  # a passwd-file per user: a new user is a new file, nothing cached to go stale
        self.config = folder / "dovecot.conf"
        self.config.write_text(
            CONFIG.format(
                dir=folder, cert=self.cert, key=key, port=self.port, ssl_port=self.ssl_port, **_users()
            )
        )
        self.process = subprocess.Popen(
            [DOVECOT, "-F", "-c", str(self.config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self._wait()
        self._users: dict[str, str] = {}

    def _wait(self) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dovecot exited: {self.process.stderr.read().decode()} {self.log()}")
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            time.sleep(0.05)
        raise RuntimeError(f"dovecot did not start: {self.log()}")

    def log(self) -> str:
        path = self.dir / "dovecot.log"
        return path.read_text() if path.exists() else ""

    def add_user(self, name: str, password: str) -> None:
        """A new account."""
        self._users[name] = password
        path = self.dir / "users" / name
        path.write_text(f"{name}:{{PLAIN}}{password}::::::nodelay\n")  # no delay after a wrong password
        os.chmod(path, 0o644)

    def client(self, user: str) -> imaplib.IMAP4:
        client = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        client.login(user, self._users[user])
        return client

    def deliver(self, user: str, *messages: bytes, folder: str = "INBOX") -> None:
        """Put messages into the account's folder (IMAP APPEND, as a delivery agent would)."""
        client = self.client(user)
        try:
            for raw in messages:
                typ, data = client.append(folder, None, None, raw)
                assert typ == "OK", data
        finally:
            client.logout()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
