"""`deniable serve`, `deniable demo` and `deniable init-db`: the server, on waitress or gunicorn, the demo survey, and
the database's schema."""

from __future__ import annotations

import errno
import os
import socket

import click

from deniable import storage

from .. import create_app
from ..demo import demo_survey
from ..demo import simulate as simulate_respondents
from .common import db_option, open_store


def _announce_admin(store: storage.Store, base_url: str, rotate: bool = False):
    from ..auth import ensure_admin_token, rotate_admin_token  # Flask (0.2 s): only the commands that serve

    # The sign-in page, never a link carrying the token: URLs end up in histories and proxy logs.
    click.echo(f"Admin sign-in: {base_url}/admin/login (an account from `deniable admin add NAME`, or the admin token)")
    if os.environ.get("DENIABLE_ADMIN_TOKEN"):
        click.echo("Admin token: taken from $DENIABLE_ADMIN_TOKEN.")
        return
    token = rotate_admin_token(store) if rotate else ensure_admin_token(store)
    if token:
        click.echo(f"Admin token (shown once, stored hashed; also an API token): {token}")
    else:
        click.echo("Admin token: created earlier (stored hashed); set DENIABLE_ADMIN_TOKEN to choose one.")


def _check_port(host: str, port: int):
    """One line and a non-zero exit when the address is taken, before anything says "Serving"."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # As the servers do: connections of an earlier run in TIME_WAIT do not make the port busy.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise click.ClickException(f"port {port} on {host} is already in use (another server?): "
                                           "stop it or choose another with --port") from None
            raise click.ClickException(f"cannot listen on {host}:{port} ({error.strerror})") from None


def _address(host: str, port: int) -> str:
    """host:port as a URL and gunicorn's bind write it: an IPv6 address in brackets ([::1]:8000; "::1:8000" made
    gunicorn read an empty port, and the printed links did not open)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def _serve(db: str, host: str, port: int, threads: int, workers: int = 1, config: dict | None = None):
    """waitress for one process; gunicorn (gthread workers, each building its own app and its
    own database pool after the fork) for several. No access log: it would hold addresses."""
    if workers > 1:
        try:
            from gunicorn.app.base import BaseApplication  # the server that runs, only
        except ImportError:  # Windows, or gunicorn not installed: one process with more threads
            click.echo(f"gunicorn is not available: serving {workers * threads} threads in one process instead", err=True)
            threads, workers = workers * threads, 1
        else:
            class _Gunicorn(BaseApplication):
                def load_config(self):
                    for key, value in {"bind": _address(host, port), "workers": workers, "threads": threads,
                                       "worker_class": "gthread", "accesslog": None, "errorlog": "-",
                                       "logger_class": "deniable.server.logs.AddressFreeLogger",
                                       "proc_name": "deniable", "graceful_timeout": 10, "timeout": 60,
                                       **_no_control_socket(self.cfg)}.items():
                        self.cfg.set(key, value)

                def load(self):
                    return create_app({"DATABASE": db, **(config or {})})

            _Gunicorn().run()
            return
    import waitress  # the server that runs, only

    app = create_app({"DATABASE": db, **(config or {})})
    waitress.serve(app, host=host, port=port, threads=threads, ident="deniable", clear_untrusted_proxy_headers=True)


def _no_control_socket(config) -> dict:
    """gunicorn 25's control interface is a socket at one path per user (~/.gunicorn/gunicorn.ctl): every deployment
    of the user shared it, the last one started taking it over. deniable uses none: it is turned off."""
    return {"control_socket_disable": True} if "control_socket_disable" in config.settings else {}


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 64), help="Threads per worker process.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Worker processes (gunicorn; waitress threads when gunicorn is unavailable). Nothing is kept in "
                   "one process that another needs, so several hosts may also serve one PostgreSQL database.")
@click.option("--rate-limits/--no-rate-limits", default=True, show_default=True,
              help="Limit requests per client address on public endpoints (counted in memory only).")
@click.option("--proxy-hops", envvar="DENIABLE_PROXY_HOPS", default=0, show_default=True, type=click.IntRange(0, 5),
              help="Reverse proxies in front that set X-Forwarded-For (for counting rate limits per client).")
def serve(db, host, port, threads, workers, rate_limits, proxy_hops):
    """Serve surveys and the API (waitress for one process, gunicorn for several)."""
    base_url = f"http://{_address(host, port)}"
    _check_port(host, port)
    with open_store(db, must_exist=False) as store:
        _announce_admin(store, base_url)
        for record in store.list_surveys():
            click.echo(f"Survey {record.id!r}: {base_url}/s/{record.id}")
    click.echo(f"Serving {storage.describe_database(db)} on {base_url} with {workers} worker(s) (Ctrl-C to stop)", err=True)
    _serve(db, host, port, threads, workers, {"RATELIMIT_ENABLED": rate_limits, "PROXY_HOPS": proxy_hops})


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--simulate", default=0, show_default=True, type=click.IntRange(0, 1_000_000),
              help="Add this many simulated respondents (known truth) so there is data to analyse.")
@click.option("--no-serve", is_flag=True, help="Set up (and simulate) only; do not start the server.")
def demo(db, host, port, simulate, no_serve):
    """Start the server with the demo survey (the seed's tax-dodging coin flip and one question of each type)."""
    if not no_serve:
        _check_port(host, port)

    base_url = f"http://{_address(host, port)}"
    survey_spec = demo_survey()
    with open_store(db, must_exist=False) as store:
        record, outcome = store.add_survey(survey_spec)
        click.echo(f"Demo survey {record.id!r} ({outcome}, version {record.version}, total ε {record.survey.epsilon:.3f}).")
        if simulate:
            simulate_respondents(store, survey_spec, simulate)
            click.echo(f"Added {simulate} simulated respondents; {store.response_count(record.id)} responses in all.")
        _announce_admin(store, base_url, rotate=True)
    click.echo(f"Survey link: {base_url}/s/{record.id}")
    if not no_serve:
        click.echo(f"Serving {db} on {base_url} (Ctrl-C to stop)", err=True)
        _serve(db, host, port, threads=8)


@click.command("init-db")
@db_option
@click.option("--received-on", "granularity", type=click.Choice(storage.GRANULARITIES), default=None,
              help="Keep the date each response arrived to the day (the default), the week (its Monday) "
                   "or the month (its first day). Applies to responses received from now on.")
def init_db(db, granularity):
    """Create or migrate the database schema (and set how finely arrival dates are kept)."""
    with open_store(db, must_exist=False) as store:
        if granularity:
            store.set_received_on_granularity(granularity)
        click.echo(f"{db}: schema version {store.schema_version()}; "
                   f"arrival dates kept to the {store.received_on_granularity()}")
