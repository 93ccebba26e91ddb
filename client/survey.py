"""Survey specs: validation, canonical form and hash, per-question mechanisms, randomization.

A spec is YAML or JSON with the same content::

    id: tax
    title: Taxes
    questions:
      - id: dodged
        type: yes_no
        text: Have you ever dodged your taxes?
        privacy: {design: forced_response, truth: 1/2, yes: 1/4, no: 1/4}

Every mistake raises `SpecError` with a message naming the question and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

from . import mechanisms
from .exact import canonical_json, json_number, parse_fraction
from .mechanisms import Mechanism
from .privacy import posterior_bound, privacy_statement

QUESTION_TYPES = ("yes_no", "choice", "ordinal", "multi_select", "number")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SURVEY_FIELDS = {"id", "title", "description", "questions"}
_QUESTION_FIELDS = {"id", "type", "text", "options", "min", "max", "step", "privacy", "required"}


class SpecError(ValueError):
    """A survey spec is malformed; the message names the question and field."""


def _text(value, where: str, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: must be a non-empty string, got {value!r}")
    return value


def _identifier(value, where: str) -> str:
    if not isinstance(value, str) or not _ID.match(value):
        raise SpecError(f"{where}: must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit; got {value!r}")
    return value


class Question:
    """One question of a survey with the mechanism that randomizes its answers."""

    def __init__(self, spec: dict, position: int):
        if not isinstance(spec, dict):
            raise SpecError(f"questions[{position}]: must be a mapping, got {spec!r}")
        self.id = _identifier(spec.get("id"), f"questions[{position}].id")
        where = f"question {self.id!r}"
        unknown = sorted(set(spec) - _QUESTION_FIELDS)
        if unknown:
            raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(_QUESTION_FIELDS))})")
        self.type = spec.get("type")
        if self.type not in QUESTION_TYPES:
            raise SpecError(f"{where}.type: must be one of {', '.join(QUESTION_TYPES)}, got {self.type!r}")
        self.text = _text(spec.get("text"), f"{where}.text")
        self.required = spec.get("required", True)
        if not isinstance(self.required, bool):
            raise SpecError(f"{where}.required: must be true or false, got {self.required!r}")
        self.options = self._read_options(spec, where)
        self.grid = self._read_grid(spec, where)
        privacy = spec.get("privacy")
        if privacy is None:  # absent or null: the type's default, as in the JS twin
            privacy = mechanisms.DEFAULT_PRIVACY.get(self.type)
        if privacy is None:
            raise SpecError(f"{where}.privacy: required for {self.type} questions "
                            f"(a design such as {self._suggestion()}, or 'none' for a public question)")
        try:
            self.mechanism: Mechanism = mechanisms.build(self.type, privacy, f"{where}.privacy", self.options, self.grid)
        except ValueError as error:
            raise SpecError(str(error)) from None

    def _suggestion(self) -> str:
        return {"choice": "{design: k_rr, epsilon: ln 3}", "ordinal": "{design: ordinal, epsilon: 1}",
                "multi_select": "{design: unary, epsilon: 2}", "number": "{design: laplace, epsilon: 1}"}[self.type]

    def _read_options(self, spec, where):
        needs = self.type in ("choice", "ordinal", "multi_select")
        if not needs:
            if "options" in spec:
                raise SpecError(f"{where}.options: {self.type} questions take no options")
            return None
        options = spec.get("options")
        if not isinstance(options, list) or len(options) < 2:
            raise SpecError(f"{where}.options: {self.type} questions need a list of at least two options, got {options!r}")
        for i, option in enumerate(options):
            _text(option, f"{where}.options[{i}]")
        if len(set(options)) != len(options):
            duplicate = next(o for o in options if options.count(o) > 1)
            raise SpecError(f"{where}.options: {duplicate!r} appears more than once")
        if self.type == "multi_select" and len(options) > mechanisms.MAX_MULTI_SELECT_OPTIONS:
            raise SpecError(f"{where}.options: at most {mechanisms.MAX_MULTI_SELECT_OPTIONS} options for multi_select")
        return list(options)

    def _read_grid(self, spec, where):
        fields = [f for f in ("min", "max", "step") if f in spec]
        if self.type != "number":
            if fields:
                raise SpecError(f"{where}.{fields[0]}: only number questions take min, max and step")
            return None
        values = {}
        for field in ("min", "max", "step"):
            raw = spec.get(field, 1 if field == "step" else None)
            if raw is None:
                raise SpecError(f"{where}.{field}: required for number questions")
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                raise SpecError(f"{where}.{field}: must be a number, got {raw!r}")
            try:
                values[field] = parse_fraction(raw, f"{where}.{field}")
            except ValueError as error:
                raise SpecError(str(error)) from None
        low, high, step = values["min"], values["max"], values["step"]
        if low >= high:
            raise SpecError(f"{where}.min: must be less than max ({spec['min']!r} ≥ {spec['max']!r})")
        if step <= 0:
            raise SpecError(f"{where}.step: must be greater than 0, got {spec['step']!r}")
        points = (high - low) / step
        if points.denominator != 1:
            raise SpecError(f"{where}.step: (max − min) must be a whole number of steps, got {points}")
        if points + 1 > mechanisms.MAX_GRID_POINTS:
            raise SpecError(f"{where}.step: at most {mechanisms.MAX_GRID_POINTS} grid points between min and max, "
                            f"got {points + 1}; choose a coarser step")
        return low, high, step

    @property
    def is_private(self) -> bool:
        return self.mechanism.is_private

    @property
    def epsilon(self) -> float:
        return self.mechanism.epsilon

    def privacy_statement(self, prior: float = 0.02) -> str:
        return privacy_statement(self.epsilon, prior)

    def to_dict(self) -> dict:
        """The canonical spec of this question (defaults filled in, fractions normalized)."""
        spec = {"id": self.id, "type": self.type, "text": self.text, "required": self.required}
        if self.options is not None:
            spec["options"] = list(self.options)
        if self.grid is not None:
            spec.update(zip(("min", "max", "step"), map(json_number, self.grid)))
        spec["privacy"] = "none" if self.mechanism.design == "none" else dict(self.mechanism.params)
        return spec

    def __repr__(self) -> str:
        return f"<Question {self.id} {self.type} {self.mechanism.design} ε={self.epsilon:.4g}>"


class Survey:
    """A validated survey spec. Build with `Survey.from_file` or `Survey.from_dict`."""

    def __init__(self, spec: dict):
        if not isinstance(spec, dict):
            raise SpecError(f"survey: must be a mapping, got {type(spec).__name__}")
        unknown = sorted(set(spec) - _SURVEY_FIELDS)
        if unknown:
            raise SpecError(f"survey: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(_SURVEY_FIELDS))})")
        self.id = _identifier(spec.get("id"), "survey.id")
        self.title = _text(spec.get("title"), "survey.title")
        self.description = _text(spec.get("description"), "survey.description", required=False)
        questions = spec.get("questions")
        if not isinstance(questions, list) or not questions:
            raise SpecError("survey.questions: must be a non-empty list of questions")
        self.questions: dict[str, Question] = {}
        for position, question_spec in enumerate(questions):
            question = Question(question_spec, position)
            if question.id in self.questions:
                raise SpecError(f"question {question.id!r}.id: duplicate id (questions[{position}])")
            self.questions[question.id] = question

    @classmethod
    def from_dict(cls, spec: dict) -> "Survey":
        return cls(spec)

    @classmethod
    def from_json(cls, text: str) -> "Survey":
        try:
            return cls(json.loads(text))
        except json.JSONDecodeError as error:
            raise SpecError(f"survey: not valid JSON ({error})") from None

    @classmethod
    def from_yaml(cls, text: str) -> "Survey":
        return cls(load_yaml(text))

    @classmethod
    def from_file(cls, path) -> "Survey":
        """Read a ``.json``, ``.yaml`` or ``.yml`` spec."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise SpecError(f"{path}: cannot read ({error.strerror})") from None
        if path.suffix.lower() == ".json":
            return cls.from_json(text)
        return cls.from_yaml(text)

    def to_dict(self) -> dict:
        spec = {"id": self.id, "title": self.title}
        if self.description is not None:
            spec["description"] = self.description
        spec["questions"] = [q.to_dict() for q in self.questions.values()]
        return spec

    def canonical_json(self) -> str:
        return canonical_json(self.to_dict())

    @property
    def hash(self) -> str:
        """SHA-256 of the canonical JSON: identifies this version of the survey."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    @property
    def private_questions(self) -> list[Question]:
        return [q for q in self.questions.values() if q.is_private]

    @property
    def public_questions(self) -> list[Question]:
        return [q for q in self.questions.values() if not q.is_private]

    @property
    def epsilon(self) -> float:
        """Total ε per respondent over the private questions (sequential composition).

        Public questions (``privacy: none``) are not counted here: they have no guarantee
        at all, which `privacy_summary` states separately.
        """
        return math.fsum(q.epsilon for q in self.private_questions)

    def randomize(self, answers: dict, rng=None) -> dict:
        """Reports for the answered questions; unanswered (absent or None) ones are skipped."""
        if not isinstance(answers, dict):
            raise ValueError("answers must be a mapping of question id to answer")
        unknown = sorted(set(answers) - set(self.questions))
        if unknown:
            raise ValueError(f"answers: unknown question {unknown[0]!r}")
        return {qid: q.mechanism.randomize(answers[qid], rng)
                for qid, q in self.questions.items() if answers.get(qid) is not None}

    def privacy_summary(self, prior: float = 0.02) -> str:
        lines = [f"Survey {self.id!r}: {self.title}", f"version {self.hash[:12]}", ""]
        for q in self.questions.values():
            if q.is_private:
                lines.append(f"  {q.id:<20} {q.mechanism.design:<20} ε = {q.epsilon:.4f}   "
                             f"prior {prior:.0%} → at most {posterior_bound(prior, q.epsilon):.1%}")
            else:
                lines.append(f"  {q.id:<20} {'none (PUBLIC)':<20} ε = ∞        sent as is")
        lines += ["", f"Total ε per respondent (private questions): {self.epsilon:.4f}"
                  f"  (e^ε = {math.exp(self.epsilon):.4g})"]
        if self.public_questions:
            names = ", ".join(q.id for q in self.public_questions)
            lines.append(f"WARNING: {len(self.public_questions)} public question(s) are NOT randomized and "
                         f"carry no privacy guarantee: {names}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Survey {self.id} {len(self.questions)} questions ε={self.epsilon:.4g} {self.hash[:12]}>"


def load_yaml(text: str):
    """Parse YAML 1.2, where ``yes``, ``no``, ``on`` and ``off`` are strings, not booleans.

    PyYAML's YAML 1.1 rules would turn ``{yes: 1/4, no: 1/4}`` into boolean keys.
    """
    try:
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError
    except ImportError:  # the client itself needs only the standard library
        raise SpecError("reading YAML specs needs ruamel.yaml: pip install 'deniable[yaml]' (or use JSON)") from None
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as error:
        raise SpecError(f"survey: not valid YAML ({error})") from None
    return _plain(data)


def _plain(value):
    """ruamel's safe loader already yields dict/list/str/int/float/bool/None; dates become text."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (str, bool)) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)
