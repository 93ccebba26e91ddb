"""Respondent pages: /s/<id> (the survey), its no-JavaScript coin form, thank-you and error pages.

Every page speaks the respondent's language: ``?lang=`` when given and offered, else the best
match of the browser's Accept-Language among the survey's languages, else its default. The
page's own words come from `catalogue`; the survey's words from its spec.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from fractions import Fraction
from importlib import resources

from flask import Blueprint, Response, abort, make_response, redirect, render_template, request, url_for

from deniable import storage
from deniable.client import catalogue
from deniable.client.compliance import GroupedMechanism
from deniable.client.exact import parse_fraction
from deniable.client.json_text import json_number
from deniable.client.memo import Memo
from deniable.client.promises import page_intro
from deniable.client.questions import is_right_to_left, localize
from deniable.client.reports import arm_column
from deniable.client.splitballot import SplitBallot

from .api import full_cells, retry_later
from .auth import secrets_match
from .db import get_store

blueprint = Blueprint("respond", __name__)

COIN_FLIP = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}
#: How each language names itself in the switcher.
LANGUAGE_NAMES = {"en": "English", "es": "Español", "fr": "Français", "pt": "Português", "de": "Deutsch",
                  "ar": "العربية", "he": "עברית", "sw": "Kiswahili", "hi": "हिन्दी", "zh": "中文", "ru": "Русский"}

FORM_COOKIE = "deniable_form"
#: The JS client's modules under /js/src/: plain names only (never a path).
CLIENT_MODULE = re.compile(r"[a-z][a-z_]{0,31}")
MAX_FORM_NUMBER = 40  # characters: a number beyond this is no answer, and never worth exact arithmetic


def page_language(survey=None) -> str:
    if survey is not None and not survey.languages.declared:
        # Its texts are in one unnamed language: English page words, unless it declares `languages: [xx]`.
        return catalogue.DEFAULT
    offered = survey.languages.codes if survey is not None else list(catalogue.SHIPPED)
    asked = request.values.get("lang")
    if asked in offered:
        return asked
    best = request.accept_languages.best_match(offered)
    if best:
        return best
    return survey.default_language if survey is not None and survey.default_language else catalogue.DEFAULT


def _message(status: int, heading: str, message: str, back: str | None = None, language: str | None = None,
             words: dict | None = None, survey=None):
    """A page of one message; ``survey``: the thank-you page's, whose completion code and link it shows."""
    words = words or catalogue.messages(language)
    return render_template("message.html", heading=heading, message=message, error=status >= 400, back=back,
                           lang=language or catalogue.DEFAULT, dir="rtl" if is_right_to_left(language) else "ltr",
                           back_words=words["back_to_survey"], survey=survey, words=words), status


def _not_open(survey, words: dict, language: str | None):
    """The page of a survey whose spec's window has not opened: when it opens, in UTC."""
    opens = survey.schedule.opens.strftime("%Y-%m-%d %H:%M")
    return _message(409, words["not_open_heading"], words["not_open_message"].format(opens=opens), language=language,
                    words=words)


@blueprint.errorhandler(storage.StorageError)
def _storage_error(error):
    # The blueprint's one error path: an unknown survey, a form made for another version, a
    # malformed hidden field, a closed survey or a spent token: a page, never a traceback.
    language = page_language()
    words = catalogue.messages(language)
    if error.status == 404:
        return _message(404, words["not_found_heading"], words["not_found"], language=language)
    if error.status == 410:
        return _message(410, words["closed_heading"], words["closed_message"], language=language)
    if error.status == 409 and error.field == "survey_id":  # a form sent before the survey opens
        survey = get_store().get_survey(request.view_args["survey_id"]).survey
        return _not_open(survey, survey.words(language), language)
    if error.status == 409:
        return _message(409, words["used_heading"], words["used_message"], language=language)
    if error.status in (503, 507):  # the database is away, read-only or full: nothing was stored
        page, status = _message(error.status, words["check_heading"], words["unavailable"], language=language)
        return page, status, retry_later(status)
    detail = words["stale_form"] if error.field == "spec_hash" else error.message
    return _message(error.status if 400 <= error.status < 500 else 422, words["check_heading"], detail, language=language)


