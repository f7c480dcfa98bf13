"""The benchmarks' settings (bench/throwaway.py chooses them): production's, but static files are
read from the finders, as the test suite reads them, since a fresh clone has run no
`collectstatic`. A page's `{% static %}` costs the same lookup either way.

A benchmark that counts the bytes a browser fetches sets BENCH_STATIC_ROOT and runs
`collectstatic` into it: production's hashed, compressed files, served as production serves them."""

import os
import tempfile
from pathlib import Path

from memory_review.settings import *  # noqa: F403

if os.environ.get("BENCH_STATIC_ROOT"):
    STATIC_ROOT = Path(os.environ["BENCH_STATIC_ROOT"])
else:
    STORAGES = {
        **STORAGES,  # noqa: F405
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    WHITENOISE_USE_FINDERS = True
    STATIC_ROOT = Path(tempfile.mkdtemp(prefix="bench-static-"))  # empty: WhiteNoise reads the finders
