"""JSON API under /api/v1: public survey and response endpoints, admin endpoints (bearer token).

Every error is JSON: ``{"error": {"status": 422, "field": "reports.dodged", "message": "…"}}``.
Request bodies are never logged.
"""

from __future__ import annotations

import json
import logging
import math

from flask import Blueprint, Response, current_app, request
from werkzeug.exceptions import HTTPException

from deniable import storage
from deniable.client import SpecError, Survey
from deniable.client.errors import DeniableError
from deniable.client.json_text import MAX_JSON_DEPTH, JsonShapeError, check_json_text
from deniable.client.privacy import DEFAULT_PRIOR, posterior_bound
from deniable.client.specfile import MAX_SPEC_BYTES
from deniable.storage.credentials import is_hex
from deniable.storage.release import RELEASE_AT

from . import signing
from .auth import bearer_caller, bearer_caller_and_scopes
from .db import get_store
from .disclosure import groups as disclosure_groups
from .export_formats import EXPORT_FORMATS
from .exports import ExportUnavailable, PooledRecord, describe_version, export_rows

blueprint = Blueprint("api", __name__, url_prefix="/api/v1")
#: What publishing a version may need confirmed (`storage.Unconfirmed`): lowering a question's privacy, and
#: randomizing or asking an answered question differently.
CONFIRMATIONS = {"lower-privacy", "redesign"}