@blueprint.get("/js/deniable.js")
@blueprint.get("/js/src/<module>.js")
@blueprint.get("/js/src/words/<language>.js")
def client_module(module: str | None = None, language: str | None = None):
    # The very modules the Python package ships: one client, not a copy that could drift.
    root = resources.files("deniable.client").joinpath("js")
    if language is not None:  # a shipped language's page words (the statements' templates)
        if language not in catalogue.SHIPPED:
            abort(404)
        source = root.joinpath("src", "words", f"{language}.js")
    else:
        source = root.joinpath("deniable.js") if module is None else root.joinpath("src", f"{module}.js")
    if module is not None and (not CLIENT_MODULE.fullmatch(module) or not source.is_file()):
        abort(404)
    text = source.read_text(encoding="utf-8")
    # no-cache: a browser keeps the module but asks each time; the ETag makes that question a bodiless 304, so a
    # phone coming back fetches none of the client's modules again (without it, each page view fetched all 17).
    response = Response(text, mimetype="text/javascript", headers={"Cache-Control": "no-cache"})
    response.set_etag(hashlib.sha256(text.encode()).hexdigest()[:32])
    return response.make_conditional(request)


@functools.cache
def client_module_urls() -> tuple[str, ...]:
    """Every module the page's client imports when it loads, for ``<link rel=modulepreload>``: the browser fetches
    them at once instead of level by level down the import graph (three round trips on a phone's network)."""
    root = resources.files("deniable.client").joinpath("js", "src")
    modules = sorted(entry.name for entry in root.iterdir() if entry.name.endswith(".js"))
    return ("/js/deniable.js", *(f"/js/src/{name}" for name in modules), "/js/src/words/en.js")


def offline_form_question(question, repeated: bool = False) -> dict:
    """How a question can be answered without JavaScript: public ones as they are, coin-flip
    yes/no ones by the physical coin procedure, and those the respondent randomizes (crosswise,
    triangular, a natural randomizer) as they are everywhere; every other design needs the browser.
    In a repeated survey every private question does: the device keeps the memo and adds each wave's layer."""
    coin = question.type == "yes_no" and question.mechanism.params == COIN_FLIP and not repeated
    offline = coin or not question.is_private or (question.mechanism.respondent_randomizes and not repeated)
    return {"offline": offline, "coin": coin}


def respondent_prompt(question, language: str, words: dict) -> str | None:
    """What a respondent who randomizes reads beside the question: the companion question and how to
    combine the answers, or the instruction to follow; None for every other design."""
    mechanism = question.mechanism
    if not mechanism.respondent_randomizes:
        return None
    default = question.languages.default
    if isinstance(mechanism, GroupedMechanism):  # one instruction per group; the page shows the respondent's group's
        return None
    if mechanism.design in ("crosswise", "triangular"):
        companion = localize(mechanism.params["companion"], language, default)
        return words[f"{mechanism.design}_prompt"].format(companion=companion)
    return words["randomizer_prompt"].format(instruction=localize(mechanism.params["randomizer"]["text"], language, default))


#: A no-JavaScript form's key: what `secrets.token_urlsafe(16)` makes.
FORM_KEY = re.compile(r"[A-Za-z0-9_-]{22}")


def form_draws(form_key: str) -> Memo:
    """The draws of a no-JavaScript form: its split-ballot arms and groups derive from its key (`Survey.arm_for`,
    `group_for`), which its cookie keeps, so a reload shows the same ones and a form sent back with another arm or
    group than its key's is refused. Arms and groups are public markers; the key is random and tied to no one."""
    return Memo.from_secret(hashlib.sha256(f"deniable form draws {form_key}".encode()).digest())


