import socket

import pytest
from click.testing import CliRunner

from deniable import storage
from deniable.server import create_app
from tests.databases import ANSWERS, PANEL_ANSWERS, table_columns, table_rows  # noqa: F401 - used by the tests
from tests.support.serving import served

ADMIN = "test-admin-token"


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
def store(db_path, app):
    """The test's store, opened after the app (which prepared the database as a server does)."""
    with storage.Store(db_path) as opened:
        yield opened


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
    with served(app) as base:
        yield base


def wait_for_background(timeout: float = 300):
    """Until this process's background thread has finished what pages left it (estimates, plans): it holds a
    connection of its own while it works."""
    from deniable.server import background

    assert background.wait_until_idle(timeout)


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
