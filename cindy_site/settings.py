"""Cindy settings: one module, every value read from the environment (through the readers in
`cindy_site/setting_values.py`, which also reads the `.env` file).

Every variable is listed with its default and meaning in `.env.example`. A `.env` file beside
`manage.py` is read when present; real environment variables win over it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from cindy_site.llm_endpoints import endpoint_variable, endpoints_setting, endpoints_structured_setting
from cindy_site.setting_values import BASE_DIR, env
from cindy_site.setting_values import int_list as _int_list
from cindy_site.setting_values import non_negative_float as _non_negative_float
from cindy_site.setting_values import optional_usd as _optional_usd
from cindy_site.setting_values import positive_float as _positive_float
from cindy_site.setting_values import positive_int as _positive_int

# --- Core -------------------------------------------------------------------------------------

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off: set SECRET_KEY in the environment or in .env "
            '(for example: python -c "import secrets; print(secrets.token_urlsafe(50))")'
        )
    SECRET_KEY = "insecure-development-key-only-used-with-debug-on"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# --- HTTPS --------------------------------------------------------------------------------------
# Production runs behind a proxy that terminates TLS and says so in a header. With DEBUG off every
# protection below is on unless turned off; with DEBUG on (plain http on 127.0.0.1) they are off.
# `manage.py check --deploy` is clean once the two HSTS commitments (subdomains, preload) are made.
_proxy_header = env.str("SECURE_PROXY_SSL_HEADER", default="" if DEBUG else "HTTP_X_FORWARDED_PROTO")
SECURE_PROXY_SSL_HEADER = (_proxy_header, "https") if _proxy_header else None
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# Health probes come from the host or the proxy over plain http: they are answered, not redirected.
SECURE_REDIRECT_EXEMPT = [r"^health/"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)

# --- Process role -----------------------------------------------------------------------------
# The gateway (`runagents`) and the task workers (`runworkers`, or django-q2's `qcluster`) serve no
# HTTP. With CINDY_LEAN_ENGINE on (the default) they load only what they use: no admin modules (the
# admin app does not autodiscover them) and no allauth. No process but `runserver` loads daphne's
# app. docs/performance.md, "Memory", lists what these processes must not import.
ENGINE_COMMANDS = ("runagents", "runworkers", "qcluster")
#: The management command this process runs ("" for anything else: the ASGI server, a script).
COMMAND = sys.argv[1] if len(sys.argv) > 1 else ""
ENGINE_PROCESS = COMMAND in ENGINE_COMMANDS
RUNSERVER_PROCESS = COMMAND == "runserver"
CINDY_LEAN_ENGINE = env.bool("CINDY_LEAN_ENGINE", default=True)
LEAN_PROCESS = ENGINE_PROCESS and CINDY_LEAN_ENGINE
if LEAN_PROCESS and COMMAND == "runagents":
    # django-q2's settings module imports prometheus_client (for its task pool's metrics) whenever it is
    # installed, and with it the package's HTTP exposition: about 2 MiB of the gateway, which runs no pool
    # and exports no metrics (the web process serves /metrics). An entry of None makes that optional
    # import fail as if the package were absent; the engine app removes it once the apps have loaded
    # (engine/apps.py), so a later import works as usual.
    sys.modules.setdefault("prometheus_client", None)
# `runworkers` imports the LLM stack before forking its workers, so their first task is not slowed by it.
CINDY_PRELOAD_TASK_MODULES = env.bool("CINDY_PRELOAD_TASK_MODULES", default=True)

INSTALLED_APPS = [
    # daphne's `runserver` (the development web process); before staticfiles, whose `runserver` it
    # replaces. Only there: its app imports Twisted and pyOpenSSL (about 0.35 s of CPU and 24 MiB), which
    # no other command uses, and the production web process is daphne itself (`python -m daphne`).
    *(["daphne"] if RUNSERVER_PROCESS else []),
    "cindy_site",
    "cindy_site.apps.CindyAdminConfig",  # django.contrib.admin on the OTP site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_otp",
    "cindy_site.apps.OTPTOTPConfig",  # django_otp.plugins.otp_totp, named for operators
    "cindy_site.apps.OTPStaticConfig",  # django_otp.plugins.otp_static
    "django_q",
    "channels",
    "agents",
    "memory",
    "media_catalog",
    "conversations",
    "recall",
    "sandbox",
    "engine",
    "llm",
    "dashboard",
    "cwimport",
    "api",
    # Sign-in with Google (OpenID Connect); inert unless CINDY_OIDC_GOOGLE_CLIENT_ID is set (below).
    *(
        []
        if LEAN_PROCESS
        else [
            "allauth",
            "allauth.account",
            "allauth.socialaccount",
            "allauth.socialaccount.providers.openid_connect",
        ]
    ),
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "cindy_site.body_limit.RequestDataTooBigMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    *([] if LEAN_PROCESS else ["allauth.account.middleware.AccountMiddleware"]),
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "cindy_site.urls"

# --- Request bodies (cindy_site/body_limit.py) ----------------------------------------------------
# The largest body any route accepts, checked at the ASGI layer before it is read (413 past it):
# above the largest upload (a 20 MB media file or voice note), far below what would hurt the web
# process. Put the same limit on the proxy (nginx `client_max_body_size`): the ASGI server may
# buffer a body before Cindy sees it.
CINDY_MAX_REQUEST_BODY_BYTES = _positive_int("CINDY_MAX_REQUEST_BODY_BYTES", 25 * 1024 * 1024)
# Form and JSON data (not files) past this answer 413 (Django's default, 2.5 MB).
DATA_UPLOAD_MAX_MEMORY_SIZE = _positive_int("CINDY_MAX_FORM_DATA_BYTES", 2621440)
# Uploaded files past 256 KiB go to a temporary file while they arrive, not into memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

WSGI_APPLICATION = "cindy_site.wsgi.application"
ASGI_APPLICATION = "cindy_site.asgi.application"

# --- Database ---------------------------------------------------------------------------------
# SQLite by default. Web, gateway and workers share one file, so it runs in WAL mode with a busy
# timeout and IMMEDIATE transactions: a writer takes the lock when its transaction starts instead
# of failing with "database is locked" when it upgrades a read lock later. The same settings apply
# however the file is named: CINDY_SQLITE_PATH, or DATABASE_URL=sqlite:///path (which wins).

SQLITE_PATH = Path(env.str("CINDY_SQLITE_PATH", default=str(BASE_DIR / "var" / "cindy.sqlite3")))
DATABASE_URL = env.str("DATABASE_URL", default="")


def _sqlite_database(path: Path) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    busy_timeout = _positive_int("CINDY_SQLITE_BUSY_TIMEOUT", 30)
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            "timeout": busy_timeout,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL;"
                "PRAGMA synchronous=NORMAL;"
                f"PRAGMA busy_timeout={busy_timeout * 1000};"
                "PRAGMA foreign_keys=ON;"
            ),
        },
    }


_db = env.db_url_config(DATABASE_URL) if DATABASE_URL else {"ENGINE": "django.db.backends.sqlite3"}
if _db["ENGINE"] == "django.db.backends.sqlite3":
    if DATABASE_URL:
        SQLITE_PATH = Path(_db["NAME"])
    DATABASES = {"default": _sqlite_database(SQLITE_PATH)}
else:
    if _db["ENGINE"] == "django.db.backends.mysql":
        _db.setdefault("OPTIONS", {})
        _db["OPTIONS"].update(
            {
                "charset": "utf8mb4",
                "init_command": "SET sql_mode='STRICT_TRANS_TABLES'",
                "isolation_level": "read committed",
            }
        )
        _db["TEST"] = {
            "NAME": env.str("CINDY_TEST_DATABASE_NAME", default=f"test_{_db['NAME']}"),
            "CHARSET": "utf8mb4",
            "COLLATION": "utf8mb4_unicode_ci",
        }
    _db["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=0)
    _db["CONN_HEALTH_CHECKS"] = True
    DATABASES = {"default": _db}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Recall (docs/recall.md): a WordLlama vector per entry, fused with the full-text ranking at search
# time; the scan of one search is bounded to the scope's most recent CINDY_RECALL_VECTOR_SCAN entries.
CINDY_RECALL_VECTORS = env.bool("CINDY_RECALL_VECTORS", default=True)
CINDY_RECALL_VECTOR_SCAN = _positive_int("CINDY_RECALL_VECTOR_SCAN", 5000)
# A provider's embedding model (gemini-embedding-001, text-embedding-3-small, ...) for a third ranking,
# its calls costed as LLM calls; empty (the default): off.
CINDY_RECALL_EMBEDDINGS = env.str("CINDY_RECALL_EMBEDDINGS", default="").strip()

# django_q ships a conditional index that MariaDB ignores; ours have no conditions.
SILENCED_SYSTEM_CHECKS = ["models.W037"]

# --- Redis, channel layer, django-q2 ----------------------------------------------------------

REDIS_URL = env.str("REDIS_URL", default="")

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

Q_CLUSTER: dict[str, object] = {
    "name": "cindy",
    "workers": _positive_int("CINDY_Q_WORKERS", 2),
    "timeout": _positive_int("CINDY_Q_TIMEOUT", 300),
    "retry": _positive_int("CINDY_Q_RETRY", 360),
    # The engine owns retries (node attempts), so a task runs once from django-q2's side.
    "max_attempts": 1,
    "ack_failures": True,
    "catch_up": False,
    # Successful tasks are not stored: a task's outcome is in its node (result, activity events), and
    # storing one cost the monitor a locked read of up to 1000 rows per task. Failures are stored.
    "save_limit": -1,
    # The ORM broker's pause after finding no task: planning starts at most this late (one indexed
    # read per pause when idle). The Redis broker blocks on BLPOP instead and ignores it.
    "poll": _positive_float("CINDY_Q_POLL_SECONDS", 0.05),
    "label": "Task queue",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"
    # The database broker whose idle pusher waits for a wake-up instead of polling (engine/taskwake.py).
    Q_CLUSTER["broker_class"] = "engine.taskwake.TaskBroker"

# --- Auth, i18n, static -----------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True
# One date format in the admin and the dashboard (cindy_site/formats/en/formats.py): 2026-11-29 14:03.
FORMAT_MODULE_PATH = ["cindy_site.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "var" / "static")))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env.str("CINDY_MEDIA_ROOT", default=str(BASE_DIR / "var" / "media")))

LOGIN_URL = "admin:login"

# --- Sign-in with Google (django-allauth, OpenID Connect) ---------------------------------------
# Off unless a client id is set: then the login page offers "Sign in with Google" and /accounts/
# serves the provider's login and callback. A Google sign-in is always followed by the one-time
# code; an unknown address only records an access request for an owner (docs/dashboard.md, "Access").
CINDY_OIDC_GOOGLE_CLIENT_ID = env.str("CINDY_OIDC_GOOGLE_CLIENT_ID", default="")
CINDY_OIDC_GOOGLE_SECRET = env.str("CINDY_OIDC_GOOGLE_SECRET", default="")
CINDY_OIDC_GOOGLE_SERVER_URL = env.str("CINDY_OIDC_GOOGLE_SERVER_URL", default="https://accounts.google.com")
GOOGLE_SIGNIN_ENABLED = bool(CINDY_OIDC_GOOGLE_CLIENT_ID)
if GOOGLE_SIGNIN_ENABLED and not CINDY_OIDC_GOOGLE_SECRET:
    raise ImproperlyConfigured(
        "CINDY_OIDC_GOOGLE_CLIENT_ID is set but CINDY_OIDC_GOOGLE_SECRET is empty: set the client secret "
        "from the same OAuth client, or unset the client id to turn Google sign-in off"
    )


def google_signin_provider(*, client_id: str, secret: str, server_url: str) -> dict:
    """allauth's openid_connect app for Google (the tests build one for their local stand-in)."""
    return {
        "provider_id": "google",
        "name": "Google",
        "client_id": client_id,
        "secret": secret,
        "settings": {"server_url": server_url, "fetch_userinfo": False, "oauth_pkce_enabled": True},
    }


SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {
        "APPS": (
            [
                google_signin_provider(
                    client_id=CINDY_OIDC_GOOGLE_CLIENT_ID,
                    secret=CINDY_OIDC_GOOGLE_SECRET,
                    server_url=CINDY_OIDC_GOOGLE_SERVER_URL,
                )
            ]
            if GOOGLE_SIGNIN_ENABLED
            else []
        ),
        "SCOPE": ["openid", "email", "profile"],
    }
}
SOCIALACCOUNT_ADAPTER = "dashboard.signin.StaffSocialAccountAdapter"
ACCOUNT_ADAPTER = "dashboard.signin.StaffAccountAdapter"
SOCIALACCOUNT_AUTO_SIGNUP = False
SOCIALACCOUNT_STORE_TOKENS = False
ACCOUNT_EMAIL_VERIFICATION = "none"
OTP_TOTP_ISSUER = env.str("OTP_TOTP_ISSUER", default="Cindy")

# One handler, on the root logger. Django's default configuration gives the "django" logger a console
# handler of its own, which printed every request and server line a second time (without the
# timestamp): its handlers are emptied here so those lines reach the root handler only.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # Every handler carries the redaction filter: no token or Authorization value in any line.
    "filters": {"redact_credentials": {"()": "cindy_site.log_redaction.RedactCredentials"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact_credentials"]}
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": [], "level": "INFO", "propagate": True},
        "telethon": {"level": env.str("TELETHON_LOG_LEVEL", default="WARNING")},
    },
}