def _item_view(survey, item, language: str, words: dict, draws: Memo) -> dict:
    view = {"id": item.id, "type": item.type, "text": item.text_in(language), "hint": item.hint_in(language)}
    condition = survey.condition(item.id)
    view["condition"] = None if condition is None else \
        words["only_if"].format(condition=catalogue.describe_condition(condition, survey, language, words))
    if item.type == "note":
        return view
    required = item.required
    respondent = item.mechanism.design if item.mechanism.respondent_randomizes else None
    view.update(required=required is True, conditionally_required=not isinstance(required, bool),
                is_private=item.is_private, respondent=respondent_prompt(item, language, words),
                statement=item.privacy_statement(words=words), **offline_form_question(item, survey.repeated is not None))
    yes_no = [(value, item.option_label(value, language, words)) for value in ("yes", "no")]
    if item.split_ballot is not None:
        # Both arms are on the page; the page script shows the one it draws before the question is answered (the
        # no-JavaScript form: the one the server drew, in a hidden field).
        view["split"] = {"notice": words["direct_notice"], "form_arm": survey.arm_for(item.id, draws),
                         "direct": {"type": "yes_no", "options": yes_no}}
    if isinstance(item.mechanism, GroupedMechanism):
        # Cheating detection, lie detector: every group's instruction is on the page; the page script shows
        # the one of the group it draws (the no-JavaScript form: the one the server drew, in a hidden field).
        view["groups"] = [(group, words["randomizer_prompt"].format(
            instruction=localize(item.mechanism.instruction(group), language, item.languages.default)))
            for group in item.mechanism.groups]
        view["form_group"] = survey.group_for(item.id, draws)
        view["options"] = yes_no
    elif item.type == "yes_no":
        # What the respondent chooses is what is sent: the reports of a design they randomize themselves.
        view["options"] = [(value, words[value]) for value in item.mechanism.reports] if respondent else yes_no
    elif item.options:
        view["options"] = [(value, item.option_label(value, language)) for value in item.options]
    if item.grid:
        low, high, step = (json_number(Fraction(x)) for x in item.grid)
        view.update(min=low, max=high, step=step, grid_text=words["number_range"].format(min=low, max=high, step=step),
                    constraint=item.constraint_message_in(language)
                    or words["out_of_range"].format(min=low, max=high, step=step))
    return view


def _warnings(record, language: str, words: dict) -> list[str]:
    warnings = []
    public = record.survey.public_questions
    if public:
        warnings.append(words["public_warning"].format(questions=", ".join(f"“{q.text_in(language)}”" for q in public)))
    if record.access == "open":
        warnings.append(words["open_warning"])
    return warnings


def _invitation_problem(record, token: str | None, words: dict) -> tuple | None:
    """Why an invitation-only survey cannot be answered with this link, said before the form is filled
    in (status, heading, message); None when it can. Sending checks again, atomically."""
    if record.access != "token":
        return None
    if not token:
        return 403, words["needs_invitation_heading"], words["needs_invitation"]
    status = get_store().token_status(record.id, token)
    if status is None:
        return 403, words["invalid_invitation_heading"], words["invalid_invitation"]
    if status == "used":
        return 409, words["used_heading"], words["used_message"]
    return None


