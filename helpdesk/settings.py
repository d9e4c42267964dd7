"""Settings, read from environment variables only (see the README's configuration table).

With nothing set the service runs on the embedded default: SQLite and a file-system task queue under
`var/` in the project folder, so a newcomer sees the whole product without installing servers.
"""

import secrets
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from helpdesk.env import env_bool, env_header, env_int, env_list, env_str
from helpdesk.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("HELPDESK_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# On by default so that the embedded default runs with nothing set; production sets DEBUG=false.
DEBUG = env_bool("DEBUG", True)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (production)")
    # Development: one random key kept under var/, so sessions and signed links survive restarts.
    path = VAR_DIR / "dev-secret-key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS. Secure by default when DEBUG is off (`manage.py check --deploy` is clean); each one can be set.
# Behind a proxy that terminates TLS, set SECURE_PROXY_SSL_HEADER (e.g. "X-Forwarded-Proto: https") so that
# the redirect sees HTTPS requests as such; it is off by default because a header is only trustworthy when
# the proxy always sets it (a client could send it too).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_PROXY_SSL_HEADER = env_header("SECURE_PROXY_SSL_HEADER")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)

INSTALLED_APPS = [
    # admin modules are imported by helpdesk/urls.py (admin.autodiscover()), not at start-up: a command that
    # serves no pages (receive_mail, run by the MTA once per mail) starts faster without them
    "accounts.console.ConsoleAdminConfig",  # SimpleAdminConfig whose site admits every active agent
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "templates_app",
    "tickets",
    "billing",
    "audit",
    "oauth2_provider",  # after accounts: our oauth2_provider/authorize.html template wins
    "corsheaders",
]

MIDDLEWARE = [
    "helpdesk.logs.RequestLogMiddleware",
    "helpdesk.replicas.ReplicaMiddleware",  # after a write, the caller's WAL position (only with replicas)
    "django.middleware.security.SecurityMiddleware",
    "corsheaders.middleware.CorsMiddleware",  # before anything that may answer (preflights, errors)
    "helpdesk.api.middleware.ApiRequestMiddleware",
    "helpdesk.api.ratelimit.RateLimitHeadersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "audit.middleware.AdminActorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "helpdesk.urls"
WSGI_APPLICATION = "helpdesk.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "helpdesk" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: DATABASE_URL (postgres://user@host:5432/name), else SQLite under var/.
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'helpdesk.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # The web server, the worker's processes and the SMTP listener write to one file. WAL: readers never wait
    # for a writer. IMMEDIATE: a transaction takes the write lock when it begins, waiting up to `timeout`
    # seconds for it (the busy timeout), so it never has to upgrade a read into a write half-way, the upgrade
    # SQLite refuses at once with "database is locked" when another writer committed in between.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # The report rollups' covering index (tickets.reports.models) INCLUDEs columns on PostgreSQL only; SQLite
    # keeps the index on its key columns, which is all it needs: no warning on every command of the default.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A PostgreSQL outage answers 503 fast (libpq's minimum is 2 s) instead of hanging a worker; the
    # health check at the start of each request replaces a pooled connection that died while it was away.
    # A partition (no RST, a pooled connection waiting on a dead peer) is cut by the kernel after
    # DB_TCP_USER_TIMEOUT_MS of unacknowledged data or of failed keepalives (idle connections), and a
    # statement running longer than DB_STATEMENT_TIMEOUT_MS is cancelled by the server: both end in the
    # API's 503 within seconds, not in gunicorn killing its worker after a minute.
    _tcp_user_timeout = env_int("DB_TCP_USER_TIMEOUT_MS", 5000)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "connect_timeout": env_int("DB_CONNECT_TIMEOUT", 3),
            "keepalives": 1,
            "keepalives_idle": max(_tcp_user_timeout // 2000, 1),
            "keepalives_interval": 1,
            "keepalives_count": 3,
            "tcp_user_timeout": _tcp_user_timeout,
        }
    )
    # Behind PgBouncer in transaction pooling (docs/operations.md, "Scaling out"): no server-side cursors (a
    # `WITH HOLD` cursor outlives the transaction, and the next one may run on another server connection), and
    # no `options` startup parameter (PgBouncer refuses it): set statement_timeout on the role instead.
    DB_PGBOUNCER = env_bool("DB_PGBOUNCER", False)
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = DB_PGBOUNCER
    if env_int("DB_STATEMENT_TIMEOUT_MS", 30000) > 0 and not DB_PGBOUNCER:
        DATABASES["default"]["OPTIONS"]["options"] = (
            f"-c statement_timeout={env_int('DB_STATEMENT_TIMEOUT_MS', 30000)}"
        )
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # The statements' values sent apart from their text (psycopg's server-side binding, with no prepared
    # statements: Django leaves `prepare_threshold` None) instead of quoted into it in Python: ~140 values per
    # ticket create, ~0.5 M of its interpreter instructions (bench/README.md, "Issue 34: fifth round"). Off by
    # default behind PgBouncer, whose support for it the suite does not check (docs/operations.md).
    DATABASES["default"]["OPTIONS"]["server_side_binding"] = env_bool(
        "DB_SERVER_SIDE_BINDING", not DB_PGBOUNCER
    )
# --- Read replicas: DATABASE_REPLICA_URLS (comma-separated postgres:// URLs of streaming replicas of the
# primary). Searches, view counts, reports and the admin's lists read from one that has replayed the caller's
# last write (helpdesk/replicas.py); everything else uses the primary.
DATABASE_REPLICAS = []
for _index, _url in enumerate(
    u.strip() for u in env_str("DATABASE_REPLICA_URLS", "").split(",") if u.strip()
):
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL.")
    _replica = dj_database_url.parse(_url, conn_max_age=DATABASES["default"]["CONN_MAX_AGE"])
    _replica["OPTIONS"] = {**DATABASES["default"]["OPTIONS"], **_replica.get("OPTIONS", {})}
    _replica["CONN_HEALTH_CHECKS"] = True
    _replica["TEST"] = {"MIRROR": "default"}  # the test runner creates no database for it
    DATABASES[f"replica_{_index}"] = _replica
    DATABASE_REPLICAS.append(f"replica_{_index}")
DATABASE_ROUTERS = ["helpdesk.replicas.ReplicaRouter"] if DATABASE_REPLICAS else []
DATABASE_REPLICA_MAX_LAG_SECONDS = env_int("DATABASE_REPLICA_MAX_LAG_SECONDS", 30)
DATABASES["default"].setdefault("TEST", {})
if env_str("TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"]["NAME"] = env_str("TEST_DATABASE_NAME")
IS_POSTGRES = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.Account"

# --- Redis: the Celery broker and the cache when REDIS_URL is set.
REDIS_URL = env_str("REDIS_URL")
_REDIS_TIMEOUT = env_int("CACHE_SOCKET_TIMEOUT_MS", 500) / 1000
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "helpdesk"),
            "OPTIONS": {
                # Redis holds only what can be recomputed (totals, throttle counters, locks): while it is
                # unreachable a read is a miss and a write a no-op (`add` adds nothing, `incr` returns None),
                # so the API keeps answering and the throttles fail open. The timeouts bound what a try costs.
                "IGNORE_EXCEPTIONS": True,
                "SOCKET_CONNECT_TIMEOUT": _REDIS_TIMEOUT,
                "SOCKET_TIMEOUT": _REDIS_TIMEOUT,
                "CONNECTION_POOL_KWARGS": {"retry_on_timeout": False},
            },
        }
    }
    # Each ignored error is logged on `helpdesk.cache`, at most once per 30 seconds (helpdesk.logs.OncePer).
    DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
    DJANGO_REDIS_LOGGER = "helpdesk.cache"
    CELERY_BROKER_URL = REDIS_URL
    if REDIS_URL.startswith("redis://"):
        # kombu's, one Redis client per channel; a rediss:// (TLS) or sentinel:// URL keeps the transport kombu
        # chooses for its scheme (a transport named here would override that choice)
        CELERY_BROKER_TRANSPORT = "helpdesk.broker_redis:Transport"
    # Publishing while Redis is away must not hang a request: a short, bounded retry, then the caller
    # (helpdesk.queue.enqueue_on_commit) logs and leaves the durable row to its sweeper.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "socket_connect_timeout": _REDIS_TIMEOUT,
        "socket_timeout": 5 * _REDIS_TIMEOUT,
    }
    CELERY_BROKER_CONNECTION_TIMEOUT = _REDIS_TIMEOUT
    CELERY_TASK_PUBLISH_RETRY_POLICY = {
        "max_retries": 2,
        "interval_start": 0,
        "interval_step": 0.2,
        "interval_max": 0.2,
    }
    CELERY_RESULT_BACKEND = None