# --- Cindy ------------------------------------------------------------------------------------

CINDY_AGENT_CONFIG_PATH = env.str("CINDY_AGENT_CONFIG_PATH", default="samples:configdir")
# The largest file of each kind an import reads (bytes); a bigger one is refused before it is read.
CINDY_IMPORT_MAX_PERSONA_BYTES = _positive_int("CINDY_IMPORT_MAX_PERSONA_BYTES", 1024 * 1024)
CINDY_IMPORT_MAX_PROMPT_BYTES = _positive_int("CINDY_IMPORT_MAX_PROMPT_BYTES", 1024 * 1024)
CINDY_IMPORT_MAX_DOCUMENT_BYTES = _positive_int("CINDY_IMPORT_MAX_DOCUMENT_BYTES", 4 * 1024 * 1024)
CINDY_IMPORT_MAX_MEMORY_BYTES = _positive_int("CINDY_IMPORT_MAX_MEMORY_BYTES", 4 * 1024 * 1024)
CINDY_IMPORT_MAX_MEDIA_JSON_BYTES = _positive_int("CINDY_IMPORT_MAX_MEDIA_JSON_BYTES", 256 * 1024)
CINDY_IMPORT_MAX_MEDIA_FILE_BYTES = _positive_int("CINDY_IMPORT_MAX_MEDIA_FILE_BYTES", 20 * 1024 * 1024)
# The largest Telegram Desktop export `manage.py importchat` reads (checked before it is parsed; the
# parsed JSON takes several times its size in memory).
CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES = _positive_int("CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES", 128 * 1024 * 1024)
# The largest file `manage.py sandbox file|voice` and the API's sandbox upload send (checked before
# it is read): Telegram's 20 MB for a file a bot may fetch.
CINDY_SANDBOX_MAX_FILE_BYTES = _positive_int("CINDY_SANDBOX_MAX_FILE_BYTES", 20_000_000)
# The prompt budget for stored entries (memory.services.stored_prompt): the characters of entries each
# stored kind (memories, notes, plans, intentions, events) may show per request, the most recently used
# first; 0 shows every entry in every prompt, as the original system does.
CINDY_STORED_ENTRIES_BUDGET_CHARS = _positive_int("CINDY_STORED_ENTRIES_BUDGET_CHARS", 30_000, minimum=0)
CINDY_HISTORY_SIZE = _positive_int("CINDY_HISTORY_SIZE", 500)
# Recall inside turns (llm/recalled.py): a `# Recalled` section of older messages and records that bear
# on the turn's new messages, at most this many characters and hits; a hit must hold at least this
# share of the query's informative words (the same line on SQLite and MariaDB).
CINDY_RECALL_AUTO = env.bool("CINDY_RECALL_AUTO", default=True)
CINDY_RECALL_AUTO_CHARS = _positive_int("CINDY_RECALL_AUTO_CHARS", 1500, minimum=0)
CINDY_RECALL_AUTO_HITS = _positive_int("CINDY_RECALL_AUTO_HITS", 5)
CINDY_RECALL_AUTO_MIN_SHARE = env.float("CINDY_RECALL_AUTO_MIN_SHARE", default=0.5)
if not 0 < CINDY_RECALL_AUTO_MIN_SHARE <= 1:
    raise ImproperlyConfigured(
        f"CINDY_RECALL_AUTO_MIN_SHARE is {CINDY_RECALL_AUTO_MIN_SHARE}: it must be a share above 0 and at "
        "most 1 of the query's informative words a recalled hit holds, e.g. 0.5"
    )
