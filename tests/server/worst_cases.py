"""The slowest inputs a stranger or a careless author can send, each with what it must get.

Shared by the hardening tests (each must answer in well under a second) and by
``benchmarks/worst_inputs.py`` (which prints their times). Each case returns the status (HTTP code,
or a CLI exit code) it got; ``expected`` is what it must get.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from click.testing import CliRunner

from deniable import storage
from deniable.client import Survey
from deniable.client.questions import MAX_OPTIONS
from deniable.client.specfile import _YAML_MARKS, MAX_SPEC_BYTES, MAX_YAML_MARKS
from deniable.server import cli, create_app

ADMIN = "worst-case-admin"

#: A survey with a public number question, so the no-JavaScript form posts a typed number.
SPEC = {"id": "limits", "title": "Limits", "questions": [
    {"id": "coin", "text": "Did you?", "type": "yes_no", "required": True},
    {"id": "n", "text": "How many?", "type": "number", "min": 0, "max": 100, "step": 1, "privacy": "none"},
]}


def _choice_spec(options: int, design: str, questions: int = 1, survey_id: str = "big") -> dict:
    privacy = "none" if design == "none" else {"design": design, "epsilon": 1}
    kind = "ordinal" if design == "ordinal" else "choice"
    return {"id": survey_id, "title": "Big", "questions": [
        {"id": f"q{i}", "text": "Which?", "type": kind, "options": [f"o{j}" for j in range(options)], "privacy": privacy}
        for i in range(questions)]}


def _largest_within_limits(design: str) -> dict:
    """As many 1000-option questions as fit in the spec size limit."""
    one = len(json.dumps(_choice_spec(MAX_OPTIONS, design)))
    return _choice_spec(MAX_OPTIONS, design, questions=max(1, MAX_SPEC_BYTES // one), survey_id=f"big-{design}")


@dataclass
class Case:
    name: str
    expected: int
    run: Callable[["Context"], int]


class Context:
    def __init__(self, folder: Path):
        self.folder = folder
        self.db = str(folder / "worst.db")
        self.app = create_app({"DATABASE": self.db, "ADMIN_TOKEN": ADMIN, "RATELIMIT_ENABLED": False})
        self.client = self.app.test_client()
        self.survey = Survey.from_dict(SPEC)
        with storage.Store(self.db) as store:
            store.add_survey(self.survey)
        # What a case costs is its input's: the first `survey check` of a process also imports the YAML parser and
        # the planner (0.3-0.4 s of CPU on a 2-core machine), which no input causes.
        assert self.check_file("warm.yaml", "id: warm\ntitle: Warm\nquestions:\n  - {id: q, text: '?', type: yes_no}\n") == 0

    def form_key(self) -> str:
        from tests.server.conftest import form_key

        return form_key(self.client, "limits")

    def post_spec(self, spec) -> int:
        body = spec if isinstance(spec, (bytes, str)) else json.dumps(spec)
        return self.client.post("/api/v1/surveys", data=body, content_type="application/json",
                                headers={"Authorization": f"Bearer {ADMIN}"}).status_code

    def post_response(self, reports) -> int:
        body = {"spec_hash": self.survey.hash, "idempotency_key": secrets.token_hex(8), "reports": reports}
        return self.client.post("/api/v1/surveys/limits/responses", data=json.dumps(body),
                                content_type="application/json").status_code

    def check_file(self, name: str, text: str) -> int:
        path = self.folder / name
        path.write_text(text, encoding="utf-8")
        return CliRunner().invoke(cli.main, ["survey", "check", str(path)]).exit_code


def _yaml_options(count: int) -> str:
    return ("id: many\ntitle: Many\nquestions:\n  - id: c\n    text: Which?\n    type: choice\n"
            "    privacy: {design: k_rr, epsilon: 1}\n    options:\n" + "".join(f"      - option {i}\n" for i in range(count)))


def _largest_yaml() -> str:
    """A valid YAML spec just within the size and token limits: 1000-option questions written as
    flow lists, the most tokens per byte a spec can have."""
    question = ("  - id: q{n}\n    text: Which?\n    type: choice\n    privacy: {{design: k_rr, epsilon: 1}}\n"
                "    options: [" + ", ".join(f"o{j}" for j in range(MAX_OPTIONS)) + "]\n")
    head = "id: yaml\ntitle: YAML\nquestions:\n"
    one = question.format(n=999)
    count = min((MAX_SPEC_BYTES - len(head)) // len(one),
                (MAX_YAML_MARKS - len(_YAML_MARKS.findall(head))) // len(_YAML_MARKS.findall(one)))
    return head + "".join(question.format(n=n) for n in range(count))


CASES = [
    Case("no-JS form: n=1e5000000 in a public number field", 422, lambda c: c.client.post(
        "/s/limits/submit", data={"form_key": c.form_key(), "spec_hash": c.survey.hash, "idempotency_key": secrets.token_hex(8),
                                  "coin": "yes", "n": "1e5000000"}).status_code),
    Case("no-JS form: a 40-digit number with a 3-digit exponent", 422, lambda c: c.client.post(
        "/s/limits/submit", data={"form_key": c.form_key(), "spec_hash": c.survey.hash, "idempotency_key": secrets.token_hex(8),
                                  "coin": "yes", "n": "9" * 30 + "e999"}).status_code),
    Case("JSON report 1e5000000 (a float overflow)", 422, lambda c: c.post_response({"coin": "yes", "n": 1e308 * 10})),
    Case("JSON report with a 4000-digit integer", 422, lambda c: c.client.post(
        "/api/v1/surveys/limits/responses", content_type="application/json",
        data='{"spec_hash":"%s","idempotency_key":"%s","reports":{"coin":"yes","n":1%s}}'
             % (c.survey.hash, secrets.token_hex(8), "0" * 4000)).status_code),
    Case("POST /api/v1/surveys: 100,000 options", 413, lambda c: c.post_spec(_choice_spec(100_000, "k_rr"))),
    Case("POST /api/v1/surveys: a 2,000-option k-ary question", 422, lambda c: c.post_spec(_choice_spec(2000, "k_rr"))),
    Case("POST /api/v1/surveys: 1000-option k-ary questions up to the size limit", 201,
         lambda c: c.post_spec(_largest_within_limits("k_rr"))),
    Case("POST /api/v1/surveys: 1000-option ordinal questions up to the size limit", 201,
         lambda c: c.post_spec(_largest_within_limits("ordinal"))),
    Case("POST /api/v1/surveys: 1000-option public questions up to the size limit", 201,
         lambda c: c.post_spec(_largest_within_limits("none"))),
    Case("POST /api/v1/surveys: 1000 numeric questions of 10,001 grid points", 201, lambda c: c.post_spec(
        {"id": "grid", "title": "Grid", "questions": [
            {"id": f"n{i}", "text": "How many?", "type": "number", "min": 0, "max": 10_000, "step": 1,
             "privacy": {"design": "laplace", "epsilon": 1 + i / 1000}} for i in range(1000)]})),
    # The budget's exact e^ε is a product of 1000 powers of 320,000 bits: built before the floats decided, it took
    # minutes (100 questions on 0..1000: 17 s).
    Case("POST /api/v1/surveys: 1000 numeric questions of 10,001 grid points within a budget", 201,
         lambda c: c.post_spec({"id": "budgeted", "title": "Grid", "max_epsilon": 5000, "questions": [
             {"id": f"n{i}", "text": "How many?", "type": "number", "min": 0, "max": 10_000, "step": 1,
              "privacy": {"design": "laplace", "epsilon": 1 + i / 1000}} for i in range(1000)]})),
    Case("POST /api/v1/surveys: 1000 multi-select questions of 16 options", 201, lambda c: c.post_spec(
        {"id": "multi", "title": "Multi", "questions": [
            {"id": f"m{i}", "text": "Which?", "type": "multi_select", "options": [f"o{j}" for j in range(16)],
             "privacy": {"design": "unary", "epsilon": 2}} for i in range(1000)]})),
    Case("deniable survey check: 100,000 options in YAML", 1, lambda c: c.check_file("many.yaml", _yaml_options(100_000))),
    Case("deniable survey check: the largest YAML spec within the size and token limits", 0,
         lambda c: c.check_file("largest.yaml", _largest_yaml())),
    Case("deniable survey check: a recursive YAML alias", 1, lambda c: c.check_file("alias.yaml", "a: &a [*a]\n")),
    Case("JSON body nested 5000 deep", 400, lambda c: c.client.post(
        "/api/v1/surveys/limits/responses", content_type="application/json",
        data='{"a":' * 5000 + "1" + "}" * 5000).status_code),
    Case("batch with 50,000 nested brackets", 400, lambda c: c.client.post(
        "/api/v1/surveys/limits/responses:batch", content_type="application/json",
        data='{"items":[' + "[" * 50_000 + "]" * 50_000 + "]}").status_code),
]


def timed(case: Case, context: Context, clock=time.perf_counter) -> tuple[int, float]:
    """(status, seconds by ``clock``): wall time for the benchmark, the process's CPU time for tests,
    which share a machine with other work (a wall-clock bound there measures the neighbours)."""
    start = clock()
    status = case.run(context)
    return status, clock() - start