else:
    # Shared between the web server, worker and beat processes of the embedded default.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }
    _queue = VAR_DIR / "queue"
    (_queue / "processed").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "helpdesk.broker_files:Transport"  # kombu's, writing each message whole
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue),
        "data_folder_out": str(_queue),
        "processed_folder": str(_queue / "processed"),
        "control_folder": str(_queue / "control"),  # kombu's default is ./control in the working directory
        "store_processed": False,
        # How long an idle worker slot waits before looking at the folder again (kombu's default, 1 s, held
        # the embedded worker to about two tasks a second).
        "polling_interval": 0.1,
    }

# Workers and beat wait for the broker at start-up instead of exiting (and keep retrying when it goes away).
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
if REDIS_URL:
    # RedBeat keeps the schedule in Redis behind a Redis lock: a second beat started by mistake waits for
    # the lock instead of firing the schedule again, and takes over within the lock's 30 s if the holder dies.
    # helpdesk.beat.Scheduler keeps beat running through a Redis outage (RedBeat alone exits on one).
    CELERY_BEAT_SCHEDULER = "helpdesk.beat.Scheduler"
    CELERY_REDBEAT_REDIS_URL = REDIS_URL
    CELERY_REDBEAT_KEY_PREFIX = "helpdesk:redbeat"
    CELERY_BEAT_MAX_LOOP_INTERVAL = 5  # celery 5.7: how long beat may sleep; the lock is renewed then
    CELERY_REDBEAT_LOCK_TIMEOUT = 30

