"""deniable.server: the Flask app that collects randomized reports.

``create_app(config)`` builds the app (`app`); blueprints: ``api`` (JSON under /api/v1), ``respond``
(respondent pages under /s/<id>) and ``admin`` (dashboard under /admin). Blueprints get the
request's store from ``db`` and credentials from ``auth``; the database is `deniable.storage`'s.
"""

from __future__ import annotations

from pathlib import Path

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
    """The app (`app.create_app`, whose docstring lists the ``config`` keys)."""
    from .app import create_app as build  # Flask and the blueprints: not loaded by the commands that never serve

    return build(config)
