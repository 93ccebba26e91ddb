"""deniable.server: the Flask app that collects randomized reports.

``create_app(config)`` builds the app; blueprints: ``api`` (JSON under /api/v1), ``respond``
(respondent pages under /s/<id>) and ``admin`` (dashboard under /admin). Blueprints get the
request's store from ``db`` and credentials from ``auth``; the database is `deniable.storage`'s.
"""

from __future__ import annotations

import os
from pathlib import Path

from deniable.storage import resolve_database

HERE = Path(__file__).resolve().parent

# Strict: scripts and styles only from this server, nothing inline, no frames, forms only here.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                           "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
#: On every response, beside the content policy (which a route may set for itself): the sniffing, framing and referrer
#: rules. Invitation links carry a token: the URL must never leak to another site.
SECURITY_HEADERS = (("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
                    ("X-Frame-Options", "DENY"))


#: Requests per client address on the public endpoints (and sign-in). Counted in this process's
#: memory only: addresses never reach the disk or the logs. With N worker processes a client may
#: reach N times as much; the admin API, which needs a token, is not limited.
#: Per client address and minute. A workplace or campus behind one NAT address is one "client": these let
#: about 500 people behind one address open and answer a survey within a few minutes (docs/api.md says so and
#: how to lower them for a public survey facing scripted floods).
RATE_LIMITS = {
    "api.get_survey": "1200 per minute",
    "api.post_response": "600 per minute",
    "api.post_batch": "30 per minute",
    "respond.survey_page": "600 per minute",
    "respond.submit_form": "300 per minute",
    "admin.sign_in": "10 per minute",
}


def create_app(config: dict | None = None):
    """The app. ``config`` keys: DATABASE (a SQLite file or a database URL), RATELIMIT_ENABLED (rate
    limits on public endpoints, default on), RATE_LIMITS (endpoint → limit), PROXY_HOPS (trusted
    proxies in front), ADMIN_TOKEN (overrides the stored one),
    MAX_CONTENT_LENGTH (bytes per request body), MAX_RESPONSE_BYTES (bytes per single response)."""
    from flask import Flask  # not at the top: commands that never serve start faster without it

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

    from . import db

    db.init_app(app)

    @app.before_request
    def refuse_nul():
        # No text that enters may hold a NUL: PostgreSQL refuses it mid-request (a 500), SQLite stores it.
        # JSON bodies are checked with the rest of their shape (exact.check_json_text); here the rest.
        from flask import request
        from werkzeug.exceptions import BadRequest

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

    from werkzeug.exceptions import HTTPException

    from . import admin, api, respond

    @app.errorhandler(HTTPException)
    def http_error(error):
        # Routes that match no blueprint (an unknown /api/v1 path, a wrong method) still answer
        # in the caller's language: JSON under /api, a page elsewhere.
        from flask import render_template, request

        if request.path.startswith("/api/"):
            return api.error_body(error.code, error.description, getattr(error, "field", None)), error.code
        if error.code == 429:  # said in the respondent's words: what happened and what to do
            from deniable.client import catalogue

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
    from .ingest import SingleResponses

    app.wsgi_app = SingleResponses(app, app.wsgi_app)  # beneath ProxyFix, which `_limit_rates` puts in front
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
    from .ingest import ENDPOINT

    for endpoint, limit in app.config["RATE_LIMITS"].items():
        if endpoint != ENDPOINT:  # single responses are counted by `ingest`, which answers them beneath Flask
            app.view_functions[endpoint] = limiter.limit(limit)(app.view_functions[endpoint])
    app.extensions["deniable_limiter"] = limiter