# Each app adds its periodic tasks here, with a comment saying when they run.
CELERY_BEAT_SCHEDULE: dict = {}
# Billing: renew subscriptions whose period ended (and expire canceled ones), every 5 minutes.
CELERY_BEAT_SCHEDULE["billing-renew-subscriptions"] = {
    "task": "billing.tasks.renew_subscriptions",
    "schedule": 300.0,
}
# Billing: finish charge intents left without an outcome by a crash, every minute.
CELERY_BEAT_SCHEDULE["billing-reconcile-charges"] = {
    "task": "billing.tasks.reconcile_charges",
    "schedule": 60.0,
}
# Billing: forget Idempotency-Keys older than BILLING_IDEMPOTENCY_KEY_HOURS, and abandoned ones, every 10 minutes.
CELERY_BEAT_SCHEDULE["billing-purge-idempotency-records"] = {
    "task": "billing.tasks.purge_idempotency_records",
    "schedule": 600.0,
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "static")))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))

# --- E-mail: SMTP in production (EMAIL_URL-style pieces), console locally.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "HelpDesk <no-reply@helpdesk.localhost>")
# Each license receives mail at <licenseID>@inbound.<HELPDESK_INBOUND_DOMAIN> (forwarding instructions).
HELPDESK_INBOUND_DOMAIN = env_str("HELPDESK_INBOUND_DOMAIN", "helpdesk.localhost")
# DNS for e-mail domains (verification) and DKIM checks of received mail: "host" or "host:port" of the resolver
# to ask; empty = the system's (/etc/resolv.conf).
HELPDESK_DNS_RESOLVER = env_str("HELPDESK_DNS_RESOLVER")
HELPDESK_DNS_TIMEOUT_SECONDS = env_int("HELPDESK_DNS_TIMEOUT_SECONDS", 5)
# The SPF include an e-mail domain publishes (our sending hosts); default spf.<HELPDESK_INBOUND_DOMAIN>.
HELPDESK_SPF_INCLUDE = env_str("HELPDESK_SPF_INCLUDE", f"spf.{HELPDESK_INBOUND_DOMAIN}")
# How long a new e-mail domain may wait for its DNS records (pendingVerification) before it is setupFailed.
HELPDESK_EMAIL_DOMAIN_VERIFY_HOURS = env_int("HELPDESK_EMAIL_DOMAIN_VERIFY_HOURS", 72)
# authserv-ids (RFC 8601) of the MTAs in front of us whose Authentication-Results headers are believed; those
# of anyone else are ignored (a sender can write any header).
HELPDESK_TRUSTED_AUTHSERV_IDS = env_list("HELPDESK_TRUSTED_AUTHSERV_IDS", [])
# Check DKIM signatures of received mail ourselves (DNS look-ups) when no trusted Authentication-Results says.
HELPDESK_INBOUND_DKIM_VERIFY = env_bool("HELPDESK_INBOUND_DKIM_VERIFY", True)
# Inbound mail (receive_mail, smtp_inbound): larger messages are refused (SMTP 552, receive_mail exit 65).
INBOUND_MAX_MESSAGE_BYTES = env_int("INBOUND_MAX_MESSAGE_BYTES", 25 * 1024 * 1024)
# Acknowledgements (auto-replies) per sender and license per hour, beyond which none is sent (storm protection).
INBOUND_AUTO_REPLIES_PER_HOUR = env_int("INBOUND_AUTO_REPLIES_PER_HOUR", 10)
# ... and per sender domain (robot+1@, robot+2@ ... of one responder) and per license, per hour.
INBOUND_AUTO_REPLIES_PER_DOMAIN_PER_HOUR = env_int("INBOUND_AUTO_REPLIES_PER_DOMAIN_PER_HOUR", 30)
INBOUND_AUTO_REPLIES_PER_LICENSE_PER_HOUR = env_int("INBOUND_AUTO_REPLIES_PER_LICENSE_PER_HOUR", 300)
# People in the loop a mail puts on a ticket (its Cc), and the ticket's mail goes to (besides the requester).
MAIL_MAX_PEOPLE_IN_THE_LOOP = env_int("MAIL_MAX_PEOPLE_IN_THE_LOOP", 50)
# The web app's address: links in e-mails (invitations) point there.
HELPDESK_APP_URL = env_str("HELPDESK_APP_URL", "http://localhost:8000")
HELPDESK_INVITATION_MAX_AGE_DAYS = env_int("HELPDESK_INVITATION_MAX_AGE_DAYS", 7)
# How long a signed attachment link (e-mails, <img>) downloads the file: 7 days.
HELPDESK_ATTACHMENT_LINK_MAX_AGE_SECONDS = env_int("HELPDESK_ATTACHMENT_LINK_MAX_AGE_SECONDS", 7 * 24 * 3600)
# Ticket mail: files of a message are attached up to this total size, the others are linked.
HELPDESK_MAIL_ATTACHMENTS_MAX_BYTES = env_int("HELPDESK_MAIL_ATTACHMENTS_MAX_BYTES", 10 * 1024 * 1024)
# How long the confirmation link of a reply address works.
HELPDESK_REPLY_ADDRESS_LINK_MAX_AGE_DAYS = env_int("HELPDESK_REPLY_ADDRESS_LINK_MAX_AGE_DAYS", 7)
# Agents' notification e-mails (templates_app/notifications.py): at most one per agent per this many seconds,
# the rest wait for the next digest; beat sends the digests whose enqueue was lost, every minute.
NOTIFICATION_BATCH_SECONDS = env_int("NOTIFICATION_BATCH_SECONDS", 60)
CELERY_BEAT_SCHEDULE["send-due-notifications"] = {
    "task": "templates_app.tasks.send_due_notifications",
    "schedule": 60.0,
    "options": {"expires": 50},
}
# IMAP polling of mailboxes (templates_app/inbound/imap.py): beat looks for due mailboxes this often, each poll
# reads at most IMAP_MAX_MESSAGES_PER_POLL messages for at most IMAP_POLL_MAX_SECONDS (the rest next tick), every
# socket operation waits IMAP_TIMEOUT_SECONDS. Certificates are verified against the system's CAs, plus those
# of IMAP_CA_FILE (a PEM bundle) when set, for a server with a private CA.
IMAP_POLL_SECONDS = env_int("IMAP_POLL_SECONDS", 60)
IMAP_POLL_MAX_SECONDS = env_int("IMAP_POLL_MAX_SECONDS", 120)
IMAP_MAX_MESSAGES_PER_POLL = env_int("IMAP_MAX_MESSAGES_PER_POLL", 500)
IMAP_TIMEOUT_SECONDS = env_int("IMAP_TIMEOUT_SECONDS", 30)
IMAP_CA_FILE = env_str("IMAP_CA_FILE", "")
CELERY_BEAT_SCHEDULE["poll-mailboxes"] = {
    "task": "templates_app.tasks.poll_mailboxes",
    "schedule": float(IMAP_POLL_SECONDS),
    "options": {"expires": max(IMAP_POLL_SECONDS - 5, 5)},
}
# How long the good/bad links of a rating request (the page /ratings) work.
HELPDESK_RATING_LINK_MAX_AGE_DAYS = env_int("HELPDESK_RATING_LINK_MAX_AGE_DAYS", 30)
# Every 30 seconds: e-mails nobody is working on (a lost enqueue or retry, a task that met a database error, a
# worker that died while sending) are queued again, so mail flows within a minute of a dependency's return.
CELERY_BEAT_SCHEDULE["sweep-outbound-messages"] = {
    "task": "templates_app.tasks.sweep_outbound_messages",
    "schedule": 30.0,
    "options": {"expires": 25},
}
# Every 10 minutes: finished e-mails go after 30 days (and a sweep).
CELERY_BEAT_SCHEDULE["requeue-stale-messages"] = {
    "task": "templates_app.tasks.requeue_stale_messages",
    "schedule": 600.0,
}