class ApiError(DeniableError):
    """A request the API refuses before storage sees it, with its HTTP status."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message, field)
        self.status = status


def retry_later(status: int) -> dict:
    """The header that tells a client when to send again what the database could not take (away, read-only, full)."""
    return {"Retry-After": "5"} if status in (503, 507) else {}


def error_body(status: int, message: str, field: str | None = None) -> dict:
    return {"error": {"status": status, "field": field, "message": message}}


@blueprint.errorhandler(DeniableError)
def _refused(error: DeniableError):
    # Every domain error carries its status (storage's, the API's, a missing credential's); any
    # other is a request the library judged invalid.
    status = getattr(error, "status", 422)
    headers = retry_later(status)
    return error_body(status, error.message, error.field), status, headers


@blueprint.errorhandler(HTTPException)
def _http_error(error: HTTPException):
    field = getattr(error, "field", None) or ("body" if error.code == 413 else None)
    return error_body(error.code, error.description, field), error.code


def privacy_summary(record: storage.SurveyRecord, prior: float = DEFAULT_PRIOR) -> dict:
    """The privacy facts of a survey version, for people and programs alike."""
    survey = record.survey
    questions = {}
    for q in survey.questions.values():
        questions[q.id] = {
            "design": q.mechanism.design,
            "epsilon": q.epsilon if q.is_private and math.isfinite(q.epsilon) else None,
            "public": not q.is_private,
            "posterior_bound": posterior_bound(prior, q.epsilon) if q.is_private else 1.0,
            "statement": q.privacy_statement(prior),
        }
        if survey.languages.declared:  # the statement each language's page shows (the same figures)
            questions[q.id]["statements"] = {code: q.privacy_statement(prior, survey.words(code))
                                             for code in survey.page_languages}
        if survey.repeated is not None and q.is_private:  # one wave's ε above; every wave's here
            questions[q.id]["epsilon_all_waves"] = q.epsilon_all_waves if math.isfinite(q.epsilon_all_waves) else None
    warnings = []
    if survey.public_questions:
        warnings.append("Public questions are sent as given, with no privacy guarantee: "
                        + ", ".join(q.id for q in survey.public_questions) + ".")
    if record.access == "open":
        warnings.append("This survey accepts anonymous responses without invitation tokens: someone who answers "
                        "more than once spends the per-person budget again each time.")
    total = survey.epsilon
    summary = {"epsilon_total": total if math.isfinite(total) else None,
               "exp_epsilon_total": math.exp(total) if total < 700 else None,
               "prior": prior, "questions": questions, "warnings": warnings}
    if survey.repeated is not None:  # epsilon_total counts every wave (ε∞); one wave's reports spend less
        per_wave = survey.epsilon_per_wave
        summary["epsilon_per_wave"] = per_wave if math.isfinite(per_wave) else None
    return summary


def survey_payload(record: storage.SurveyRecord) -> dict:
    payload = {"id": record.id, "version": record.version, "hash": record.hash, "closed": record.state == "closed",
               "state": record.state, "access": record.access, "spec": record.survey.to_dict(), "privacy": privacy_summary(record)}
    if record.survey.repeated is not None:  # the wave a response sent now joins (null: none is open)
        payload["wave"] = get_store().open_wave_label(record.id)
    if record.survey.quotas:  # which groups are full, so a client can say so before its respondent answers
        payload["full"] = full_cells(record.id)
    return payload


def full_cells(survey_id: str) -> list[dict]:
    """The quota cells that take no more responses: their questions and answers (no counts: those are the admins')."""
    return [{"questions": c["questions"], "cell": c["cell"]} for c in get_store().quota_counts(survey_id) if c["full"]]


def _json_body(limit: int | None = None, check_text: bool = True):
    """The request's JSON object (`parse_json_body`), read from Flask's request."""
    return parse_json_body(request.mimetype, request.content_length, lambda: request.get_data(cache=False), limit,
                           check_text)


def parse_json_body(mimetype: str, content_length: int | None, read, limit: int | None = None,
                    check_text: bool = True) -> dict:
    """A request's JSON object (``read()`` returns its bytes). Refused with a 4xx (`ApiError`) before anything reads
    it: the wrong type, too large, not JSON, nested deeper than any body needs (Python's parser would otherwise hit
    its recursion limit), and, unless the caller judges parts on their own (a batch's items), any string that is not
    valid Unicode text. Shared by the Flask routes and the WSGI path of single responses (`ingest`)."""
    if mimetype != "application/json":
        raise ApiError(415, "send the body as application/json", "body")
    if limit is not None and content_length is not None and content_length > limit:
        raise ApiError(413, f"the body is larger than {limit} bytes", "body")
    raw = read()
    if limit is not None and len(raw) > limit:
        raise ApiError(413, f"the body is larger than {limit} bytes", "body")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(400, f"the body is not valid JSON ({error})", "body") from None
    except RecursionError:
        raise ApiError(400, f"the body is nested deeper than {MAX_JSON_DEPTH} levels", "body") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object", "body")
    try:
        check_json_text(body, "", text=False)
    except JsonShapeError as error:
        raise ApiError(400, f"the body is {error.reason}", "body") from None
    if check_text:
        _check_text(body)
    return body


def _check_text(value):
    try:
        check_json_text(value, "")
    except JsonShapeError as error:
        raise ApiError(422, str(error), error.field) from None


def _item_shape(item) -> tuple[dict, int] | None:
    """The error of a response body that is not even shaped like one (before storage sees it)."""
    if not isinstance(item, dict):
        return error_body(400, "each response must be a JSON object", "body"), 400
    try:
        _check_text(item)
    except ApiError as error:
        return error_body(error.status, error.message, error.field), error.status
    unknown = sorted(set(item) - {"spec_hash", "idempotency_key", "token", "credential", "reports", "wave", "paradata"})
    if unknown:
        return error_body(422, f"{unknown[0]}: unknown field", unknown[0]), 422
    return None


def submit_item(survey_id: str, item) -> tuple[dict, int]:
    """Judge and store one response; (acknowledgement or error body, status)."""
    refused = _item_shape(item)
    if refused:
        return refused
    try:
        acknowledgement, created = get_store().submit(survey_id, item.get("spec_hash"), item.get("idempotency_key"),
                                                      item.get("reports"), item.get("token"), wave=item.get("wave"),
                                                      paradata=item.get("paradata"), credential=item.get("credential"))
    except storage.StorageError as error:
        return error_body(error.status, error.message, error.field), error.status
    _log_dropped_paradata(survey_id, acknowledgement)
    return acknowledgement, 201 if created else 200


def _log_dropped_paradata(survey_id: str, acknowledgement: dict) -> None:
    """A response stored without the paradata it came with: the server's log says so (which survey, and why: section
    names and times, never an answer or a credential), so a page that sends what the server refuses is seen at once."""
    if "paradata_dropped" in acknowledgement:
        logging.getLogger("deniable.api").warning("survey %s: a response stored without its paradata: %s", survey_id,
                                                  acknowledgement["paradata_dropped"])


# --- public ---------------------------------------------------------------------------------------

@blueprint.get("/surveys/<survey_id>")
def get_survey(survey_id):
    return survey_payload(get_store().get_survey(survey_id))


# POST /surveys/<survey_id>/responses, one response, is answered beneath Flask by `ingest.SingleResponses`.


@blueprint.post("/surveys/<survey_id>/responses:batch")
def post_batch(survey_id):
    body = _json_body(check_text=False)  # each item is judged on its own, text included
    items = body.get("items")
    if not isinstance(items, list) or not items:
        raise ApiError(422, "items: must be a non-empty list of responses", "items")
    if len(items) > current_app.config["MAX_BATCH_ITEMS"]:
        raise ApiError(413, f"items: at most {current_app.config['MAX_BATCH_ITEMS']} per batch", "items")
    store = get_store()
    store.get_survey(survey_id)
    results: list = [None] * len(items)
    shaped = []  # (position, item) of the items shaped like responses
    for position, item in enumerate(items):
        refused = _item_shape(item)
        if refused:
            results[position] = {"status": refused[1], "error": refused[0]["error"]}
        else:
            shaped.append((position, item))
    # One transaction for the whole batch, each item judged on its own: nothing is acknowledged
    # before that commit reaches the disk.
    outcomes = store.submit_many(survey_id, [(i.get("spec_hash"), i.get("idempotency_key"), i.get("reports"), i.get("token"),
                                              i.get("wave"), i.get("paradata"), i.get("credential")) for _, i in shaped])
    for (position, _), outcome in zip(shaped, outcomes):
        if isinstance(outcome, storage.StorageError):
            results[position] = {"status": outcome.status, "error": error_body(outcome.status, outcome.message, outcome.field)["error"]}
        else:
            acknowledgement, created = outcome
            _log_dropped_paradata(survey_id, acknowledgement)
            results[position] = {"status": 201 if created else 200, "response": acknowledgement}
    summary = {s: sum(r["status"] == s for r in results) for s in sorted({r["status"] for r in results})}
    return {"results": results, "statuses": {str(k): v for k, v in summary.items()}}, 200


# --- admin ----------------------------------------------------------------------------------------

def require_admin(scope: str) -> str:
    """The caller's name for the audit log; 401 without a valid admin or API token, 403 when it lacks ``scope``."""
    return bearer_caller(scope)


@blueprint.post("/surveys/<survey_id>/credential-key")
def credential_key(survey_id):
    """The public key an invitation's credential is signed with (its survey's version, frame cell and wave): what the
    respondent's device blinds its serial for. Writes nothing."""
    key = get_store().credential_key_for_token(survey_id, _json_body().get("token"), signing.new_key)
    return {"key": key.id, "modulus": f"{key.public.n:x}", "exponent": key.public.e}


@blueprint.post("/surveys/<survey_id>/credentials")
def issue_credential(survey_id):
    """The blind signature of an invitation's credential: ``token``, ``key`` (from ``credential-key``) and
    ``blinded`` (hex). Recorded once per invitation; the same blinded message again is answered again."""
    body = _json_body()
    token, key_id, blinded = body.get("token"), body.get("key"), body.get("blinded")
    if not isinstance(blinded, str) or len(blinded) > 4096 or not is_hex(blinded):
        raise ApiError(422, "blinded: the blinded message, in hexadecimal digits", "blinded")
    store = get_store()
    key = store.credential_key_for_token(survey_id, token, signing.new_key)
    if key_id != key.id:
        raise ApiError(409, "key: not the key this invitation's credential is signed with now (a new version or wave); "
                            "ask for the key again", "key")
    blind_signature = signing.blind_sign(key.private_pem, bytes.fromhex(blinded))
    store.issue_credential(survey_id, token, blinded)
    return {"key": key.id, "blind_signature": blind_signature.hex()}


@blueprint.get("/surveys")
def list_surveys():
    require_admin("read")
    store = get_store()
    return {"surveys": [{"id": r.id, "title": r.survey.title, "version": r.version, "hash": r.hash, "closed": r.closed,
                         "access": r.access, "responses": store.response_count(r.id), "version_responses": r.responses,
                         "epsilon_total": r.survey.epsilon, "tokens": store.token_counts(r.id)}
                        for r in store.list_surveys()]}


@blueprint.post("/surveys")
def create_survey():
    caller = require_admin("write")
    body = _json_body(MAX_SPEC_BYTES)
    access = request.args.get("access")
    try:
        survey = Survey.from_dict(body)
    except SpecError as error:
        raise ApiError(422, str(error), "spec") from None
    confirmed = set(filter(None, request.args.get("confirm", "").split(",")))
    if confirmed - CONFIRMATIONS:
        raise ApiError(422, f"confirm: one or more of {', '.join(sorted(CONFIRMATIONS))}, separated by commas", "confirm")
    record, outcome = get_store().add_survey(survey, access, actor=caller,
                                             confirm_lower_privacy="lower-privacy" in confirmed,
                                             confirm_redesign="redesign" in confirmed)
    return {"outcome": outcome, **survey_payload(record)}, 201 if outcome != "unchanged" else 200


@blueprint.post("/surveys/<survey_id>/close")
def close_survey(survey_id):
    return survey_payload(get_store().close_survey(survey_id, actor=require_admin("write")))


@blueprint.post("/surveys/<survey_id>/reopen")
def reopen_survey(survey_id):
    return survey_payload(get_store().reopen_survey(survey_id, actor=require_admin("write")))


@blueprint.get("/surveys/<survey_id>/waves")
def list_waves(survey_id):
    require_admin("read")
    return {"waves": get_store().waves(survey_id)}


@blueprint.post("/surveys/<survey_id>/waves")
def open_wave(survey_id):
    """Open a wave of a repeated survey ({"label": "2026-12"}), closing the open one."""
    caller = require_admin("manage")
    return get_store().open_wave(survey_id, _json_body().get("label"), actor=caller), 201


@blueprint.post("/surveys/<survey_id>/waves/close")
def close_wave(survey_id):
    return get_store().close_wave(survey_id, actor=require_admin("manage"))


@blueprint.post("/surveys/<survey_id>/tokens")
def create_tokens(survey_id):
    caller = require_admin("manage")
    body = _json_body()
    count, frame = body.get("count"), body.get("frame")
    if frame is None and (isinstance(count, bool) or not isinstance(count, int)):
        raise ApiError(422, "count: must be a whole number (or give frame: one row per invitation)", "count")
    options = {"min_cell": body["min_cell"]} if "min_cell" in body else {}
    tokens = get_store().issue_tokens(survey_id, count, actor=caller, frame=frame, **options)
    base = request.host_url.rstrip("/")
    return {"tokens": tokens, "links": [f"{base}/s/{survey_id}?t={t}" for t in tokens]}, 201


#: The fewest responses a group of grouped counts holds for a token that may not export: grouped by a public question
#: of many values (an exact age), each group of one was that respondent's row of reports, an export by another name.
SMALLEST_GROUP = RELEASE_AT


@blueprint.get("/surveys/<survey_id>/counts")
def counts(survey_id):
    """Report counts per question; ``by``: per level of a public question (or wave). A token with the ``export`` scope
    gets every group, audited as the per-response data it can be; a ``read`` token only groups of `SMALLEST_GROUP` or
    more responses, and ``suppressed`` says how many groups and responses were left out."""
    caller, scopes = bearer_caller_and_scopes("read")
    store = get_store()
    by = request.args.get("by")
    payload = store.counts(survey_id, request.args.get("spec_hash"), by, request.args.get("version"))
    if by is None:
        return payload
    if "export" in scopes:
        store.audit(caller, "grouped counts read", survey_id, f"by {by}, every group (export scope)")
        return payload
    kept, left = [], []
    for group in payload["groups"]:
        size = _group_size(group, by)
        (kept if size >= SMALLEST_GROUP else left).append((group, size))
    payload["groups"] = [group for group, _ in kept]
    payload["suppressed"] = {"groups": len(left), "responses": sum(size for _, size in left),
                             "smallest_group": SMALLEST_GROUP,
                             "why": f"groups of fewer than {SMALLEST_GROUP} responses are left out for a token without "
                                    "the export scope (they are per-response data)"}
    return payload


def _group_size(group: dict, by: str) -> int:
    """The responses in one group: those reporting the level (the grouping question's own count), or, grouped by wave,
    the most of any question's reports (every response answers some question)."""
    if by in group["counts"]:
        return sum(entry["count"] for entry in group["counts"][by])
    return max((sum(entry["count"] for entry in entries) for entries in group["counts"].values()), default=0)


@blueprint.get("/surveys/<survey_id>/quotas")
def quotas(survey_id):
    """Each quota cell of the current version: questions, cell (their answers), count, limit, full."""
    require_admin("read")
    return {"quotas": get_store().quota_counts(survey_id)}


@blueprint.get("/surveys/<survey_id>/versions")
def versions(survey_id):
    """Every version with its response count; ``?specs=1`` adds each version's spec (for analysis)."""
    require_admin("read")
    store = get_store()
    listed = store.versions(survey_id)
    if request.args.get("specs") in ("1", "true"):
        for entry in listed:
            entry["spec"] = store.find_version(survey_id, entry["hash"]).survey.to_dict()
    return {"versions": listed}


@blueprint.get("/surveys/<survey_id>/export")
def export(survey_id):
    caller = require_admin("export")
    fmt = request.args.get("format", "jsonl")
    if fmt not in EXPORT_FORMATS:
        raise ApiError(422, f"format: must be one of {', '.join(EXPORT_FORMATS)}", "format")
    store = get_store()
    all_versions = request.args.get("all_versions", "0")
    if all_versions not in ("0", "1", "true", "false"):
        raise ApiError(422, "all_versions: must be 1 or 0 (true or false)", "all_versions")
    if all_versions in ("1", "true"):
        if request.args.get("spec_hash") or request.args.get("version"):
            raise ApiError(422, "all_versions: exports every version; leave out spec_hash and version", "all_versions")
        record = PooledRecord.of(store, survey_id)
    else:
        record = store.find_version(survey_id, request.args.get("spec_hash"), request.args.get("version"))
    try:
        return export_response(store, record, fmt, caller)
    except ExportUnavailable as error:
        raise ApiError(501, f"format: {error}", "format") from None


def export_response(store, record, fmt: str, actor: str) -> Response:
    """One version's reports, or every version's (`PooledRecord`), as a download (API and dashboard alike),
    written to the audit log."""
    export = EXPORT_FORMATS[fmt]
    survey = record.versions[-1].survey if isinstance(record, PooledRecord) else record.survey
    with store.snapshot():  # the rows and the codebook's counts of one moment, though responses keep arriving
        body = export.write(record, export_rows(store, record))
        body = b"".join(body) if export.binary else "".join(body)
        singled = disclosure_groups(export_rows(store, record), survey) if fmt != "codebook" else None
    store.audit(actor, "responses exported", record.id, f"{describe_version(record)}, {fmt}")
    name = f"{record.id}-all-versions" if isinstance(record, PooledRecord) else f"{record.id}-v{record.version}"
    headers = {"Content-Disposition": f'attachment; filename="{name}.{export.suffix}"'}
    if singled is not None and singled.columns:  # what `deniable export` says on its error stream
        headers["X-Deniable-Quasi-Identifiers"] = ", ".join(singled.columns)
        headers["X-Deniable-Unique-Rows"] = str(singled.unique)
    return Response(body, mimetype=export.mimetype, headers=headers)
