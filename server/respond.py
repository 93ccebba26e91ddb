"""Respondent pages: /s/<id> (the survey), its no-JavaScript coin form, thank-you and error pages."""

from __future__ import annotations

import secrets
from fractions import Fraction
from importlib import resources

from flask import Blueprint, Response, redirect, render_template, request, url_for

from deniable.client.exact import json_number

from . import get_store, storage
from .api import privacy_summary

blueprint = Blueprint("respond", __name__)

COIN_FLIP = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}


def _message(status: int, heading: str, message: str, back: str | None = None):
    return render_template("message.html", heading=heading, message=message, error=status >= 400, back=back), status


@blueprint.errorhandler(storage.NotFound)
def _not_found(_error):
    return _message(404, "Survey not found", "There is no survey at this address. Check the link you were given.")


@blueprint.get("/js/deniable.js")
def client_module():
    # The very module the Python package ships: one client, not a copy that could drift.
    source = resources.files("deniable.client").joinpath("js/deniable.js").read_text(encoding="utf-8")
    return Response(source, mimetype="text/javascript", headers={"Cache-Control": "no-cache"})


def offline_form_question(question) -> dict:
    """How a question can be answered without JavaScript: public ones as they are, coin-flip
    yes/no ones by the physical coin procedure; every other design needs the browser."""
    coin = question.type == "yes_no" and question.mechanism.params == COIN_FLIP
    return {"offline": coin or not question.is_private, "coin": coin}


def _question_view(question, statement: str) -> dict:
    view = {"id": question.id, "type": question.type, "text": question.text, "options": question.options,
            "required": question.required, "is_private": question.is_private, "statement": statement,
            **offline_form_question(question)}
    if question.grid:
        low, high, step = (json_number(Fraction(x)) for x in question.grid)
        view.update(min=low, max=high, step=step, grid_text=f"{low} to {high} (steps of {step})")
    return view


@blueprint.get("/s/<survey_id>")
def survey_page(survey_id):
    record = get_store().get_survey(survey_id)
    if record.closed:
        return _message(410, "This survey is closed", "Thank you for your interest; it no longer accepts answers.")
    privacy = privacy_summary(record)
    questions = [_question_view(q, privacy["questions"][q.id]["statement"]) for q in record.survey.questions.values()]
    page_data = {"hash": record.hash, "spec": record.survey.to_dict()}
    return render_template("survey.html", survey=record.survey, record=record, questions=questions, privacy=privacy,
                           page_data=page_data, token=request.args.get("t"), idempotency_key=secrets.token_hex(16),
                           skipped=[q["text"] for q in questions if not q["offline"]])


@blueprint.post("/s/<survey_id>/submit")
def submit_form(survey_id):
    """The no-JavaScript path: the form holds only coin results and public answers."""
    store = get_store()
    record = store.get_survey(survey_id, request.form.get("spec_hash") or None)
    offline = {q.id for q in record.survey.questions.values() if offline_form_question(q)["offline"]}
    reports = {}
    for question in record.survey.questions.values():
        if question.id not in offline:
            continue
        if question.type == "multi_select":
            reports[question.id] = request.form.getlist(question.id)  # none ticked: the empty selection
        elif question.id in request.form and request.form[question.id] != "":
            value = request.form[question.id]
            if question.type == "number":
                try:
                    value = json_number(Fraction(value))
                except (ValueError, ZeroDivisionError):
                    return _message(422, "Please check your answers", f"“{question.text}”: enter a number.", request.referrer)
            reports[question.id] = value
    unknown = sorted(set(request.form) - offline - {"spec_hash", "idempotency_key", "token"})
    if unknown:
        return _message(422, "Please check your answers", "The form contained answers this page cannot accept.")
    back = url_for("respond.survey_page", survey_id=survey_id)
    try:
        store.submit(survey_id, record.hash, request.form.get("idempotency_key"), reports,
                     request.form.get("token") or None, answerable=offline)
    except storage.Gone:
        return _message(410, "This survey is closed", "It no longer accepts answers.")
    except storage.Conflict:
        return _message(409, "Already answered", "This invitation has already been used to answer the survey.")
    except storage.Invalid as error:
        qid = (error.field or "").removeprefix("reports.")
        question = record.survey.questions.get(qid)
        detail = f"“{question.text}”: please tick one answer." if question else error.message
        return _message(422, "Please check your answers", detail, back)
    return redirect(url_for("respond.thanks", survey_id=survey_id), code=303)


@blueprint.get("/s/<survey_id>/thanks")
def thanks(survey_id):
    record = get_store().get_survey(survey_id)
    return _message(200, "Thank you", f"Your randomized answers to “{record.survey.title}” were received. "
                                      "Your true answers never left your device.")