# The most characters of text one planning turn may send (llm/parsing.py); the rest is dropped with a
# note. Three full Telegram messages by default.
CINDY_MAX_TURN_TEXT_CHARS = _positive_int("CINDY_MAX_TURN_TEXT_CHARS", 3 * 4096)
# 0: a quarter of the cap (llm.conversation.history_step).
CINDY_HISTORY_STEP = _positive_int("CINDY_HISTORY_STEP", 0, minimum=0)
CINDY_TICK_SECONDS = env.float("CINDY_TICK_SECONDS", default=1.0)
CINDY_LEASE_SECONDS = _positive_int("CINDY_LEASE_SECONDS", 30)
CINDY_NODE_LEASE_SECONDS = _positive_int("CINDY_NODE_LEASE_SECONDS", 600)
# The gateway's planning watchdog (engine/watchdog.py): how long claimed planning may wait for a worker.
CINDY_PLANNING_STALL_SECONDS = _positive_int("CINDY_PLANNING_STALL_SECONDS", 45)
# A planning task whose worker died this many times while running it fails instead of running again
# (engine/task_deaths.py).
CINDY_TASK_MAX_DEATHS = _positive_int("CINDY_TASK_MAX_DEATHS", 2)
# Health (engine/health.py): a gateway whose loop has not finished a pass for this long has a stalled tick.
CINDY_TICK_STALL_SECONDS = _positive_int("CINDY_TICK_STALL_SECONDS", 120)


