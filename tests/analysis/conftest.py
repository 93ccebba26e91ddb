import pytest

from deniable import storage
from deniable.server.demo import demo_survey, simulate
from tests.conftest import SeededSource


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory):
    """A server database with the demo survey and 4000 simulated respondents (fixed seed)."""
    path = str(tmp_path_factory.mktemp("analysis") / "demo.db")
    survey = demo_survey()
    with storage.Store(path) as store:
        store.add_survey(survey)
        simulate(store, survey, 4000, SeededSource(100))
    return path