# --- The audit log (audit/): kept forever unless AUDIT_RETENTION_DAYS > 0; AUDIT_HASH_KEY keys its hash chain
# (keep it out of the database and never change it, or older entries no longer verify).
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 0)
AUDIT_HASH_KEY = env_str("AUDIT_HASH_KEY")
# Daily at 03:30 UTC: purge audit entries older than AUDIT_RETENTION_DAYS (does nothing when it is 0).
CELERY_BEAT_SCHEDULE["purge-expired-audit-entries"] = {
    "task": "audit.tasks.purge_expired_audit_entries",
    "schedule": crontab(hour=3, minute=30),
}
# Every AUDIT_DIGEST_INTERVAL_SECONDS (0: never): each license's chain head, signed, appended to
# AUDIT_DIGEST_DIR/license-<id>.jsonl and logged, so that verify_audit_chain notices a chain cut at either end.
# Point AUDIT_DIGEST_DIR at storage outside the database host (a mounted bucket).
AUDIT_DIGEST_DIR = Path(env_str("AUDIT_DIGEST_DIR", str(VAR_DIR / "audit-digests")))
AUDIT_DIGEST_INTERVAL_SECONDS = env_int("AUDIT_DIGEST_INTERVAL_SECONDS", 3600)
if AUDIT_DIGEST_INTERVAL_SECONDS > 0:
    CELERY_BEAT_SCHEDULE["publish-audit-digests"] = {
        "task": "audit.tasks.publish_audit_digests",
        "schedule": float(AUDIT_DIGEST_INTERVAL_SECONDS),
        "options": {"expires": AUDIT_DIGEST_INTERVAL_SECONDS},
    }

