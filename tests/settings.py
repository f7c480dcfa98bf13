"""The test suite's settings: production's, with a fixed key and static files served from the
finders (no `collectstatic` before each run; tests/test_safe_defaults.py checks the collected,
hashed files WhiteNoise serves in production)."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-" + "k3y-" * 12)
os.environ.setdefault("CACHE_KEY_PREFIX", f"memory-review-tests-{os.getpid()}")

from memory_review.settings import *  # noqa: E402,F403

STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
STATIC_ROOT = VAR_DIR / "tests-staticfiles"  # noqa: F405 (empty: WhiteNoise reads the finders)
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# Tasks queued by the suite (a transactional test's on_commit) stay in this process: never on a
# Redis a developer's demo worker reads. The worker drills bring their own broker (TEST_BROKER_URL).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://")  # the worker drills set theirs

# Django's advice for test suites: a fast hasher. PBKDF2's million rounds cost 0.47 s a user on
# this machine, and the suite makes hundreds (every fixture user, six per demo seed). Production
# keeps Django's default hashers (memory_review/settings.py sets none).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
