import os
import random
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


class SeededSource:
    """A reproducible stand-in for `secrets` (``randbelow``), for tests only."""

    def __init__(self, seed):
        self._random = random.Random(seed)

    def randbelow(self, n):
        return self._random.randrange(n)


@pytest.fixture
def rng():
    return SeededSource(20261122)


@pytest.fixture(scope="session")
def node():
    path = shutil.which("node")
    if path is None:
        pytest.fail("node is required for the JavaScript twin's tests")
    return path


# CI runs a fixed set of examples (reproducible); developers' runs explore new ones.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", max_examples=3000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


# The databases storage and server tests run on (`tests.databases`): registered here so both folders share them.
from tests.databases import db_path, demo, engine, parametrize_engines, postgres, pulse, survey  # noqa: E402, F401


def pytest_generate_tests(metafunc):
    parametrize_engines(metafunc)


@pytest.fixture(autouse=True)
def _estimates_page_in_full(monkeypatch):
    """Each test's estimates page and `survey check` work out every chart and plan (a test that checks a time limit
    sets its own: under a loaded machine's parallel run a 0..20 number's plan once took more than the 1 s a check
    spends), each test starts with no chart remembered, and no work left by an earlier test's page is still running:
    the charts are keyed by the data they show, and two tests' databases can hold the same data while one patches how
    it is estimated."""
    from deniable.analysis import plans
    from deniable.server import background, dashboard

    monkeypatch.setattr(plans, "PLANNING_SECONDS", 600.0)
    monkeypatch.setattr(dashboard, "PAGE_SECONDS", 600.0)
    monkeypatch.setattr(dashboard, "ESTIMATE_SECONDS", 600.0)
    background.wait_until_idle()
    dashboard._charts.clear()
    yield
