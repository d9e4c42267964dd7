"""`make run`'s supervisor: starts the service's processes, stops them all on Ctrl-C, and exits 0.

    python -m helpdesk.supervisor 'web=python manage.py runserver --noreload' 'worker=celery -A helpdesk worker'

Each child runs in a session of its own, so Ctrl-C in the terminal reaches only the supervisor (not a worker
half-way through a task, nor make): it then sends SIGTERM to each child (a Celery worker's warm shutdown stops
its pool and beat), waits up to --grace seconds, and kills what is left of each child's process group.
A user stop (SIGINT, SIGTERM) exits 0, so make prints no "*** Terminated"/"Interrupt"; a child that dies on its own
stops the others and its exit status becomes the supervisor's (1 if it was killed by a signal).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time


class Supervisor:
    def __init__(self, commands: dict[str, list[str]], *, grace: float = 10.0, out=sys.stderr):
        self.commands, self.grace, self.out = commands, grace, out
        self.children: dict[str, subprocess.Popen] = {}
        self.stop_requested = False

    def say(self, text: str) -> None:
        print(f"[run] {text}", file=self.out, flush=True)

    def _request_stop(self, signum, frame) -> None:
        if not self.stop_requested:
            self.say(f"{signal.Signals(signum).name}: stopping {', '.join(self.children)} ...")
        self.stop_requested = True

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self._request_stop)
        for name, argv in self.commands.items():
            if self.stop_requested:
                break
            self.children[name] = subprocess.Popen(argv, start_new_session=True)
            self.say(f"{name} started (pid {self.children[name].pid}): {shlex.join(argv)}")
        failed: tuple[str, int] | None = None
        while not self.stop_requested and failed is None:
            for name, child in self.children.items():
                if child.poll() is not None:
                    failed = (name, child.returncode)
                    self.say(f"{name} exited with status {child.returncode}: stopping the others")
                    break
            else:
                time.sleep(0.2)
        self._stop_all()
        if failed is not None and not self.stop_requested:
            return failed[1] if failed[1] > 0 else 1
        self.say("stopped")
        return 0

    def _signal_group(self, child: subprocess.Popen, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # the child leads its group: its own children go too
            os.killpg(child.pid, signum)

    def _stop_all(self) -> None:
        for child in self.children.values():
            # the leader only: a Celery worker stops its own pool (a pool process signalled too is logged as
            # an error); whatever the leader leaves behind is killed with its group below
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for name, child in self.children.items():
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                self.say(f"{name} did not stop within {self.grace:g}s: killing it")
                self._signal_group(child, signal.SIGKILL)
                child.wait()
            # a group may outlive its leader (a worker's pool process): nothing of it may be left behind
            self._signal_group(child, signal.SIGKILL)


def parse(argv: list[str]) -> tuple[dict[str, list[str]], float]:
    parser = argparse.ArgumentParser(prog="python -m helpdesk.supervisor", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--grace", type=float, default=10.0, help="seconds a child gets to stop (default: 10)"
    )
    parser.add_argument("command", nargs="+", help="NAME=COMMAND LINE, e.g. 'web=python manage.py runserver'")
    args = parser.parse_args(argv)
    commands = {}
    for spec in args.command:
        name, _, line = spec.partition("=")
        if not name or not line.strip():
            parser.error(f"not NAME=COMMAND: {spec!r}")
        commands[name] = shlex.split(line)
    return commands, args.grace


def main(argv: list[str] | None = None) -> int:
    commands, grace = parse(sys.argv[1:] if argv is None else argv)
    return Supervisor(commands, grace=grace).run()


if __name__ == "__main__":
    sys.exit(main())
