import os
import socket
import threading

import pytest
from click.testing import CliRunner
from werkzeug.serving import make_server

from deniable import storage
from deniable.client import Survey
from deniable.server import create_app
from tests.conftest import EXAMPLES

ADMIN = "test-admin-token"


def pytest_generate_tests(metafunc):
    # Modules marked both_engines run each test on SQLite and on a real PostgreSQL.
    if "engine" in metafunc.fixturenames:
        definition = metafunc.definition
        both = definition.get_closest_marker("both_engines") and not definition.get_closest_marker("sqlite_only")
        metafunc.parametrize("engine", ["sqlite", "postgresql"] if both else ["sqlite"], indirect=True)


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
        return str(tmp_path / "test.db")
    return request.getfixturevalue("postgres").fresh_url()


@pytest.fixture
def app(db_path):
    return create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "TESTING": True, "RATELIMIT_ENABLED": False})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def admin_headers():
    return {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def demo():
    return Survey.from_file(EXAMPLES / "tax.yaml")


@pytest.fixture
def store(db_path, app):
    with storage.Store(db_path) as opened:
        yield opened


@pytest.fixture
def survey(store, demo):
    store.add_survey(demo)
    return demo


@pytest.fixture
def runner():
    return CliRunner()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def live_server(app):
    """The app served from a thread on 127.0.0.1; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=10)


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


def sign_in(client, token: str | None = ADMIN, name: str | None = None, password: str | None = None):
    """Sign a test client in through the form, as a browser would (CSRF cookie and field)."""
    import re as _re

    page = client.get("/admin/login").get_data(as_text=True)
    csrf = _re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    form = {"csrf": csrf, **({"name": name, "password": password} if name else {"token": token})}
    return client.post("/admin/login", data=form)


def form_key(client, survey_id: str) -> str:
    """Open the survey page as a browser would: its no-JavaScript form's CSRF value (the page
    also sets the matching cookie on the client)."""
    import re as _re

    page = client.get(f"/s/{survey_id}").get_data(as_text=True)
    return _re.search(r'name="form_key" value="([^"]+)"', page).group(1)


#: One panelist's answers to examples/panel.yaml.
PANEL_ANSWERS = {"team": "Sales", "burnout": "yes", "looking": "no", "workload": "Mostly"}


@pytest.fixture
def pulse(store):
    """The repeated survey of examples/panel.yaml, stored."""
    survey = Survey.from_file(EXAMPLES / "panel.yaml")
    store.add_survey(survey)
    return survey