# --- The API.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("API_MAX_BODY_BYTES", 2 * 1024 * 1024)
HELPDESK_REQUIRE_USER_AGENT = env_bool("HELPDESK_REQUIRE_USER_AGENT", True)
HELPDESK_AUTH_FAILURES_PER_MINUTE = env_int("HELPDESK_AUTH_FAILURES_PER_MINUTE", 10)
HELPDESK_TOKEN_PREFIX = "hdp_"
# How long a process serves an API caller from its own copy before reading it again, whatever the versions say
# (accounts.api.callers: every change drops the versions at once; this bounds a drop lost to a Redis outage).
HELPDESK_CALLER_CACHE_SECONDS = env_int("HELPDESK_CALLER_CACHE_SECONDS", 60)
# Requests per window per token (PAT or OAuth) and per license (all its tokens); 0 disables a limit. 429 past it.
RATE_LIMIT_PER_TOKEN = env_int("RATE_LIMIT_PER_TOKEN", 600)
RATE_LIMIT_PER_LICENSE = env_int("RATE_LIMIT_PER_LICENSE", 3000)
RATE_LIMIT_WINDOW_SECONDS = env_int("RATE_LIMIT_WINDOW_SECONDS", 60)
# Nesting of any JSON body (deeper is a 400); free-form fields (customFields, richTextObj) have tighter limits.
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32)
# Uploads: a multipart request's declared size (checked before the body is read), files per attachment
# transaction, and bytes of attachments a license may store (0 = unlimited). Over them: 413.
UPLOAD_MAX_REQUEST_BYTES = env_int("UPLOAD_MAX_REQUEST_BYTES", 100 * 1024 * 1024)
UPLOAD_MAX_FILES_PER_TRANSACTION = env_int("UPLOAD_MAX_FILES_PER_TRANSACTION", 50)
UPLOAD_MAX_LICENSE_BYTES = env_int("UPLOAD_MAX_LICENSE_BYTES", 10 * 1024 * 1024 * 1024)

