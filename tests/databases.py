"""What tests of storage and of the server share: the engines a test runs on (``both_engines`` modules run each test
on SQLite and on a throwaway PostgreSQL), the database it gets, the demo surveys and answers to them, and readers of
raw tables. Its fixtures are registered by the root conftest; each folder brings its own ``store``."""

import os

import pytest

from deniable import storage
from deniable.client import Survey
from tests.conftest import EXAMPLES


def parametrize_engines(metafunc):
    # Modules marked both_engines run each test on SQLite and on a real PostgreSQL.
    if "engine" in metafunc.fixturenames:
        definition = metafunc.definition
        both = definition.get_closest_marker("both_engines") and not definition.get_closest_marker("sqlite_only")
        engines = ["sqlite", "postgresql"] if both else ["sqlite"]
        if both and definition.get_closest_marker("postgresql_only"):
            engines = ["postgresql"]
        metafunc.parametrize("engine", engines, indirect=True)


@pytest.fixture
def engine(request):
    return request.param


@pytest.fixture(scope="session")
def postgres():
    from tests.postgres import ThrowawayPostgres, binaries

    if binaries() is None:
        message = "PostgreSQL's initdb is missing: scripts/test.sh installs Debian's postgresql"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = ThrowawayPostgres()
    yield server
    server.stop()


@pytest.fixture
def db_path(tmp_path, engine, request):
    """The test's database: a SQLite file, or a fresh schema of the throwaway PostgreSQL."""
    if engine == "sqlite":
        yield str(tmp_path / "test.db")
        return
    url = request.getfixturevalue("postgres").fresh_url()
    yield url
    # Each test's schema has its own pool: closed after it, so a worker's thousand tests do not hold a thousand
    # connections against the server's max_connections.
    storage.postgresql.close_pools(url)


@pytest.fixture
def demo():
    return Survey.from_file(EXAMPLES / "tax.yaml")


@pytest.fixture
def survey(store, demo):
    store.add_survey(demo)
    return demo


ANSWERS = {"dodged": "yes", "region": "North", "cash": "Cash in hand", "fairness": "Agree",
           "undeclared": ["Tips"], "hours": 10}


def table_rows(store, table: str) -> list[dict]:
    """Every row of a table as dicts, on either engine (table names come from the tests)."""
    cursor = store.execute(f"SELECT * FROM {table}")
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def table_columns(store, table: str) -> set[str]:
    cursor = store.execute(f"SELECT * FROM {table} WHERE 1 = 0")
    return {c[0] for c in cursor.description}


#: One panelist's answers to examples/panel.yaml.
PANEL_ANSWERS = {"team": "Sales", "burnout": "yes", "looking": "no", "workload": "Mostly"}


@pytest.fixture
def pulse(store):
    """The repeated survey of examples/panel.yaml, stored."""
    survey = Survey.from_file(EXAMPLES / "panel.yaml")
    store.add_survey(survey)
    return survey
