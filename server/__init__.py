"""deniable.server: the Flask app that collects randomized reports.

``create_app(config)`` builds the app; blueprints: ``api`` (JSON under /api/v1), ``respond``
(respondent pages under /s/<id>) and ``admin`` (dashboard under /admin). Storage lives in
`deniable.server.storage`, the one module that touches the database.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from pathlib import Path

from . import storage

HERE = Path(__file__).resolve().parent

# Strict: scripts and styles only from this server, nothing inline, no frames, forms only here.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                           "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


#: Requests per client address on the public endpoints (and sign-in). Counted in this process's
#: memory only: addresses never reach the disk or the logs. With N worker processes a client may
#: reach N times as much; the admin API, which needs a token, is not limited.
RATE_LIMITS = {
    "api.get_survey": "300 per minute",
    "api.post_response": "120 per minute",
    "api.post_batch": "30 per minute",
    "respond.survey_page": "60 per minute",
    "respond.submit_form": "30 per minute",
    "admin.sign_in": "10 per minute",
}


def default_database() -> str:
    """``$DENIABLE_DATABASE_URL`` (``sqlite:///…`` or ``postgresql://…``), else ``$DENIABLE_DB``
    (a SQLite file), else ``deniable.db``."""
    return os.environ.get("DENIABLE_DATABASE_URL") or os.environ.get("DENIABLE_DB") or "deniable.db"


def create_app(config: dict | None = None):
    """The app. ``config`` keys: DATABASE (a SQLite file or a database URL), RATELIMIT_ENABLED (rate
    limits on public endpoints, default on), RATE_LIMITS (endpoint → limit), PROXY_HOPS (trusted
    proxies in front), ADMIN_TOKEN (overrides the stored one),
    MAX_CONTENT_LENGTH (bytes per request body), MAX_RESPONSE_BYTES (bytes per single response)."""
    from flask import Flask, g  # not at the top: commands that never serve start faster without it

    # deniable is a namespace package: give Flask its paths rather than let it guess them.
    app = Flask("deniable.server", root_path=str(HERE), instance_path=str(Path.cwd() / "instance"),
                template_folder="templates", static_folder="static")
    app.config.update(
        DATABASE=default_database(),
        ADMIN_TOKEN=os.environ.get("DENIABLE_ADMIN_TOKEN"),
        MAX_CONTENT_LENGTH=2 * 1024 * 1024,
        MAX_RESPONSE_BYTES=64 * 1024,
        MAX_BATCH_ITEMS=1000,
        JSON_SORT_KEYS=False,
        RATELIMIT_ENABLED=True,
        RATE_LIMITS=RATE_LIMITS,
        PROXY_HOPS=int(os.environ.get("DENIABLE_PROXY_HOPS", "0")),
    )
    app.config.update(config or {})
    app.json.sort_keys = False
    app.json.ensure_ascii = False

    with storage.Store(app.config["DATABASE"]):
        pass  # creates or migrates the schema before the first request

    # SQLite: one connection per server thread, kept open (opening one per request costs a WAL
    # checkpoint whenever the last connection closes). PostgreSQL: one from the pool per request.
    app.extensions["deniable_stores"] = threading.local()

    @app.teardown_appcontext
    def release_store(_exc):
        store = g.pop("store", None)
        if store is None:
            return
        store.engine.rollback()  # never carry a transaction over
        if not store.reusable:
            store.close()

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers["X-Content-Type-Options"] = "nosniff"
        # Invitation links carry a token: never leak the URL to another site.
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        if not response.headers.get("Cache-Control"):
            response.headers["Cache-Control"] = "no-store"
        return response

    from werkzeug.exceptions import HTTPException

    from . import admin, api, respond

    @app.errorhandler(HTTPException)
    def http_error(error):
        # Routes that match no blueprint (an unknown /api/v1 path, a wrong method) still answer
        # in the caller's language: JSON under /api, a page elsewhere.
        from flask import render_template, request

        if request.path.startswith("/api/"):
            return api.error_body(error.code, error.description), error.code
        return render_template("message.html", heading=error.name, message=error.description, error=True), error.code

    @app.get("/healthz")
    def healthz():
        """For load balancers: 200 when the database answers with the schema this code expects."""
        try:
            health = get_store().healthy()
        except Exception as error:  # unreachable, refused, not a deniable database
            app.logger.warning("health check failed: %s", error.__class__.__name__)
            return {"ok": False, "error": "the database is unreachable"}, 503
        return health, 200 if health["ok"] else 503

    app.register_blueprint(api.blueprint)
    app.register_blueprint(respond.blueprint)
    app.register_blueprint(admin.blueprint)
    _limit_rates(app)
    return app


def _limit_rates(app):
    """Flask-Limiter with in-memory counters. Behind a reverse proxy, PROXY_HOPS trusted hops of
    X-Forwarded-For give the client's address (ProxyFix); it is used for counting, nothing else."""
    import logging

    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    if app.config["PROXY_HOPS"]:
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=app.config["PROXY_HOPS"], x_proto=app.config["PROXY_HOPS"])
    # Flask-Limiter logs each refusal with the client's address: never let that reach a log.
    limiter = Limiter(get_remote_address, app=app, storage_uri="memory://", headers_enabled=True)
    quiet = logging.getLogger("flask-limiter")
    quiet.setLevel(logging.CRITICAL + 1)
    quiet.propagate = False
    for endpoint, limit in app.config["RATE_LIMITS"].items():
        app.view_functions[endpoint] = limiter.limit(limit)(app.view_functions[endpoint])
    app.extensions["deniable_limiter"] = limiter


def get_store() -> storage.Store:
    """The request's store, opened on first use and closed at teardown."""
    from flask import current_app, g

    if "store" not in g:
        local = current_app.extensions["deniable_stores"]
        store = getattr(local, "store", None)
        if store is None:
            store = storage.Store(current_app.config["DATABASE"], migrate=False)
            if store.reusable:
                local.store = store
        g.store = store
    return g.store


def ensure_admin_token(store: storage.Store) -> str | None:
    """Create the admin token on first run: returns it (to print once) or None if one exists."""
    if store.get_setting("admin_token_hash"):
        return None
    token = secrets.token_urlsafe(24)
    store.set_setting("admin_token_hash", hashlib.sha256(token.encode()).hexdigest())
    return token


def rotate_admin_token(store: storage.Store) -> str:
    """Replace the admin token (the demo prints a fresh working link every time)."""
    store.set_setting("admin_token_hash", "")
    return ensure_admin_token(store)


def admin_token_valid(store: storage.Store, presented: str | None, configured: str | None) -> bool:
    """The deployment's admin token: ``$DENIABLE_ADMIN_TOKEN`` if set, else the stored hash."""
    if not presented:
        return False
    if configured:
        return hmac.compare_digest(presented.encode(), configured.encode())
    stored = store.get_setting("admin_token_hash")
    return bool(stored) and hmac.compare_digest(hashlib.sha256(presented.encode()).hexdigest(), stored)


def api_caller(store: storage.Store, presented: str | None, configured: str | None) -> str | None:
    """Who a bearer token belongs to (for the audit log), or None: the admin token, which keeps
    working as an API token, or a named, revocable API token (`deniable admin token`)."""
    if admin_token_valid(store, presented, configured):
        return "admin token"
    return store.api_token_name(presented)
