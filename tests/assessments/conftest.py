"""The real SDK over HTTP against the stand-in, in-process on an ephemeral port."""

import pytest

from memory_review.assessments.jev import Jev
from memory_review.assessments.standin import StandinConfig, StandinServer


@pytest.fixture
def standin_config():
    return StandinConfig()


@pytest.fixture
def standin(standin_config):
    with StandinServer(standin_config) as server:
        yield server


def make_jev(url: str, **overrides) -> Jev:
    options = dict(
        api_key="test-key",
        base_url=url,
        model="jev-1.13.0",
        timeout_s=2.0,
        max_tries=4,
        backoff_s=0.01,
        backoff_max_s=0.05,
        max_concurrency=8,
        requests_per_minute=60_000,
    )
    options.update(overrides)
    return Jev(**options)


@pytest.fixture
def jev(standin):
    return make_jev(standin.url)
