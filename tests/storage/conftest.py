import pytest

from deniable import storage


@pytest.fixture
def store(db_path):
    """The test's store, the schema created by opening it (no server)."""
    with storage.Store(db_path) as opened:
        yield opened
