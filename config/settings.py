"""Settings for the hang-and-timeout knowledge base.

Defaults suit a first local run (SQLite, DEBUG on, 127.0.0.1). Every value a deployment changes
comes from an environment variable, so one settings module serves development and production.
"""

from pathlib import Path
import os

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = _env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise SystemExit("SECRET_KEY must be set when DEBUG is off (see README, 'Production').")
    SECRET_KEY = "dev-only-insecure-key-never-used-with-debug-off"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]
if DEBUG:
    ALLOWED_HOSTS += ["testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "kb",
    "troubleshooter.apps.TroubleshooterConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.security.ContentSecurityPolicyMiddleware",
    "config.security.VisibleControlsMiddleware",
    "config.guards.RequestGuardMiddleware",
    "config.database.DatabaseUnavailableMiddleware",
    "config.ratelimit.RateLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

if not DEBUG:  # production serves static files itself, from STATIC_ROOT after `collectstatic`
    MIDDLEWARE.insert(1, "config.static.StaticFilesMiddleware")  # WhiteNoise, less staticfiles.json

ROOT_URLCONF = "config.urls"

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
                "kb.context.site",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

# PostgreSQL (or any database) through DATABASE_URL; SQLite under var/ when it is unset.
if "DATABASE_URL" in os.environ and not os.environ["DATABASE_URL"].strip():
    from django.core.exceptions import ImproperlyConfigured  # here: `manage.py diagnose` reads settings without Django

    raise ImproperlyConfigured(
        "DATABASE_URL is set but empty: unset it to use SQLite, or give a URL such as postgres://user:pass@host:5432/db"
    )
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{os.environ.get('SQLITE_PATH', BASE_DIR / 'var' / 'db.sqlite3')}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", 60)),
        # A persistent connection left over from before a database restart is checked before a request uses it,
        # rather than failing that request (turn 3: one failed request per stale connection after a restart).
        conn_health_checks=True,
    )
}

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets pages read while a load writes; an immediate write lock at the start of each transaction and a
    # busy timeout make concurrent writers wait their turn instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )

# "pages": case and keyword-search pages rendered once per worker process (kb/page_cache.py). Keys hold the content
# revision, so entries never go stale and need no timeout; at most MAX_ENTRIES (a case page is about 50 KB, a search
# page 20 KB: 13 MB a worker at most), the least recently used going first.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "pages": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "kb-pages",
        "TIMEOUT": None,
        "OPTIONS": {"MAX_ENTRIES": 256},
    },
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("KB_STATIC_ROOT", BASE_DIR / "var" / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed files served by WhiteNoise when DEBUG is off (after `collectstatic`).
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Where content lives and where the built search index goes (a read-only artefact for web processes).
CONTENT_DIR = Path(os.environ.get("KB_CONTENT_DIR", BASE_DIR / "content"))
SEARCH_INDEX_DIR = Path(os.environ.get("KB_INDEX_DIR", BASE_DIR / "var" / "index"))

# Pasted logs and uploads: the largest accepted body, in bytes (50 MB by default).
KB_MAX_LOG_BYTES = int(os.environ.get("KB_MAX_LOG_BYTES", 50 * 1024 * 1024))
# An uploaded archive of a job's logs is read in memory: the most it may expand to, in bytes (200 MB by default).
KB_MAX_JOB_BYTES = int(os.environ.get("KB_MAX_JOB_BYTES", 4 * KB_MAX_LOG_BYTES))
# Seconds one web diagnosis may spend matching lines; past it the answer is returned as far as it got
# (marked partial), so a crafted log cannot hold a worker. The command line has no budget.
# Per-address limits on POST /search and the admin (curators') login in the app itself, for `make run`; under
# `make serve` nginx applies them (deploy/nginx.conf), and the app, behind a unix socket, cannot tell clients apart.
KB_APP_RATE_LIMIT = _env_bool("KB_APP_RATE_LIMIT", DEBUG)
KB_DIAGNOSIS_BUDGET_S = float(os.environ.get("KB_DIAGNOSIS_BUDGET_S", "20"))
DATA_UPLOAD_MAX_MEMORY_SIZE = KB_MAX_LOG_BYTES + 1024 * 1024
# A 64-rank torchrun --log-dir holds 129 files (stdout.log and stderr.log per rank, error.json); Django's default of
# 100 refused such an upload. The job reader's own count limit (diagnosis.job_files.MAX_MEMBERS) applies after this.
DATA_UPLOAD_MAX_NUMBER_FILES = 5000
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024  # per uploaded file; past it the file spools to an unnamed temp file
FILE_UPLOAD_HANDLERS = ["kb.log_input.SpooledUploadHandler"]

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
CSRF_COOKIE_HTTPONLY = False

# Production sits behind a TLS-terminating proxy or load balancer: redirect to HTTPS, secure cookies,
# HSTS. For a plain-HTTP trial on loopback, set SECURE_SSL_REDIRECT=0 (see README, "Production").
SECURE_SSL_REDIRECT = _env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", 31536000 if SECURE_SSL_REDIRECT else 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = _env_bool("SECURE_HSTS_PRELOAD", SECURE_HSTS_SECONDS > 0)
# A load balancer's health check reaches the host over plain HTTP: answered, not redirected to HTTPS.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
if SECURE_SSL_REDIRECT:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