# Contact forms' public pages (/forms/<ID>): posts per client IP and per form in each RATE_LIMIT_WINDOW_SECONDS
# (0: no limit; past one, 429), the time token's bounds (a post sooner than MIN_SECONDS after the page was made
# is a bot's; a token older than MAX_AGE gets the form back), files per post and their bytes (within the upload
# limits above), and how many links in a message mark it as spam (0: never).
CONTACT_FORM_POSTS_PER_IP = env_int("CONTACT_FORM_POSTS_PER_IP", 10)
CONTACT_FORM_POSTS_PER_FORM = env_int("CONTACT_FORM_POSTS_PER_FORM", 300)
CONTACT_FORM_MIN_SECONDS = env_int("CONTACT_FORM_MIN_SECONDS", 3)
CONTACT_FORM_TOKEN_MAX_AGE_SECONDS = env_int("CONTACT_FORM_TOKEN_MAX_AGE_SECONDS", 24 * 3600)
CONTACT_FORM_MAX_FILES = env_int("CONTACT_FORM_MAX_FILES", 5)
CONTACT_FORM_MAX_BYTES = env_int("CONTACT_FORM_MAX_BYTES", 10 * 1024 * 1024)
CONTACT_FORM_SPAM_LINKS = env_int("CONTACT_FORM_SPAM_LINKS", 3)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.api.authentication.TokenBasicAuthentication",
        "accounts.api.authentication.OAuthBearerAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["helpdesk.api.permissions.RolePermission"],
    "DEFAULT_RENDERER_CLASSES": ["helpdesk.api.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "helpdesk.api.negotiation.RememberedContentNegotiation",
    "DEFAULT_PARSER_CLASSES": ["helpdesk.api.json_input.JSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["helpdesk.api.filtersets.StrictFilterBackend"],
    "DEFAULT_THROTTLE_CLASSES": ["helpdesk.api.ratelimit.RateLimitThrottle"],
    "DEFAULT_SCHEMA_CLASS": "helpdesk.api.autoschema.HelpdeskAutoSchema",
    "EXCEPTION_HANDLER": "helpdesk.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_PAGINATION_CLASS": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%S.%fZ",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "HelpDesk v1 API",
    "DESCRIPTION": "Licenses, agents, teams, templates, subscriptions, audit log and ticket search.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # One name per choice set used under several field names (else drf-spectacular warns, `manage.py check`
    # fails with W001, and it invents names such as `Status23cEnum`).
    "ENUM_NAME_OVERRIDES": {
        "CreatedByTypeEnum": "accounts.models.CREATED_BY_TYPES",
        "TicketStatusEnum": "tickets.models.STATUSES",
        "TemplateTypeEnum": ["html", "visual"],
        "RuleTypeEnum": "tickets.rules.models.TYPES",
        "CustomFieldStatusEnum": ["active", "deactivated"],
        "MailboxStatusEnum": ["active", "failing", "disabled"],
        "MailboxWriteStatusEnum": ["active", "disabled"],
    },
    "SCHEMA_PATH_PREFIX": r"/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "helpdesk.api.schema.add_error_responses",
        "helpdesk.api.schema.describe_operations",
        "helpdesk.api.schema.add_headers",
        "helpdesk.api.schema.constrain_parameters",
    ],
}

