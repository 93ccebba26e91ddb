"""Admin dashboard under /admin: surveys, versions, live estimates, closing a survey, invitations.

Who may sign in and how sessions and forms are checked is `auth`'s; every action lands in the
audit log.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
import time

from flask import Blueprint, abort, current_app, g, redirect, render_template, request, url_for

from deniable import storage
from deniable.client import SpecError, Survey
from deniable.client.errors import DeniableError
from deniable.client.specfile import MAX_SPEC_BYTES

from .api import export_response
from .auth import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    admin_token_valid,
    check_csrf,
    check_password_bounded,
    current_session,
    set_cookie,
    signed_in,
    signed_out,
)
from .background import finish_later, pending
from .db import get_store
from .export_formats import EXPORT_FORMATS
from .exports import ExportUnavailable, PooledRecord

blueprint = Blueprint("admin", __name__, url_prefix="/admin")


@blueprint.errorhandler(storage.StorageError)
def _storage_error(error):
    # The blueprint's one error path: an unknown survey or version is a page with its status.
    return render_template("message.html", heading="Not found" if error.status == 404 else "Cannot do that",
                           message=error.message, error=True), error.status


@blueprint.app_context_processor
def _admin_context():
    session = g.get("admin_session")
    return {"admin_session": session} if session else {}


@blueprint.get("/login")
def login():
    message = None
    if "token" in request.args:  # old links carried the token in the address: no longer accepted
        message = "Sign-in links that carry the admin token are no longer accepted; paste the token below."
    csrf = secrets.token_urlsafe(24)
    response = current_app.make_response(render_template("login.html", csrf=csrf, message=message))
    set_cookie(response, LOGIN_COOKIE, csrf, url_for("admin.login"))
    return response


@blueprint.post("/login")
def sign_in():
    check_csrf(request.cookies.get(LOGIN_COOKIE))
    store = get_store()
    name, password, token = (request.form.get(k, "") for k in ("name", "password", "token"))
    who = None
    if token:
        if admin_token_valid(store, token, current_app.config.get("ADMIN_TOKEN")):
            who = "admin token"
    elif name and password:
        checked = check_password_bounded(store, name, password)
        if checked is None:
            response = current_app.make_response((render_template(
                "login.html", csrf=request.cookies.get(LOGIN_COOKIE, ""), message="Too many sign-ins at once: "
                "try again in a moment."), 429))
            response.headers["Retry-After"] = "1"
            return response
        who = name if checked else None
    if who is None:
        store.refused_sign_in((name or "admin token")[:64])
        csrf = secrets.token_urlsafe(24)
        response = current_app.make_response((render_template(
            "login.html", csrf=csrf, message="That name and password (or token) did not match. "
            f"After {storage.SIGN_IN_FAILURES} failures an account waits {storage.SIGN_IN_LOCK.seconds // 60} minutes."), 401))
        set_cookie(response, LOGIN_COOKIE, csrf, url_for("admin.login"))
        return response
    session_id, _csrf = store.start_session(who)
    store.audit(who, "signed in")
    response = redirect(url_for("admin.dashboard"), code=303)
    set_cookie(response, SESSION_COOKIE, session_id, "/admin", max_age=int(storage.SESSION_LIFETIME.total_seconds()))
    response.delete_cookie(LOGIN_COOKIE, path=url_for("admin.login"))
    return response


@blueprint.post("/logout")
@signed_in
def sign_out():
    store = get_store()
    store.end_session(request.cookies.get(SESSION_COOKIE))
    store.audit(current_session()["admin"], "signed out")
    response = signed_out()
    response.delete_cookie(SESSION_COOKIE, path="/admin")
    return response


@blueprint.get("/")
@signed_in
def dashboard():
    return _dashboard()


def _dashboard(problem: str | None = None, spec: str = "", confirm: tuple[str, ...] = ()):
    store = get_store()
    surveys = [{"id": r.id, "title": r.survey.title, "version": r.version, "hash": r.hash,
                "responses": store.response_count(r.id), "version_responses": r.responses,
                "epsilon_total": r.survey.epsilon, "access": r.access, "closed": r.closed} for r in store.list_surveys()]
    return render_template("dashboard.html", surveys=surveys, problem=problem, spec=spec,
                           confirm=confirm)


@blueprint.post("/surveys")
@signed_in
def add_survey():
    """A new survey, or a new version of one, from a spec pasted or uploaded (YAML or JSON)."""
    session = current_session()

    upload = request.files.get("spec_file")
    text = request.form.get("spec", "")
    try:
        if upload is not None and upload.filename:
            raw = upload.read(MAX_SPEC_BYTES + 1)
            if len(raw) > MAX_SPEC_BYTES:
                raise SpecError(f"survey: larger than {MAX_SPEC_BYTES // 1024} KiB, the limit for a survey spec")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise SpecError("survey: the file is not UTF-8 text (a spec is YAML or JSON)") from None
        if not text.strip():
            raise SpecError("survey: paste a spec or choose a file")
        survey = Survey.from_yaml(text)  # YAML 1.2 reads JSON too
        survey.check_fieldable()  # said here with the spec kept in the form (storage refuses it too)
    except SpecError as error:
        return _dashboard(problem=str(error), spec=text), 422
    access = request.form.get("access") if request.form.get("access") in ("open", "token") else None
    try:
        record, outcome = get_store().add_survey(survey, access, actor=session["admin"],
                                                 confirm_lower_privacy=request.form.get("confirm_lower_privacy") == "1",
                                                 confirm_redesign=request.form.get("confirm_redesign") == "1")
    except storage.StorageError as error:  # refused as it stands (a panel's design changed): the spec stays in the form
        needed = error.needed if isinstance(error, storage.Unconfirmed) else ()
        return _dashboard(problem=error.message, spec=text, confirm=needed), error.status
    return redirect(url_for("admin.survey_estimates", survey_id=record.id, added=outcome), code=303)


@blueprint.get("/surveys/<survey_id>")
@signed_in
def survey_estimates(survey_id):
    """Live estimates, with intervals and a chart each (SVG, no script): of every version pooled once two
    versions hold responses (after a wording change the current version alone is a fraction of the data),
    else of the current version. Each version keeps its own tab."""
    answered = [v for v in get_store().versions(survey_id) if v["responses"]]
    return _estimates_page(survey_id, pooled=len(answered) > 1)


@blueprint.get("/surveys/<survey_id>/versions/<int:number>")
@signed_in
def version_estimates(survey_id, number):
    """The estimates of one version, current or not: its responses stay reachable."""
    return _estimates_page(survey_id, version=number)


@blueprint.get("/surveys/<survey_id>/pooled")
@signed_in
def pooled_estimates(survey_id):
    """Every version pooled, question by question where the randomization is the same."""
    return _estimates_page(survey_id, pooled=True)


@blueprint.get("/surveys/<survey_id>/versions/<int:number>/export.<fmt>")
@blueprint.get("/surveys/<survey_id>/pooled/export.<fmt>")
@signed_in
def export_download(survey_id, fmt, number=None):
    """One version's reports (CSV, JSON lines, SPSS, Stata) or its codebook, or every version's in one file
    (no number), as the API serves them."""
    session = current_session()

    if fmt not in EXPORT_FORMATS:
        abort(404)
    store = get_store()
    record = PooledRecord.of(store, survey_id) if number is None else store.find_version(survey_id, version=number)
    try:
        return export_response(store, record, fmt, session["admin"])
    except ExportUnavailable as error:
        return render_template("message.html", heading="Cannot export", message=str(error), error=True), 501


@blueprint.get("/surveys/<survey_id>/versions/<int:number>/estimates.<fmt>")
@blueprint.get("/surveys/<survey_id>/pooled/estimates.<fmt>")
@signed_in
def estimates_download(survey_id, fmt, number=None):
    """The estimates on the page as the CLI prints them (`deniable estimate --format csv|json`)."""
    # pandas and scipy (0.5 s) load on the first estimate, not when a worker starts
    from deniable.analysis.loading import load
    from deniable.analysis.sample_design import SampleDesign
    from deniable.analysis.tables import estimate_table

    if fmt not in ("csv", "json"):
        abort(404)
    by = request.args.get("by") or None  # a public question or a frame column: each group a domain of the sample
    values = request.args.get("values") in ("1", "true")  # a wide number's row per value, not its bins
    store = get_store()
    store.get_survey(survey_id)
    if number is not None:
        store.find_version(survey_id, version=number)  # an unknown version is a 404 page
    try:
        data = load(store=store, survey_id=survey_id, version=number, all_versions=number is None)
        table = estimate_table(data, by=by, design=SampleDesign.of(data.survey), values=values)
    except DeniableError as error:
        return render_template("message.html", heading="Cannot estimate", message=str(error), error=True), 422
    which = ("pooled" if number is None else f"v{number}") + (f"-by-{re.sub(r'[^A-Za-z0-9_.-]', '_', by)}" if by else "") \
        + ("-values" if values else "")
    return current_app.response_class(
        table.to_csv() if fmt == "csv" else table.to_json(), mimetype="text/csv" if fmt == "csv" else "application/json",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-{which}-estimates.{fmt}"'})


#: Seconds a view of the model page waits for its fit (worked out in the background) before it shows that the fit is
#: under way and reloads itself; the longest formula accepted.
MODEL_WAIT, MODEL_FORMULA_CHARS = 6.0, 500


@blueprint.get("/surveys/<survey_id>/model")
@signed_in
def model_page(survey_id):
    """A multilevel model of a randomized yes/no answer with a random intercept per group (`analysis.mixed`), and each
    group's small-area estimate over the sample's own cells, ordered, as a chart and a table (CSV and JSON too)."""
    # the analysis (pandas, scipy) loads with the first model page, as with the first estimates page
    from .model_view import suggested_formula

    store = get_store()
    current = store.get_survey(survey_id)
    formula = request.args.get("formula", "").strip()
    if not formula:
        return render_template("model.html", record=current, survey=current.survey, formula="",
                               suggestion=suggested_formula(current.survey), view=None, waiting=False, inf=math.inf)
    view, status = _model_view(survey_id, current, formula, wait=MODEL_WAIT)
    return render_template("model.html", record=current, survey=current.survey, formula=formula, suggestion="",
                           view=view, waiting=view is None, inf=math.inf), status


@blueprint.get("/surveys/<survey_id>/model.<fmt>")
@signed_in
def model_download(survey_id, fmt):
    """The area table of the model page (`deniable model --areas --format csv|json`)."""
    if fmt not in ("csv", "json"):
        abort(404)
    current = get_store().get_survey(survey_id)
    formula = request.args.get("formula", "").strip()
    view, status = _model_view(survey_id, current, formula, wait=None)
    if view.get("error") or not view.get("areas"):
        message = view.get("error") or f"no estimate for each group: {view['no_areas']}"
        return render_template("message.html", heading="Cannot fit the model", message=message, error=True), 422
    return current_app.response_class(
        view["area_csv"] if fmt == "csv" else view["area_json"], mimetype="text/csv" if fmt == "csv" else "application/json",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-v{current.version}-areas.{fmt}"'})


def _model_view(survey_id, current, formula: str, wait: float | None) -> tuple[dict | None, int]:
    """The remembered figures of ``formula`` over the current version's responses, else worked out: in the background
    while the page waits up to ``wait`` seconds (None: here, for a download). None while still under way."""
    # the analysis (pandas, scipy) loads with the first model page, as with the first estimates page
    from deniable.analysis.loading import load

    from .model_view import fit_model, remembered

    if not formula or len(formula) > MODEL_FORMULA_CHARS:
        return {"error": f"formula: write 'outcome ~ covariates + (1 | group)' in at most {MODEL_FORMULA_CHARS} "
                         "characters"}, 422
    database = current_app.config["DATABASE"]
    data = load(store=get_store(), survey_id=survey_id, version=current.version)
    key = (hashlib.sha256(database.encode()).hexdigest()[:16], survey_id, current.version, data.n, formula, 0.95)
    view = remembered(key)
    if view is None and wait is None:
        view = fit_model(key, data, formula, 0.95)
    if view is None:
        def fit_in_background():
            with storage.Store(database, migrate=False) as own:
                fit_model(key, load(store=own, survey_id=survey_id, version=current.version), formula, 0.95)

        finish_later(("model", *key), fit_in_background)
        waited = time.monotonic()
        while view is None and pending(("model", *key)) and time.monotonic() - waited < wait:
            time.sleep(0.05)
            view = remembered(key)
        view = view or remembered(key)
    if view is None:
        return None, 202
    return view, 422 if view.get("error") else 200


def _estimates_page(survey_id, version: int | None = None, pooled: bool = False):
    # The dashboard is the server's one use of analysis (pandas, scipy): loaded with the first estimates page, not by
    # every worker at start.
    from deniable.analysis.errors import LoadError
    from deniable.analysis.loading import load
    from deniable.analysis.planned_design import planned_design
    from deniable.analysis.plans import plan
    from deniable.analysis.sample_design import SampleDesign

    from .dashboard import ESTIMATE_SECONDS, PAGE_SECONDS, asked_shares, day_bars, estimate_charts, group_choices

    store = get_store()
    current = store.get_survey(survey_id)
    record = store.find_version(survey_id, version=version) if version is not None else current
    try:
        # The request's own store: a store opened per page view kept one of PostgreSQL's pooled connections each, and
        # a worker's 32nd view of this page answered 500.
        data = load(store=store, survey_id=survey_id, version=None if pooled else record.version, all_versions=pooled)
    except LoadError as error:
        return render_template("message.html", heading="Cannot load", message=str(error), error=True), 500
    design = SampleDesign.of(data.survey)
    database = current_app.config["DATABASE"]
    # While the background thread works on this page's estimates or plans, a view spends no time on them again: it
    # shows what is remembered (a wide grid's plan takes minutes, and each view spent its second on it anew).
    # Named by a digest of the database's location: a failed job's name is logged, and a PostgreSQL URL may hold a password.
    job = ("estimates", hashlib.sha256(database.encode()).hexdigest()[:16], survey_id, pooled, record.version)
    started = time.thread_time()
    charts = estimate_charts(data, design, time_limit=0.0 if pending(job) else ESTIMATE_SECONDS)
    planning_seconds = max(PAGE_SECONDS - (time.thread_time() - started), 0.0)  # what the estimates left of the page's
    estimating_later = False
    if charts.pending:
        # Worked out by this process's background thread from its own connection (the request's goes back to the pool
        # when the page is sent); the next view finds the charts remembered.
        which = {"version": None if pooled else record.version, "all_versions": pooled}

        def estimate_the_rest():
            with storage.Store(database, migrate=False) as own:
                estimate_charts(load(store=own, survey_id=survey_id, **which), design)

        estimating_later = finish_later(job, estimate_the_rest)
    planned = request.args.get("n", "1000")
    planned = int(planned) if planned.isdigit() and 0 < int(planned) <= 10**9 else 1000
    observed = asked_shares(data, charts)
    # The plan's design: the spec's sample, sized by the frame of the invitations issued (an ICC of ASSUMED_ICC, said).
    sample = planned_design(data.survey, planned, frame=store.frame_invitations(survey_id) or None)
    job = ("plan", current.hash, planned, tuple(sorted(observed.items())), sample)
    plans = plan(data.survey, planned, time_limit=0.0 if pending(job) else planning_seconds, asked=observed,
                 design=sample)
    planning_later = False
    if not plans.complete:
        # The rest is worked out by this process's background thread; the next view finds it remembered.
        planning_later = finish_later(job, lambda: plan(data.survey, planned, asked=observed, design=sample))
    return render_template("estimates.html", record=record, current=current, survey=data.survey, charts=charts,
                           export_formats=EXPORT_FORMATS,
                           n=data.n, inf=math.inf, pooled=pooled, loaded=data, days=day_bars(store.responses_per_day(survey_id)),
                           waves=store.waves(survey_id) if current.survey.repeated is not None else None,
                           quotas=store.quota_counts(survey_id) if current.survey.quotas else None,
                           plans=plans, page_seconds=PAGE_SECONDS, planning_later=planning_later,
                           estimate_seconds=ESTIMATE_SECONDS, estimating_later=estimating_later,
                           added=request.args.get("added"),
                           planned=planned, tokens=store.token_counts(survey_id), versions=store.versions(survey_id),
                           group_choices=group_choices(data.survey),
                           realised={chart["id"]: chart.get("design_effect") for chart in charts})


@blueprint.post("/surveys/<survey_id>/close")
@signed_in
def close(survey_id):
    session = current_session()
    get_store().close_survey(survey_id, actor=session["admin"])
    return redirect(url_for("admin.survey_estimates", survey_id=survey_id), code=303)


@blueprint.post("/surveys/<survey_id>/reopen")
@signed_in
def reopen(survey_id):
    session = current_session()
    get_store().reopen_survey(survey_id, actor=session["admin"])
    return redirect(url_for("admin.survey_estimates", survey_id=survey_id), code=303)


@blueprint.post("/surveys/<survey_id>/waves")
@signed_in
def open_wave(survey_id):
    get_store().open_wave(survey_id, request.form.get("label", "").strip(), actor=current_session()["admin"])
    return redirect(url_for("admin.survey_estimates", survey_id=survey_id) + "#waves", code=303)


@blueprint.post("/surveys/<survey_id>/waves/close")
@signed_in
def close_wave(survey_id):
    get_store().close_wave(survey_id, actor=current_session()["admin"])
    return redirect(url_for("admin.survey_estimates", survey_id=survey_id) + "#waves", code=303)


@blueprint.post("/surveys/<survey_id>/tokens")
@signed_in
def invitations(survey_id):
    """New single-use invitation links, shown once on this page (only their hashes are kept)."""
    session = current_session()
    upload = request.files.get("frame")
    if upload is not None and upload.filename:  # one invitation per row of the sample's frame (a CSV file)
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise storage.Invalid("frame: not a UTF-8 text file", "frame") from None
        tokens = get_store().issue_tokens(survey_id, actor=session["admin"], frame=storage.frame_rows_from_csv(text))
    else:
        try:
            count = int(request.form.get("count", ""))
        except ValueError:
            count = 0
        tokens = get_store().issue_tokens(survey_id, count, actor=session["admin"])
    base = request.host_url.rstrip("/")
    return render_template("invitations.html", survey_id=survey_id,
                           links=[f"{base}/s/{survey_id}?t={t}" for t in tokens])


@blueprint.get("/audit")
@signed_in
def audit():
    """Admin actions by default, refused sign-ins on their own (``?kind=refusals``), 100 lines a page."""
    kind = "refusals" if request.args.get("kind") == "refusals" else "actions"
    page = request.args.get("page", "1")
    page = int(page) if page.isdigit() and 0 < int(page) <= 10**6 else 1
    entries = get_store().audit_log(AUDIT_PAGE + 1, (page - 1) * AUDIT_PAGE, kind)
    return render_template("audit.html", entries=entries[:AUDIT_PAGE], kind=kind, page=page,
                           more=len(entries) > AUDIT_PAGE)


AUDIT_PAGE = 100
