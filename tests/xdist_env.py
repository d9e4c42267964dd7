"""Each pytest-xdist worker gets its own Redis database and var/ folder (tests/run.sh loads this plugin).

`-p tests.xdist_env` imports this module before pytest-django reads the settings, so the environment set here
is what helpdesk/settings.py (and every subprocess a test starts) sees. What would otherwise be shared between
workers: the cache, which each test empties with FLUSHDB (REDIS_URL's database: worker N uses the given number
plus N, so 13 with two workers is 13 and 14), the Celery broker's queues and RedBeat's lock in that database,
and on the embedded default the file-system cache, queue and media under HELPDESK_VAR_DIR (worker N uses a
`gwN` folder inside it). The PostgreSQL test database is already one per worker (pytest-django adds `_gwN`).
"""

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... (xdist sets it before the worker starts)


def _redis_url_of_worker(url: str, number: int) -> str:
    parts = urlsplit(url)
    database = int(parts.path.strip("/") or 0) + number
    if database > 15:  # the cache ignores Redis's errors: an out-of-range database would be a silent no-op
        raise SystemExit(
            f"xdist worker {WORKER} would use Redis database {database}: lower REDIS_URL's number"
        )
    return urlunsplit(parts._replace(path=f"/{database}"))


if WORKER:
    number = int(WORKER.removeprefix("gw"))
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = _redis_url_of_worker(os.environ["REDIS_URL"], number)
    root = Path(__file__).resolve().parent.parent
    var_dir = Path(os.environ.get("HELPDESK_VAR_DIR") or root / "var") / WORKER
    var_dir.mkdir(parents=True, exist_ok=True)
    os.environ["HELPDESK_VAR_DIR"] = str(var_dir)