# --- Billing. The gateway class (default: the built-in sandbox, which keeps its own ledger in our database).
BILLING_GATEWAY = env_str("BILLING_GATEWAY", "billing.gateway.SandboxGateway")
BILLING_CURRENCY = env_str("BILLING_CURRENCY", "USD")
# The sandbox declines every charge (to try the 402 path); one license's card: billing.gateway.set_sandbox_card.
BILLING_SANDBOX_DECLINE = env_bool("BILLING_SANDBOX_DECLINE", False)
BILLING_TRIAL_DAYS = env_int("BILLING_TRIAL_DAYS", 14)
# Seats of a trial, and of a license that never had a subscription.
BILLING_TRIAL_SEATS = env_int("BILLING_TRIAL_SEATS", 5)
# A charge intent older than this is considered abandoned and finished by the reconciler.
BILLING_RECONCILE_AFTER_SECONDS = env_int("BILLING_RECONCILE_AFTER_SECONDS", 120)
# How long an Idempotency-Key is remembered (its first response replayed).
BILLING_IDEMPOTENCY_KEY_HOURS = env_int("BILLING_IDEMPOTENCY_KEY_HOURS", 24)

# --- Logs: LOG_FORMAT=json writes one JSON object per line (for log shippers), plain text otherwise. Every line
# carries the request ID (X-Request-ID); one access line per request (helpdesk/logs.py).
LOG_FORMAT = env_str("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured("LOG_FORMAT must be plain or json.")
LOGGING = logging_config(LOG_FORMAT, env_str("LOG_LEVEL", "INFO"))

# --- Purge of the spam and trash silos (tickets/purge.py): days after a ticket's last update (updatedAt).
PURGE_SPAM_DAYS = env_int("PURGE_SPAM_DAYS", 60)
PURGE_TRASH_DAYS = env_int("PURGE_TRASH_DAYS", 30)
PURGE_BATCH_SIZE = env_int("PURGE_BATCH_SIZE", 500)  # tickets per batch (one short transaction each)
PURGE_LOCK_SECONDS = env_int("PURGE_LOCK_SECONDS", 900)  # lock expiry, renewed after every batch
PURGE_INTERVAL_SECONDS = env_int("PURGE_INTERVAL_SECONDS", 0)  # 0: the hourly schedule below
# Hourly at minute 17 UTC (every PURGE_INTERVAL_SECONDS instead when set). A trigger that no worker picked
# up within 50 minutes is dropped: the next one comes anyway.
CELERY_BEAT_SCHEDULE["purge-expired-tickets"] = {
    "task": "tickets.tasks.purge_expired_tickets",
    "schedule": PURGE_INTERVAL_SECONDS or crontab(minute=17),
    "options": {"expires": 3000},
}

# --- Webhooks (tickets/webhooks/). Private addresses (loopback, RFC 1918, link-local ...) are refused unless this
# is on: for tests and on-premise installs whose receivers live on the internal network.
WEBHOOKS_ALLOW_PRIVATE = env_bool("WEBHOOKS_ALLOW_PRIVATE", False)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10)
# Seconds to wait after each failed attempt (1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 3 h): 8 attempts, the
# last 23.6 h after the first; no attempt is made past 24 h whatever the list says. Then the delivery fails.
WEBHOOK_RETRY_SCHEDULE_SECONDS = [
    int(value) for value in env_list("WEBHOOK_RETRY_SCHEDULE_SECONDS", ["60", "300", "1800", "7200", "21600",
                                                                        "43200", "10800"])
]  # fmt: skip
# Every 30 seconds: pending deliveries that are due (retries, and any whose enqueue was lost) are queued.
CELERY_BEAT_SCHEDULE["webhooks-sweep-deliveries"] = {
    "task": "tickets.tasks.sweep_webhook_deliveries",
    "schedule": 30.0,
    "options": {"expires": 25},
}

