import socket
import threading

import pytest
from click.testing import CliRunner
from werkzeug.serving import make_server

from deniable.client import Survey
from deniable.server import create_app, storage
from tests.conftest import EXAMPLES

ADMIN = "test-admin-token"


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "test.db")


@pytest.fixture
def app(db_path):
    return create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "TESTING": True})


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
