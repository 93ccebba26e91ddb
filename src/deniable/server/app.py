"""The app factory: `create_app` builds the Flask app (blueprints, security headers, error pages, rate limits,
the single-response fast path beneath them). `deniable.server.create_app` imports it when called, so the commands
that never serve start without Flask."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from flask import Flask, render_template, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from werkzeug.exceptions import BadRequest, HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from deniable.client import catalogue
from deniable.storage import resolve_database

from . import CONTENT_SECURITY_POLICY, HERE, RATE_LIMITS, SECURITY_HEADERS, admin, api, db, respond
from .ingest import ENDPOINT, SingleResponses


def create_app(config: dict | None = None):
    """The app. ``config`` keys: DATABASE (a SQLite file or a database URL), RATELIMIT_ENABLED (rate
    limits on public endpoints, default on), RATE_LIMITS (endpoint → limit), PROXY_HOPS (trusted
    proxies in front), ADMIN_TOKEN (overrides the stored one),
    MAX_CONTENT_LENGTH (bytes per request body), MAX_RESPONSE_BYTES (bytes per single response)."""
    # The instance folder is the working directory's (for an installed package Flask would put it under sys.prefix).
    app = Flask("deniable.server", root_path=str(HERE), instance_path=str(Path.cwd() / "instance"),
                template_folder="templates", static_folder="static")
    app.config.update(
        DATABASE=resolve_database(),
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

    db.init_app(app)

    @app.before_request
    def refuse_nul():
        # No text that enters may hold a NUL: PostgreSQL refuses it mid-request (a 500), SQLite stores it.
        # JSON bodies are checked with the rest of their shape (json_text.check_json_text); here the rest.
        entered = [(f"path.{k}", v) for k, v in (request.view_args or {}).items()]
        entered += [(f"query.{k}", v) for k, v in request.args.items(multi=True)]
        if request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            entered += [(k, v) for k, v in request.form.items(multi=True)]
        for field, value in entered:
            if isinstance(value, str) and "\x00" in value or "\x00" in field:
                refused = BadRequest(f"{field.replace(chr(0), '?')}: text with a NUL character is refused")
                refused.field = field.replace("\x00", "?")
                raise refused

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.update(SECURITY_HEADERS)
        if not response.headers.get("Cache-Control"):
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.errorhandler(HTTPException)
    def http_error(error):
        # Routes that match no blueprint (an unknown /api/v1 path, a wrong method) still answer
        # in the caller's language: JSON under /api, a page elsewhere.
        if request.path.startswith("/api/"):
            return api.error_body(error.code, error.description, getattr(error, "field", None)), error.code
        if error.code == 429:  # said in the respondent's words: what happened and what to do
            words = catalogue.messages(request.accept_languages.best_match(list(catalogue.SHIPPED)))
            return render_template("message.html", heading=words["rate_limited_heading"],
                                   message=words["rate_limited_message"], error=True), 429
        return render_template("message.html", heading=error.name, message=error.description, error=True), error.code

    @app.get("/healthz")
    def healthz():
        """For load balancers: 200 when the database answers with the schema this code expects."""
        try:
            health = db.get_store().healthy()
        except Exception as error:  # unreachable, refused, not a deniable database
            app.logger.warning("health check failed: %s", error.__class__.__name__)
            return {"ok": False, "error": "the database is unreachable"}, 503, api.retry_later(503)
        return health, 200 if health["ok"] else 503

    app.register_blueprint(api.blueprint)
    app.register_blueprint(respond.blueprint)
    app.register_blueprint(admin.blueprint)
    app.wsgi_app = SingleResponses(app, app.wsgi_app)  # beneath ProxyFix, which `_limit_rates` puts in front
    _limit_rates(app)
    return app


def _limit_rates(app):
    """Flask-Limiter with in-memory counters. Behind a reverse proxy, PROXY_HOPS trusted hops of
    X-Forwarded-For give the client's address (ProxyFix); it is used for counting, nothing else."""
    if app.config["PROXY_HOPS"]:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=app.config["PROXY_HOPS"], x_proto=app.config["PROXY_HOPS"])
    # Flask-Limiter logs each refusal with the client's address: never let that reach a log.
    limiter = Limiter(get_remote_address, app=app, storage_uri="memory://", headers_enabled=True)
    quiet = logging.getLogger("flask-limiter")
    quiet.setLevel(logging.CRITICAL + 1)
    quiet.propagate = False
    for endpoint, limit in app.config["RATE_LIMITS"].items():
        if endpoint != ENDPOINT:  # single responses are counted by `ingest`, which answers them beneath Flask
            app.view_functions[endpoint] = limiter.limit(limit)(app.view_functions[endpoint])
    app.extensions["deniable_limiter"] = limiter