# --- Solved tickets close by themselves AUTO_CLOSE_SOLVED_DAYS after their status changed (tickets/auto_close.py),
# AUTO_CLOSE_BATCH_SIZE per transaction, hourly at minute 47 UTC.
AUTO_CLOSE_SOLVED_DAYS = env_int("AUTO_CLOSE_SOLVED_DAYS", 7)
AUTO_CLOSE_BATCH_SIZE = env_int("AUTO_CLOSE_BATCH_SIZE", 200)

# --- A search total whose count took at least this long is carried across writes (tickets/totals/): writes
# re-test the tickets they change against these filter sets instead of leaving them to be counted again.
TICKET_COUNT_CARRY_MIN_MS = env_int("TICKET_COUNT_CARRY_MIN_MS", 5)
# PostgreSQL work_mem of a search total's count statement alone (tickets.totals.reading); empty: the server's.
TICKET_COUNT_WORK_MEM = env_str("TICKET_COUNT_WORK_MEM", "64MB")
# At most this many filter sets per license are carried (each write re-tests its tickets against all of them
# in one statement before and one after the change: ~0.2 ms of PostgreSQL per set and write).
TICKET_COUNT_CARRY_SETS = env_int("TICKET_COUNT_CARRY_SETS", 48)
CELERY_BEAT_SCHEDULE["close-solved-tickets"] = {
    "task": "tickets.tasks.close_solved_tickets",
    "schedule": crontab(minute=47),
    "options": {"expires": 3000},
}

# --- Time rules (hoursSince, tickets/rules/sweep.py): every minute, on the tickets whose time came since the last run.
CELERY_BEAT_SCHEDULE["rules-time-sweep"] = {
    "task": "tickets.tasks.run_time_rules",
    "schedule": 60.0,
    "options": {"expires": 55},
}

# --- SLA breaches (tickets/sla/sweep.py): every minute, the clocks that ran out (a breach at the minute it happens).
CELERY_BEAT_SCHEDULE["sla-breach-sweep"] = {
    "task": "tickets.tasks.record_sla_breaches",
    "schedule": 60.0,
    "options": {"expires": 55},
}

# --- OAuth 2.0 (django-oauth-toolkit): apps registered at /v1/apps, consent at /oauth/authorize.
OAUTH_ACCESS_TOKEN_SECONDS = env_int("OAUTH_ACCESS_TOKEN_SECONDS", 3600)
OAUTH_REFRESH_TOKEN_SECONDS = env_int("OAUTH_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600)
OAUTH2_PROVIDER = {
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_REFRESH_TOKEN_SECONDS,
    "ROTATE_REFRESH_TOKEN": True,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # Tokens are stored as their SHA-256 only, as personal access tokens are.
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "SCOPES_BACKEND_CLASS": "accounts.oauth.scopes.ScopesBackend",
    "OAUTH2_VALIDATOR_CLASS": "accounts.oauth.validators.Validator",  # a refresh narrows to the app's scopes
    "REQUEST_APPROVAL_PROMPT": "force",  # an owner approves every grant on the consent page
    # OAuth 2.0 Security BCP (RFC 9700): no implicit or password grant, S256 only, no tokens in URLs, `iss` in
    # the authorization response, refresh-token replay detection (a reused refresh token revokes its family).
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # http redirect URIs (localhost only, checked by /v1/apps) for development; production needs https.
    "ALLOWED_REDIRECT_URI_SCHEMES": env_list(
        "OAUTH_REDIRECT_URI_SCHEMES", ["http", "https"] if DEBUG else ["https"]
    ),
}
# DOT's own models (named here because migrations referencing them resolve the names from settings).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/admin/"  # a sign-in without `next` opens the console, where every agent works

# --- CORS (django-cors-headers): origins of registered apps' redirect URIs (accounts/oauth/cors.py).
CORS_URLS_REGEX = r"^/(v1/.*|oauth/token/?)$"
CORS_ALLOW_CREDENTIALS = False  # Bearer tokens, never cookies
CORS_EXPOSE_HEADERS = [
    "X-Total-Results", "X-Total-Pages", "Link",
    "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After",
    "ETag",  # a ticket's version, for If-Match (tickets/collisions.py)
]  # fmt: skip
CORS_ALLOW_HEADERS = [
    "accept", "authorization", "content-type", "user-agent", "x-license-id", "idempotency-key",
    "if-match",
]  # fmt: skip
