import pytest

from tests.support.demo_data import demo_database


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory):
    """A server database with the demo survey and 4000 simulated respondents (fixed seed)."""
    return demo_database(str(tmp_path_factory.mktemp("analysis") / "demo.db"), 4000, 100)