# Spend brakes (engine/brakes.py): the whole installation's LLM cost per day (TIME_ZONE); empty: no cap.
CINDY_DAILY_SPEND_CAP_USD = _optional_usd("CINDY_DAILY_SPEND_CAP_USD")
# Retention (engine/retention.py): days each kind of row is kept (0: for good), and rows per batch.
CINDY_RETAIN_ACTIVITY_DAYS = _positive_int("CINDY_RETAIN_ACTIVITY_DAYS", 30, minimum=0)
CINDY_RETAIN_LLM_CALLS_DAYS = _positive_int("CINDY_RETAIN_LLM_CALLS_DAYS", 90, minimum=0)
CINDY_RETAIN_SANDBOX_UPDATES_DAYS = _positive_int("CINDY_RETAIN_SANDBOX_UPDATES_DAYS", 7, minimum=0)
CINDY_RETAIN_GRAPHS_DAYS = _positive_int("CINDY_RETAIN_GRAPHS_DAYS", 30, minimum=0)
CINDY_PRUNE_BATCH = _positive_int("CINDY_PRUNE_BATCH", 500)
# The bearer token Prometheus sends to read /metrics (empty: only verified staff can read it).
CINDY_METRICS_TOKEN = env.str("CINDY_METRICS_TOKEN", default="")
CINDY_MAX_ATTEMPTS = _positive_int("CINDY_MAX_ATTEMPTS", 10)
CINDY_RETRY_SECONDS = _positive_int("CINDY_RETRY_SECONDS", 10)
# Seconds after a message before the agent reads it (and plans); a burst within it costs one LLM call.
CINDY_READ_DELAY_SECONDS = max(env.float("CINDY_READ_DELAY_SECONDS", default=3.0), 0.0)
# While a DM partner types, the agent's reply waits, but never longer than this after the message it
# answers (engine/partner_typing.py).
CINDY_TYPING_WAIT_MAX_SECONDS = _positive_int("CINDY_TYPING_WAIT_MAX_SECONDS", 60)
# Online presence (engine/presence.py): an agent that wrote in a chat within this many seconds is
# "already online" there and starts typing at once (no start-typing delay); it is shown online on
# Telegram while it wrote anywhere within this window and is awake. The original uses 5 minutes.
CINDY_ONLINE_WINDOW_SECONDS = _positive_int("CINDY_ONLINE_WINDOW_SECONDS", 300)
# Agent-to-agent loops (engine/loops.py): an agent answers at most this many messages in a row from
# agents or bots in one chat (no person writing in between); a pause of the cool-down starts a new run.
# Each agent may set its own in the admin (Agent.hop_limit, Agent.hop_cooldown_seconds).
CINDY_AGENT_HOP_LIMIT = _positive_int("CINDY_AGENT_HOP_LIMIT", 4)
CINDY_AGENT_HOP_COOLDOWN_SECONDS = _positive_int("CINDY_AGENT_HOP_COOLDOWN_SECONDS", 600)
# An idle gateway wakes as soon as someone makes work for it (engine/wake.py): Redis pub/sub with
# REDIS_URL, otherwise a database counter read every CINDY_WAKE_POLL_SECONDS. Off: it waits the tick.
CINDY_WAKE = env.bool("CINDY_WAKE", default=True)
# Writers on the gateway's host wake it through a local socket at once; this poll is for other hosts.
CINDY_WAKE_POLL_SECONDS = _positive_float("CINDY_WAKE_POLL_SECONDS", 1.0)
# With wake-ups on, the longest an idle gateway sleeps between passes (at least the tick): what it waits
# for wakes it sooner, so the periodic pass is only the backstop for leases, reaping and upkeep.
CINDY_IDLE_PASS_SECONDS = _positive_float("CINDY_IDLE_PASS_SECONDS", 5.0)
# How many per-agent refreshes (dialog list, media library) may talk to Telegram at once; they run
# beside the gateway's pass, each agent on its own phase of the period (engine/refresh.py).
# Without Redis and with CINDY_WAKE on: the longest an idle task worker pool waits for a wake-up before
# looking for a task again (a task queued on the same host wakes it at once: engine/taskwake.py).
CINDY_Q_IDLE_SECONDS = _positive_float("CINDY_Q_IDLE_SECONDS", 5.0)
# Off: an idle pool polls the queue every CINDY_Q_POLL_SECONDS as django-q2 does (also off with CINDY_WAKE off).
CINDY_Q_WAKE = env.bool("CINDY_Q_WAKE", default=True)
CINDY_UPKEEP_CONCURRENCY = _positive_int("CINDY_UPKEEP_CONCURRENCY", 8)
# The unread scan (engine/attention.py): every this many seconds (and after each reconnect) each agent
# reads its dialog list for messages no update delivered, dialogs marked unread and unread reactions.
# 0 turns it off.
CINDY_UNREAD_SCAN_SECONDS = max(env.float("CINDY_UNREAD_SCAN_SECONDS", default=30.0), 0.0)
# The most dialog lists a gateway's periodic reads (the unread scans, or with scans off the dialog
# refreshes) ask Telegram for a second, on average over its agents: with more agents than the period
# times this, each agent's period stretches to agents / this (engine/refresh.py). 0: never stretched.
CINDY_DIALOG_READS_PER_SECOND = _non_negative_float(
    "CINDY_DIALOG_READS_PER_SECOND", 5.0, zero="never stretched"
)