@blueprint.get("/s/<survey_id>")
def survey_page(survey_id):
    record = get_store().get_survey(survey_id)
    survey = record.survey
    language = page_language(survey)
    words = survey.words(language)
    state = record.state
    if state == "closed":
        return _message(410, words["closed_heading"], words["closed_message"], language=language, words=words)
    if state == "not open":
        return _not_open(survey, words, language)
    wave = get_store().open_wave_label(survey_id) if survey.repeated is not None else None
    if survey.repeated is not None and wave is None:
        return _message(409, words["no_wave_heading"], words["no_wave_message"], language=language, words=words)
    token = request.args.get("t")
    refused = _invitation_problem(record, token, words)
    if refused:
        return _message(*refused, language=language, words=words)
    # CSRF for the no-JavaScript form: a double-submit value, in a SameSite=Strict cookie (which a form on another
    # site never sends) and in the form. Random, never stored, tied to no one; kept while its cookie is (the form's
    # arms and groups derive from it: `form_draws`).
    kept = request.cookies.get(FORM_COOKIE, "")
    form_key = kept if FORM_KEY.fullmatch(kept) else secrets.token_urlsafe(16)
    draws = form_draws(form_key)
    sections = [{"id": section.id, "title": section.title_in(language) if section.id else None,
                 "intro": section.intro_in(language) if section.id else None,
                 "items": [_item_view(survey, item, language, words, draws) for item in section.items]}
                for section in survey.sections]
    questions = [item for section in sections for item in section["items"] if item["type"] != "note"]
    languages = [{"code": code, "name": LANGUAGE_NAMES.get(code, code),
                  "href": url_for("respond.survey_page", survey_id=survey_id, lang=code, t=token)}
                 for code in survey.languages.codes] if len(survey.languages.codes) > 1 else []
    page_data = {"hash": record.hash, "spec": survey.to_dict(), "lang": language, "messages": words}
    if wave is not None:
        page_data["wave"] = wave  # sent back with the reports: a page left open past its wave is refused
    if survey.quotas:
        page_data["full"] = full_cells(survey_id)  # the page says a group is full as soon as the answers fall in it
    response = make_response(render_template(
        "survey.html", survey=survey, record=record, sections=sections, title=survey.title_in(language),
        description=survey.description_in(language), consent=survey.consent_in(language),
        warnings=_warnings(record, language, words),
        words=words, intro=page_intro(survey, words), lang=language,
        dir="rtl" if is_right_to_left(language) else "ltr",
        languages=languages, page_data=page_data, token=token, idempotency_key=secrets.token_hex(16),
        form_key=form_key, skipped=[q["text"] for q in questions if not q["offline"]], preload=client_module_urls()))
    response.set_cookie(FORM_COOKIE, form_key, httponly=True, samesite="Strict", secure=request.is_secure,
                        path=f"/s/{survey_id}")
    return response


@blueprint.post("/s/<survey_id>/submit")
def submit_form(survey_id):
    """The no-JavaScript path: the form holds only coin results and public answers; skip logic is
    evaluated here on the public answers, with the same tree the browser uses."""
    store = get_store()
    record = store.get_survey(survey_id, request.form.get("spec_hash") or None)
    survey = record.survey
    language = page_language(survey)
    words = survey.words(language)
    lang = language if survey.languages.declared else None  # one-language surveys keep plain addresses
    back = url_for("respond.survey_page", survey_id=survey_id, lang=lang)
    presented, expected = request.form.get("form_key", ""), request.cookies.get(FORM_COOKIE, "")
    if not secrets_match(presented, expected):
        return _message(403, words["check_heading"], words["form_expired"], back, language, words=words)
    offline = {q.id for q in survey.questions.values() if offline_form_question(q, survey.repeated is not None)["offline"]}
    grouped = {f"{qid}.group" for qid in offline if isinstance(survey.questions[qid].mechanism, GroupedMechanism)}
    split = {arm_column(qid) for qid in offline if survey.questions[qid].split_ballot is not None}
    unknown = sorted(set(request.form) - offline - grouped - split
                     - {"spec_hash", "idempotency_key", "token", "lang", "form_key", "wave", "consent"})
    if unknown:
        return _message(422, words["check_heading"], words["cannot_accept"], language=language, words=words)
    if survey.consents is not None and request.form.get("consent") != "yes":  # the form asks it before any answer
        return _message(422, words["check_heading"], words["consent_needed"], back, language, words=words)
    draws = form_draws(presented)
    for qid in sorted(offline):  # the arms and groups this form's key drew, not others
        question = survey.questions[qid]
        drawn = [(arm_column(qid), survey.arm_for(qid, draws))] if question.split_ballot is not None else []
        if isinstance(question.mechanism, GroupedMechanism):
            drawn.append((f"{qid}.group", survey.group_for(qid, draws)))
        for field, value in drawn:
            if request.form.get(field, value) != value:
                return _message(422, words["check_heading"], words["cannot_accept"], language=language, words=words)
    reports = {}
    for question in survey.questions.values():
        if question.id not in offline:
            continue
        if question.split_ballot is not None:  # the arm the server drew for this form; a direct answer is sent as given
            arm = request.form.get(arm_column(question.id), "")
            if arm == "direct":
                if request.form.get(question.id, "") != "":
                    reports[question.id] = {"arm": arm, "report": request.form[question.id]}
                continue
        if question.type == "multi_select":
            reports[question.id] = request.form.getlist(question.id)  # none ticked: the empty selection
        elif isinstance(question.mechanism, GroupedMechanism):
            if request.form.get(question.id, "") != "":
                reports[question.id] = {"group": request.form.get(f"{question.id}.group", ""),
                                        "report": request.form[question.id]}
        elif question.id in request.form and request.form[question.id] != "":
            value = request.form[question.id]
            if question.type == "number":
                try:
                    if len(value) > MAX_FORM_NUMBER:
                        raise ValueError(value)
                    value = json_number(parse_fraction(value.strip(), question.id))
                except ValueError:
                    return _message(422, words["check_heading"],
                                    words["enter_number"].format(question=question.text_in(language)), back, language, words=words)
            reports[question.id] = value
    for qid, report in reports.items():
        if survey.questions[qid].split_ballot is not None and request.form.get(arm_column(qid), "") != "direct":
            reports[qid] = SplitBallot.wrap(request.form.get(arm_column(qid), ""), report)
    shown = set(survey.shown(reports))
    reports = {qid: report for qid, report in reports.items() if qid in shown}  # answered, but not asked of them
    try:
        # the wave the form was served in: a form left open past its wave is refused, not counted in the next
        store.submit(survey_id, record.hash, request.form.get("idempotency_key"), reports,
                     request.form.get("token") or None, answerable=offline, wave=request.form.get("wave") or None)
    except storage.Gone as error:
        if error.field == "wave":  # the wave this form was served in has closed: not counted in the next
            return _message(410, words["no_wave_heading"], words["no_wave_message"], language=language, words=words)
        return _message(410, words["closed_heading"], words["closed_message"], language=language, words=words)
    except storage.Conflict as error:
        if error.field == "wave":
            return _message(409, words["no_wave_heading"], words["no_wave_message"], language=language, words=words)
        if error.field == "quota":
            return _message(409, words["quota_full_heading"], words["quota_full"], language=language, words=words)
        return _message(409, words["used_heading"], words["used_message"], language=language, words=words)
    except storage.Invalid as error:
        qid = (error.field or "").removeprefix("reports.")
        question = survey.questions.get(qid)
        if question is None:
            detail = error.message
        else:
            detail = words["enter_number" if question.type == "number" else "tick_one"].format(question=question.text_in(language))
        return _message(422, words["check_heading"], detail, back, language, words=words)
    return redirect(url_for("respond.thanks", survey_id=survey_id, lang=lang, sent="form"), code=303)


