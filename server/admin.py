"""Admin dashboard under /admin: surveys, versions, response counts.

The browser signs in once through /admin/login?token=… (the link `deniable demo` and
`deniable serve` print); the token is then kept in an HttpOnly, SameSite=Strict cookie scoped to /admin.
"""

from __future__ import annotations

from flask import Blueprint, current_app, redirect, render_template, request, url_for

from . import admin_token_valid, get_store

blueprint = Blueprint("admin", __name__, url_prefix="/admin")
COOKIE = "deniable_admin"


def _signed_in(token: str | None) -> bool:
    return admin_token_valid(get_store(), token, current_app.config.get("ADMIN_TOKEN"))


def _denied():
    return render_template("message.html", heading="Sign in needed",
                           message="Open the admin link printed by `deniable serve` or `deniable demo`.", error=True), 401


@blueprint.get("/login")
def login():
    token = request.args.get("token")
    if not _signed_in(token):
        return _denied()
    response = redirect(url_for("admin.dashboard"), code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/admin",
                        secure=request.is_secure)
    return response


@blueprint.get("/")
def dashboard():
    if not _signed_in(request.cookies.get(COOKIE)):
        return _denied()
    store = get_store()
    surveys = [{"id": r.id, "title": r.survey.title, "version": r.version, "hash": r.hash,
                "responses": store.response_count(r.id), "epsilon_total": r.survey.epsilon,
                "access": r.access, "closed": r.closed} for r in store.list_surveys()]
    return render_template("dashboard.html", surveys=surveys)