CINDY_OPERATOR_IDS = _int_list("CINDY_OPERATOR_IDS")
# Bounded initiative (llm/policy_initiative.py): how many xsend hops a chain of turns may take (a turn
# started by an xsend has depth 1; 1 means it may not xsend again), and how many xsends and event
# firings one agent may start per hour (0: none).
CINDY_XSEND_MAX_DEPTH = _positive_int("CINDY_XSEND_MAX_DEPTH", 1, minimum=0)
CINDY_XSENDS_PER_HOUR = _positive_int("CINDY_XSENDS_PER_HOUR", 30, minimum=0)
CINDY_EVENTS_PER_HOUR = _positive_int("CINDY_EVENTS_PER_HOUR", 60, minimum=0)
CINDY_GATEWAY_NAME = env.str("CINDY_GATEWAY_NAME", default="")
CINDY_SESSION_KEY = env.str("CINDY_SESSION_KEY", default="")
CINDY_OTP_AGENT = env.str("CINDY_OTP_AGENT", default="")

DEFAULT_AGENT_LLM = env.str("DEFAULT_AGENT_LLM", default="gemini")
MEDIA_MODEL = env.str("MEDIA_MODEL", default="gemini-2.5-flash")
# What the bare LLM names "gemini", "grok" and "openrouter" mean (empty: the built-in defaults).
GEMINI_MODEL = env.str("GEMINI_MODEL", default="")
GROK_MODEL = env.str("GROK_MODEL", default="")
OPENROUTER_MODEL = env.str("OPENROUTER_MODEL", default="")
MEDIA_DESC_BUDGET_PER_TICK = env.int("MEDIA_DESC_BUDGET_PER_TICK", default=8)
# Videos, video notes and animations longer than this many seconds are not described (llm/media_caps.py).
MEDIA_VIDEO_MAX_DURATION_SECONDS = _positive_int("MEDIA_VIDEO_MAX_DURATION_SECONDS", 10)
# How many frames of an animated (TGS) sticker the media model is shown (llm/media_tgs.py).
MEDIA_TGS_FRAMES = _positive_int("MEDIA_TGS_FRAMES", 4)
# What an animated sticker may cost before it is rendered (media_catalog/lottie_budget.py): layers it
# expands to through precompositions, shapes it draws (repeaters multiply), frames (op - ip), frame rate, pixels a side; and the memory (MiB)
# and seconds the child process that renders it may take (media_catalog/lottie_render.py).
CINDY_TGS_MAX_LAYERS = _positive_int("CINDY_TGS_MAX_LAYERS", 2000)
CINDY_TGS_MAX_SHAPES = _positive_int("CINDY_TGS_MAX_SHAPES", 50_000)
CINDY_TGS_MAX_FRAMES = _positive_int("CINDY_TGS_MAX_FRAMES", 600)
CINDY_TGS_MAX_FRAME_RATE = _positive_int("CINDY_TGS_MAX_FRAME_RATE", 120)
CINDY_TGS_MAX_SIDE = _positive_int("CINDY_TGS_MAX_SIDE", 2048)
CINDY_TGS_RENDER_MEMORY_MB = _positive_int("CINDY_TGS_RENDER_MEMORY_MB", 512, minimum=64)
CINDY_TGS_RENDER_SECONDS = _positive_int("CINDY_TGS_RENDER_SECONDS", 20)
# Pictures (the `image` task kind, llm/images.py): the Gemini image model, how many pictures one agent
# may make a day (midnight in TIME_ZONE), and whether a turn that read untrusted text (a web page,
# another chat's intention) may make one.
CINDY_IMAGE_MODEL = env.str("CINDY_IMAGE_MODEL", default="gemini-2.5-flash-image")
CINDY_IMAGES_PER_DAY = _positive_int("CINDY_IMAGES_PER_DAY", 10, minimum=0)
CINDY_IMAGES_AFTER_UNTRUSTED = env.bool("CINDY_IMAGES_AFTER_UNTRUSTED", default=False)
# Consolidation (engine/consolidation.py): a conversation quiet this many seconds since new messages gets
# a turn that reviews them into notes and memories, at most this many such turns per agent a day
# (midnight in TIME_ZONE; 0: none), for agents whose prompts include Task-Consolidate. While an agent
# sleeps per its schedule, a chat quiet for the asleep time (when shorter) is reviewed then.
CINDY_CONSOLIDATE_QUIET_SECONDS = _positive_int("CINDY_CONSOLIDATE_QUIET_SECONDS", 7200)
CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS = _positive_int("CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS", 600)
CINDY_CONSOLIDATE_PER_DAY = _positive_int("CINDY_CONSOLIDATE_PER_DAY", 4, minimum=0)
# Gemini explicit context caching (llm/explicit_cache.py): a conversation with at least this many
# planning turns in the last hour whose calls miss the implicit cache gets an explicit cache of its
# stable prefix (0: never; 5, the default, is where a cache pays for itself within its first hour on
# the Flash and Pro models: docs/llm.md), kept this many seconds after it is made or last extended.
CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR = _positive_int("CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR", 5, minimum=0)
CINDY_EXPLICIT_CACHE_TTL_SECONDS = _positive_int("CINDY_EXPLICIT_CACHE_TTL_SECONDS", 3600, minimum=60)
TRANSLATION_MODEL = env.str("TRANSLATION_MODEL", default="")
# Voice notes, audio and video notes (llm/transcription.py); empty: MEDIA_MODEL for a Gemini agent,
# OpenAI's gpt-4o-mini-transcribe for any other.
TRANSCRIPTION_MODEL = env.str("TRANSCRIPTION_MODEL", default="")
# Voice notes (the `voice` kind, llm/speech.py): the Gemini speech model and the voice a persona
# without a "# Voice" section speaks with.
CINDY_SPEECH_MODEL = env.str("CINDY_SPEECH_MODEL", default="gemini-2.5-flash-preview-tts")
CINDY_SPEECH_VOICE = env.str("CINDY_SPEECH_VOICE", default="Kore")
# With an ElevenLabs key, voice notes are spoken by ElevenLabs instead (llm/speech_elevenlabs.py).
ELEVENLABS_API_KEY = env.str("ELEVENLABS_API_KEY", default="")
ELEVENLABS_BASE_URL = env.str("ELEVENLABS_BASE_URL", default="")
CINDY_ELEVENLABS_MODEL = env.str("CINDY_ELEVENLABS_MODEL", default="eleven_multilingual_v2")
CINDY_ELEVENLABS_VOICE = env.str("CINDY_ELEVENLABS_VOICE", default="21m00Tcm4TlvDq8ikWAM")
RETRIEVAL_MAX_ROUNDS = _positive_int("RETRIEVAL_MAX_ROUNDS", 8)
# Pages a turn retrieved stay in the conversation's later turns this long after their fetch (0: off).
CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS = env.int("CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS", default=300)