@blueprint.route("/s/<survey_id>/opt-out", methods=["GET", "POST"])
def opt_out(survey_id):
    """The link in every invitation e-mail that stops them: a page that asks (a mail scanner that follows links opts
    nobody out), and its POST, which is also RFC 8058's one-click List-Unsubscribe. The address behind the token is
    written to no more; nothing about any answer changes."""
    record = get_store().get_survey(survey_id)
    language = page_language(record.survey)
    words = record.survey.words(language)
    token = request.form.get("t") or request.args.get("t") or ""
    if request.method == "GET":
        if not token:
            return _message(404, words["invalid_invitation_heading"], words["invalid_invitation"], language=language,
                            words=words)
        page = render_template("opt_out.html", words=words, token=token, lang=language,
                               dir="rtl" if is_right_to_left(language) else "ltr",
                               message=words["opt_out_message"].format(title=record.survey.title_in(language)),
                               action=url_for("respond.opt_out", survey_id=survey_id,
                                              lang=language if record.survey.languages.declared else None))
        return page, 200
    if not get_store().opt_out(survey_id, token):
        return _message(404, words["invalid_invitation_heading"], words["invalid_invitation"], language=language,
                        words=words)
    return _message(200, words["opt_out_heading"], words["opted_out"], language=language, words=words)


@blueprint.get("/s/<survey_id>/thanks")
def thanks(survey_id):
    record = get_store().get_survey(survey_id)
    language = page_language(record.survey)
    words = record.survey.words(language)
    # The form without JavaScript sends what was ticked: only the coin protected it, so say no more.
    message = words["thanks_coin" if request.args.get("sent") == "form" else "thanks_message"]
    return _message(200, words["thanks_heading"], message.format(title=record.survey.title_in(language)),
                    language=language, words=words, survey=record.survey)
