"""Admin dashboard under /admin: surveys, versions, response counts.

The browser signs in once through /admin/login?token=… (the link `deniable demo` and
`deniable serve` print); the token is then kept in an HttpOnly, SameSite=Strict cookie scoped to /admin.
"""

from __future__ import annotations

import math

from flask import Blueprint, current_app, redirect, render_template, request, url_for

from . import admin_token_valid, get_store, storage

blueprint = Blueprint("admin", __name__, url_prefix="/admin")
COOKIE = "deniable_admin"


def _signed_in(token: str | None) -> bool:
    return admin_token_valid(get_store(), token, current_app.config.get("ADMIN_TOKEN"))


@blueprint.errorhandler(storage.StorageError)
def _storage_error(error):
    # The blueprint's one error path: an unknown survey or version is a page with its status.
    return render_template("message.html", heading="Not found" if error.status == 404 else "Cannot do that",
                           message=error.message, error=True), error.status


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


@blueprint.get("/surveys/<survey_id>")
def survey_estimates(survey_id):
    """Live estimates with intervals for every question, a chart each (SVG, no script)."""
    if not _signed_in(request.cookies.get(COOKIE)):
        return _denied()
    from deniable.analysis import LoadError, load, population  # the dashboard is the server's one use of analysis

    store = get_store()
    record = store.get_survey(survey_id)
    try:
        data = load(db=current_app.config["DATABASE"], survey_id=survey_id)
    except LoadError as error:
        return render_template("message.html", heading="Cannot load", message=str(error), error=True), 500
    charts = []
    for qid, question in record.survey.questions.items():
        chart = {"id": qid, "text": question.text, "design": question.mechanism.design,
                 "epsilon": question.epsilon, "rows": [], "mean": None, "error": None}
        chart["population"] = population(record.survey, qid)
        if data.n == 0:
            chart["error"] = "no responses yet"
        elif data.question_counts(qid).sum() == 0:
            chart["error"] = f"no reports yet from {chart['population'] or 'respondents'}"
        else:
            result = data.estimate(qid)
            chart.update(n=result.n, method=result.method, simultaneous=result.simultaneous, notes=result.notes,
                         certified=result.converged, certificate=result.certificate)
            if result.mean is not None:
                chart["mean"] = result.mean
            chart["rows"] = _bars(result.table)
        charts.append(chart)
    return render_template("estimates.html", record=record, survey=record.survey, charts=charts, n=data.n, inf=math.inf,
                           tokens=store.token_counts(survey_id), versions=store.versions(survey_id))


#: Chart geometry (SVG user units): label column, plotting width, row height.
LABEL_WIDTH, PLOT_WIDTH, ROW_HEIGHT = 180, 300, 26


def _bars(table) -> list[dict]:
    rows = []
    for position, (answer, row) in enumerate(table.iterrows()):
        clamp = lambda v: min(max(float(v), 0.0), 1.0)  # noqa: E731 - the axis is [0, 1]
        rows.append({
            "label": ", ".join(answer) if isinstance(answer, (list, tuple)) else str(answer),
            "y": position * ROW_HEIGHT, "estimate": float(row["estimate"]), "unbiased": float(row["unbiased"]),
            "low": float(row["ci_low"]), "high": float(row["ci_high"]),
            "bar": PLOT_WIDTH * clamp(row["estimate"]),
            "x_low": LABEL_WIDTH + PLOT_WIDTH * clamp(row["ci_low"]),
            "x_high": LABEL_WIDTH + PLOT_WIDTH * clamp(row["ci_high"]),
        })
    return rows