GOOGLE_GEMINI_API_KEY = env.str("GOOGLE_GEMINI_API_KEY", default="")
GROK_API_KEY = env.str("GROK_API_KEY", default="")
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENROUTER_API_KEY = env.str("OPENROUTER_API_KEY", default="")
GEMINI_BASE_URL = env.str("GEMINI_BASE_URL", default="")
GROK_BASE_URL = env.str("GROK_BASE_URL", default="https://api.x.ai/v1")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
OPENROUTER_BASE_URL = env.str("OPENROUTER_BASE_URL", default="https://openrouter.ai/api/v1")
# Claude models (`claude...` LLM names) through Anthropic's Messages API (llm/providers/anthropic.py);
# an empty base URL is Anthropic's own (https://api.anthropic.com).
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="")
# The Messages API needs a cap on each reply's length: tokens, within every Claude 4 model's limit.
ANTHROPIC_MAX_TOKENS = _positive_int("ANTHROPIC_MAX_TOKENS", 8192)
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=4)
# LLM names tried in order, for agents whose persona has no "# LLM Fallback", when the agent's LLM
# fails in a way another route can fix (llm/failover.py); empty: no fallback.
CINDY_LLM_FALLBACK = env.list("CINDY_LLM_FALLBACK", default=[])
# Self-hosted or other OpenAI-compatible endpoints by name (llm/providers/__init__.py):
# "ollama=http://localhost:11434/v1,vllm=http://gpu:8000/v1" makes `ollama:llama3.1` a route to that
# endpoint's chat-completions API; its key, if it needs one, is CINDY_LLM_ENDPOINT_<NAME>_KEY, and
# CINDY_LLM_ENDPOINT_<NAME>_STRUCTURED (auto, on, off) whether it is sent the reply schema.
CINDY_LLM_ENDPOINTS = endpoints_setting("CINDY_LLM_ENDPOINTS", env.list("CINDY_LLM_ENDPOINTS", default=[]))
CINDY_LLM_ENDPOINT_KEYS = {
    label: env.str(endpoint_variable(label, "KEY"), default="") for label in CINDY_LLM_ENDPOINTS
}
CINDY_LLM_ENDPOINT_STRUCTURED = endpoints_structured_setting(
    {label: env.str(endpoint_variable(label, "STRUCTURED"), default="") for label in CINDY_LLM_ENDPOINTS}
)
# Circuit breakers per route (llm/breakers.py): after this many failed calls in a row a route is
# skipped for the cool-down (or the provider's Retry-After, when longer), then one turn probes it.
CINDY_LLM_BREAKER_FAILURES = _positive_int("CINDY_LLM_BREAKER_FAILURES", 3)
CINDY_LLM_BREAKER_COOLDOWN_SECONDS = _positive_int("CINDY_LLM_BREAKER_COOLDOWN_SECONDS", 60)

TELEGRAM_API_ID = env.str("TELEGRAM_API_ID", default="")
TELEGRAM_API_HASH = env.str("TELEGRAM_API_HASH", default="")
# Another MTProto server instead of Telegram (the loopback stand-in): host:port, and its RSA public key.
CINDY_TELEGRAM_SERVER = env.str("CINDY_TELEGRAM_SERVER", default="")
CINDY_TELEGRAM_SERVER_KEY = env.str("CINDY_TELEGRAM_SERVER_KEY", default="")
