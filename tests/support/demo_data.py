"""The demo survey in a database of its own with simulated respondents, for tests that read it (analysis, the model
surfaces)."""

from __future__ import annotations

from deniable import storage
from deniable.server.demo import demo_survey, simulate
from tests.conftest import SeededSource


def demo_database(path: str, respondents: int, seed: int) -> str:
    """A SQLite database at ``path`` with the demo survey and ``respondents`` simulated with ``seed``; its path."""
    survey = demo_survey()
    with storage.Store(path) as store:
        store.add_survey(survey)
        simulate(store, survey, respondents, SeededSource(seed))
    return path
