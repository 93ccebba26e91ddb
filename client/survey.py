"""Survey specs: validation, canonical form and hash, per-question mechanisms, skip logic.

A spec is YAML or JSON with the same content::

    id: tax
    title: Taxes
    questions:
      - id: dodged
        type: yes_no
        text: Have you ever dodged your taxes?
        privacy: {design: forced_response, truth: 1/2, yes: 1/4, no: 1/4}

A longer questionnaire groups its questions in ``sections`` (a title, an optional ``intro``
and ``questions``), shows ``note`` items, and writes every human-readable text either as a
string or as a map of languages (``{en: ..., es: ...}``, with ``languages`` and
``default_language`` at the top). ``relevant`` (skip logic, see `deniable.client.skiplogic`)
may read public questions only: whether a question is shown reaches the server, so it must
not depend on a true private answer. docs/questionnaires.md has the whole format.

Every mistake raises `SpecError` with a message naming the question and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

from . import mechanisms, skiplogic
from .errors import DeniableError
from .exact import canonical_json, check_json_text, json_number, parse_fraction
from .mechanisms import Mechanism
from .privacy import ONE_SIDED_STATEMENT, WEAK_EPSILON, posterior_bound, privacy_statement

QUESTION_TYPES = ("yes_no", "choice", "ordinal", "multi_select", "number")
ITEM_TYPES = QUESTION_TYPES + ("note",)
LAYOUTS = ("auto", "paged", "single")
#: Sizes beyond which a spec is refused at once (every check stays well under a second).
MAX_ITEMS = 1000
MAX_OPTIONS = 1000
MAX_SECTIONS = 200
MAX_TEXT_LENGTH = 5000
#: A spec file or body larger than this is refused before it is parsed (a 200-question bilingual
#: survey is about 120 KB).
MAX_SPEC_BYTES = 256 * 1024
#: The pure-Python YAML 1.2 parser costs about 25 µs per token, whatever its length: a YAML spec
#: with more structural marks (line breaks, commas, colons, dashes, brackets) than this is refused
#: before it is parsed (a 200-question bilingual survey has about 7,500).
MAX_YAML_MARKS = 15_000
_YAML_MARKS = re.compile(r"[\n,:\-\[\]{}]")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$")
_SURVEY_FIELDS = {"id", "title", "description", "version", "languages", "default_language", "layout",
                  "questions", "sections"}
_SECTION_FIELDS = {"id", "title", "intro", "relevant", "questions"}
_QUESTION_FIELDS = {"id", "type", "text", "hint", "options", "min", "max", "step", "privacy", "required",
                    "relevant", "constraint_message"}
_NOTE_FIELDS = {"id", "type", "text", "hint", "relevant"}
_OPTION_FIELDS = {"value", "label"}
#: Languages written right to left (the page sets dir="rtl" for them).
RIGHT_TO_LEFT = frozenset({"ar", "arc", "dv", "fa", "ha", "he", "khw", "ks", "ku", "ps", "sd", "ur", "yi"})


class AnswerError(DeniableError, ValueError):
    """An answer the client refuses before randomizing anything: ``question`` names the question,
    ``allowed`` says in words what it accepts."""

    def __init__(self, question: str, reason: str, allowed: str):
        super().__init__(f"answers.{question}: {reason}; allowed: {allowed}", f"answers.{question}")
        self.question, self.reason, self.allowed = question, reason, allowed


class SpecError(DeniableError, ValueError):
    """A survey spec is malformed; the message names the question and field."""


def _identifier(value, where: str) -> str:
    if not isinstance(value, str) or not _ID.match(value):
        raise SpecError(f"{where}: must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit; got {value!r}")
    return value


def _plain_text(value, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: must be a non-empty string, got {value!r}")
    if len(value) > MAX_TEXT_LENGTH:
        raise SpecError(f"{where}: longer than {MAX_TEXT_LENGTH} characters")
    return value


def is_right_to_left(language: str | None) -> bool:
    return bool(language) and language.split("-")[0].lower() in RIGHT_TO_LEFT


class _Languages:
    """The survey's languages: validates localized texts and records missing translations."""

    def __init__(self, languages, default):
        self.declared = languages is not None
        if languages is None:
            if default is not None:
                raise SpecError("survey.default_language: needs a list of languages beside it")
            self.codes, self.default = [], None
        else:
            if not isinstance(languages, list) or not languages:
                raise SpecError(f"survey.languages: must be a non-empty list of language codes, got {languages!r}")
            for i, code in enumerate(languages):
                if not isinstance(code, str) or not _LANGUAGE.match(code):
                    raise SpecError(f"survey.languages[{i}]: must be a language code such as 'en', 'es' or 'pt-BR', got {code!r}")
            if len(set(languages)) != len(languages):
                raise SpecError("survey.languages: a language appears more than once")
            self.codes = list(languages)
            self.default = languages[0] if default is None else default
            if self.default not in self.codes:
                raise SpecError(f"survey.default_language: {self.default!r} is not one of the languages ({', '.join(self.codes)})")
        self.missing: list[tuple[str, str]] = []  # (where, language)

    def text(self, value, where: str, required: bool = True):
        """A string, or a map language → string that has at least the default language."""
        if value is None and not required:
            return None
        if not isinstance(value, dict):
            return _plain_text(value, where)
        if not self.declared:
            raise SpecError(f"{where}: a text in several languages needs 'languages' at the top of the survey")
        unknown = sorted(set(value) - set(self.codes), key=str)
        if unknown:
            raise SpecError(f"{where}: language {unknown[0]!r} is not one of the survey's languages ({', '.join(self.codes)})")
        if self.default not in value:
            raise SpecError(f"{where}: needs the default language {self.default!r} (the text shown where a translation is missing)")
        for code in self.codes:
            if code in value:
                _plain_text(value[code], f"{where}.{code}")
            else:
                self.missing.append((where, code))
        return {code: value[code] for code in self.codes if code in value}


def localize(text, language: str | None, default: str | None):
    """A localized text in ``language``, falling back to the default language."""
    if text is None or isinstance(text, str):
        return text
    return text.get(language) or text[default]


class _Item:
    """What questions and notes share: an id, a text, a hint, skip logic, their position."""

    def __init__(self, spec: dict, position: int, languages: _Languages, allowed: set):
        self.id = _identifier(spec.get("id"), f"questions[{position}].id")
        self.where = where = f"question {self.id!r}"
        unknown = sorted(set(spec) - allowed)
        if unknown:
            raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
        self.languages = languages
        self.texts = languages.text(spec.get("text"), f"{where}.text")
        self.hints = languages.text(spec.get("hint"), f"{where}.hint", required=False)
        self.relevant = _expression(spec.get("relevant"), f"{where}.relevant")
        self.section = None

    @property
    def text(self) -> str:
        """The text in the default language (`text_in` for another)."""
        return localize(self.texts, None, self.languages.default)

    def text_in(self, language: str | None = None) -> str:
        return localize(self.texts, language, self.languages.default)

    def hint_in(self, language: str | None = None) -> str | None:
        return localize(self.hints, language, self.languages.default)

    def _common_dict(self) -> dict:
        spec = {"id": self.id, "type": self.type, "text": self.texts}
        if self.hints is not None:
            spec["hint"] = self.hints
        if self.relevant is not None:
            spec["relevant"] = skiplogic.to_text(self.relevant)
        return spec


def _expression(value, where: str):
    if value is None:
        return None
    try:
        return skiplogic.parse(value)
    except skiplogic.ExpressionError as error:
        raise SpecError(f"{where}: {error}") from None


class Note(_Item):
    """Text shown to the respondent between questions; never answered, never reported."""

    type = "note"
    is_private = False

    def __init__(self, spec: dict, position: int, languages: _Languages):
        super().__init__(spec, position, languages, _NOTE_FIELDS)

    def to_dict(self) -> dict:
        return self._common_dict()

    def __repr__(self) -> str:
        return f"<Note {self.id}>"


class Question(_Item):
    """One question of a survey with the mechanism that randomizes its answers."""

    def describe_answers(self) -> str:
        """What the question accepts, in words (for error messages; the JS twin says the same)."""
        if self.type == "number":
            low, high, step = map(json_number, self.grid)
            return f"a number from {low} to {high} in steps of {step}"
        if self.type == "multi_select":
            return "a list of some of " + ", ".join(map(repr, self.options))
        return "one of " + ", ".join(map(repr, self.mechanism.answers))

    def __init__(self, spec: dict, position: int, languages: _Languages | None = None):
        if not isinstance(spec, dict):
            raise SpecError(f"questions[{position}]: must be a mapping, got {spec!r}")
        languages = languages or _Languages(None, None)
        self.type = spec.get("type")
        super().__init__(spec, position, languages, _QUESTION_FIELDS)
        where = self.where
        if self.type not in QUESTION_TYPES:
            raise SpecError(f"{where}.type: must be one of {', '.join(ITEM_TYPES)}, got {self.type!r}")
        required = spec.get("required", False)
        if isinstance(required, str):
            try:
                required = skiplogic.parse(required)
            except skiplogic.ExpressionError as error:
                raise SpecError(f"{where}.required: must be true, false or a skip-logic expression; "
                                f"{required!r} is none of them ({error})") from None
        elif not isinstance(required, bool):
            raise SpecError(f"{where}.required: must be true, false or a skip-logic expression, got {required!r}")
        self.required = required
        self.option_labels = {}
        self.options = self._read_options(spec, where)
        self.grid = self._read_grid(spec, where)
        self.constraint_messages = languages.text(spec.get("constraint_message"), f"{where}.constraint_message",
                                                  required=False)
        if self.constraint_messages is not None and self.type != "number":
            raise SpecError(f"{where}.constraint_message: only number questions have a range to explain")
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
        if len(options) > MAX_OPTIONS:
            raise SpecError(f"{where}.options: at most {MAX_OPTIONS} options, got {len(options)}")
        values = []
        for i, option in enumerate(options):
            if isinstance(option, dict):  # {value: never, label: {en: Never, es: Nunca}}
                unknown = sorted(set(option) - _OPTION_FIELDS)
                if unknown:
                    raise SpecError(f"{where}.options[{i}]: unknown field {unknown[0]!r} (allowed: label, value)")
                value = _plain_text(option.get("value"), f"{where}.options[{i}].value")
                self.option_labels[value] = self.languages.text(option.get("label"), f"{where}.options[{i}].label")
            else:
                value = _plain_text(option, f"{where}.options[{i}]")
            values.append(value)
        if len(set(values)) != len(values):
            seen = set()
            duplicate = next(v for v in values if v in seen or seen.add(v))
            raise SpecError(f"{where}.options: {duplicate!r} appears more than once")
        if self.type == "multi_select" and len(values) > mechanisms.MAX_MULTI_SELECT_OPTIONS:
            raise SpecError(f"{where}.options: at most {mechanisms.MAX_MULTI_SELECT_OPTIONS} options for multi_select")
        return values

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
        """Randomized on the device (any design but ``none``), even one whose ε is infinite."""
        return self.mechanism.design != "none"

    @property
    def epsilon(self) -> float:
        return self.mechanism.epsilon

    def option_label(self, value: str, language: str | None = None) -> str:
        """An option's label in ``language`` (its value when it has no label of its own)."""
        return localize(self.option_labels.get(value, value), language, self.languages.default)

    def constraint_message_in(self, language: str | None = None) -> str | None:
        return localize(self.constraint_messages, language, self.languages.default)

    def privacy_statement(self, prior: float = 0.02) -> str:
        if self.is_private and math.isinf(self.epsilon):
            return ONE_SIDED_STATEMENT
        return privacy_statement(self.epsilon, prior)

    def to_dict(self) -> dict:
        """The canonical spec of this question (defaults filled in, fractions normalized).

        Fields a plain question does not use are left out, so a spec written before they
        existed keeps its hash."""
        spec = self._common_dict()
        spec["required"] = self.required if isinstance(self.required, bool) else skiplogic.to_text(self.required)
        if self.options is not None:
            spec["options"] = [{"value": o, "label": self.option_labels[o]} if o in self.option_labels else o
                               for o in self.options]
        if self.grid is not None:
            spec.update(zip(("min", "max", "step"), map(json_number, self.grid)))
        if self.constraint_messages is not None:
            spec["constraint_message"] = self.constraint_messages
        spec["privacy"] = "none" if self.mechanism.design == "none" else dict(self.mechanism.params)
        return spec

    def __repr__(self) -> str:
        return f"<Question {self.id} {self.type} {self.mechanism.design} ε={self.epsilon:.4g}>"


def _item(spec, position: int, languages: _Languages):
    if not isinstance(spec, dict):
        raise SpecError(f"questions[{position}]: must be a mapping, got {spec!r}")
    if spec.get("type") == "note":
        return Note(spec, position, languages)
    return Question(spec, position, languages)


class Section:
    """A titled group of questions (one screen on a phone)."""

    def __init__(self, spec, position: int, languages: _Languages, first_position: int):
        if not isinstance(spec, dict):
            raise SpecError(f"sections[{position}]: must be a mapping, got {spec!r}")
        self.id = _identifier(spec.get("id"), f"sections[{position}].id")
        where = f"section {self.id!r}"
        unknown = sorted(set(spec) - _SECTION_FIELDS)
        if unknown:
            raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(_SECTION_FIELDS))})")
        self.languages = languages
        self.titles = languages.text(spec.get("title"), f"{where}.title")
        self.intros = languages.text(spec.get("intro"), f"{where}.intro", required=False)
        self.relevant = _expression(spec.get("relevant"), f"{where}.relevant")
        items = spec.get("questions")
        if not isinstance(items, list) or not items:
            raise SpecError(f"{where}.questions: must be a non-empty list of questions")
        self.items = [_item(item, first_position + i, languages) for i, item in enumerate(items)]
        for item in self.items:
            item.section = self

    def title_in(self, language: str | None = None) -> str:
        return localize(self.titles, language, self.languages.default)

    def intro_in(self, language: str | None = None) -> str | None:
        return localize(self.intros, language, self.languages.default)

    def to_dict(self) -> dict:
        spec = {"id": self.id, "title": self.titles}
        if self.intros is not None:
            spec["intro"] = self.intros
        if self.relevant is not None:
            spec["relevant"] = skiplogic.to_text(self.relevant)
        spec["questions"] = [item.to_dict() for item in self.items]
        return spec


def leak_message(where: str, item_id: str, private_id: str) -> str:
    decided = "must be answered" if where.endswith(".required") else "is shown"
    return (f"{where}: refers to {private_id!r}, a private (randomized) question. Whether {item_id!r} {decided}, "
            f"and so whether a report for it reaches the server, would reveal the true answer to {private_id!r}. "
            f"Ask {item_id!r} of everyone instead, with an option such as 'does not apply' among its "
            f"randomized answers.")


class Survey:
    """A validated survey spec. Build with `Survey.from_file` or `Survey.from_dict`."""

    def __init__(self, spec: dict):
        if not isinstance(spec, dict):
            raise SpecError(f"survey: must be a mapping, got {type(spec).__name__}")
        try:
            check_json_text(spec, "survey")
        except ValueError as error:
            raise SpecError(str(error)) from None
        unknown = sorted(set(spec) - _SURVEY_FIELDS, key=str)
        if unknown:
            raise SpecError(f"survey: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(_SURVEY_FIELDS))})")
        self.id = _identifier(spec.get("id"), "survey.id")
        self.languages = _Languages(spec.get("languages"), spec.get("default_language"))
        self.titles = self.languages.text(spec.get("title"), "survey.title")
        self.descriptions = self.languages.text(spec.get("description"), "survey.description", required=False)
        self.version = spec.get("version")
        if self.version is not None:
            _plain_text(self.version, "survey.version")
        self.layout = spec.get("layout", "auto")
        if self.layout not in LAYOUTS:
            raise SpecError(f"survey.layout: must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        self.sections = self._read_sections(spec)
        self.items = [item for section in self.sections for item in section.items]
        if len(self.items) > MAX_ITEMS:
            raise SpecError(f"survey: at most {MAX_ITEMS} questions and notes, got {len(self.items)}")
        self.questions: dict[str, Question] = {}
        seen = set()
        for position, item in enumerate(self.items):
            if item.id in seen:
                raise SpecError(f"question {item.id!r}.id: duplicate id (questions[{position}])")
            seen.add(item.id)
            if isinstance(item, Question):
                self.questions[item.id] = item
        if not self.questions:
            raise SpecError("survey.questions: must hold at least one question (notes alone collect nothing)")
        self._check_skip_logic()

    def _read_sections(self, spec) -> list[Section]:
        if "sections" in spec:
            if "questions" in spec:
                raise SpecError("survey: give either 'questions' or 'sections', not both")
            sections = spec["sections"]
            if not isinstance(sections, list) or not sections:
                raise SpecError("survey.sections: must be a non-empty list of sections")
            if len(sections) > MAX_SECTIONS:
                raise SpecError(f"survey.sections: at most {MAX_SECTIONS} sections, got {len(sections)}")
            read, position = [], 0
            for i, section_spec in enumerate(sections):
                section = Section(section_spec, i, self.languages, position)
                position += len(section.items)
                read.append(section)
            ids = [s.id for s in read]
            duplicate = next((s for s in ids if ids.count(s) > 1), None)
            if duplicate:
                raise SpecError(f"section {duplicate!r}.id: duplicate id")
            return read
        questions = spec.get("questions")
        if not isinstance(questions, list) or not questions:
            raise SpecError("survey.questions: must be a non-empty list of questions")
        if len(questions) > MAX_ITEMS:
            raise SpecError(f"survey: at most {MAX_ITEMS} questions and notes, got {len(questions)}")
        implicit = Section.__new__(Section)
        implicit.id, implicit.titles, implicit.intros, implicit.relevant = None, None, None, None
        implicit.languages = self.languages
        implicit.items = [_item(item, i, self.languages) for i, item in enumerate(questions)]
        for item in implicit.items:
            item.section = implicit
        return [implicit]

    def _check_skip_logic(self):
        """Every expression reads only earlier, public questions, with literals they can take."""
        earlier: dict[str, Question] = {}
        for section in self.sections:
            if section.relevant is not None:
                self._check_expression(section.relevant, f"section {section.id!r}.relevant", section.id, earlier)
            for item in section.items:
                if item.relevant is not None:
                    self._check_expression(item.relevant, f"{item.where}.relevant", item.id, earlier)
                if isinstance(item, Question) and not isinstance(item.required, bool):
                    self._check_expression(item.required, f"{item.where}.required", item.id, earlier)
                if isinstance(item, Question):
                    earlier[item.id] = item

    def _check_expression(self, tree, where: str, item_id: str, earlier: dict):
        for leaf in skiplogic.comparisons(tree):
            ref = leaf["question"]
            question = earlier.get(ref)
            if question is None:
                if ref in self.questions or any(i.id == ref for i in self.items):
                    raise SpecError(f"{where}: {ref!r} is not a question asked before this one "
                                    f"(skip logic reads answers already given)")
                raise SpecError(f"{where}: no question {ref!r} in this survey")
            if question.is_private:
                raise SpecError(leak_message(where, item_id, ref))
            op, value = leaf["op"], leaf["value"]
            if question.type == "number":
                if op == "selected" or "number" not in value:
                    raise SpecError(f"{where}: {ref!r} is a number question; compare it with a number, "
                                    f"as in {ref} >= 18")
                continue
            allowed = ["yes", "no"] if question.type == "yes_no" else question.options
            if question.type == "multi_select" and op != "selected":
                raise SpecError(f"{where}: {ref!r} allows several answers; use selected({ref}, 'option')")
            if op in skiplogic.ORDERINGS or "text" not in value:
                raise SpecError(f"{where}: {ref!r} has named answers; use {ref} = 'option' or selected({ref}, 'option')")
            if value["text"] not in allowed:
                raise SpecError(f"{where}: {value['text']!r} is not an answer of {ref!r} (answers: {', '.join(allowed)})")

    # ------------------------------------------------------------------ texts

    @property
    def title(self) -> str:
        return localize(self.titles, None, self.languages.default)

    @property
    def description(self) -> str | None:
        return localize(self.descriptions, None, self.languages.default)

    def title_in(self, language: str | None = None) -> str:
        return localize(self.titles, language, self.languages.default)

    def description_in(self, language: str | None = None) -> str | None:
        return localize(self.descriptions, language, self.languages.default)

    @property
    def default_language(self) -> str | None:
        return self.languages.default

    @property
    def warnings(self) -> list[str]:
        """What is valid but worth fixing before fielding: missing translations, private
        questions whose ε is infinite (a one-sided design protects one answer only)."""
        by_language = {}
        for where, code in self.languages.missing:
            by_language.setdefault(code, []).append(where)
        warnings = [f"{len(places)} text(s) have no {code!r} translation and fall back to "
                    f"{self.languages.default!r}: {', '.join(places[:5])}{', ...' if len(places) > 5 else ''}"
                    for code, places in by_language.items()]
        for q in self.private_questions:
            if WEAK_EPSILON < q.epsilon < math.inf:
                warnings.append(f"question {q.id!r}: ε = {q.epsilon:.3g} leaves little protection: someone 2% sure of "
                                f"an answer beforehand can be {posterior_bound(0.02, q.epsilon):.0%} sure after one report "
                                f"(flagged above ε = ln 49 ≈ {WEAK_EPSILON:.2f}, where 2% can pass 50%)")
            if math.isinf(q.epsilon):  # randomized, yet one report value pins the answer
                warnings.append(f"question {q.id!r}: ε is infinite: some report is only ever sent by respondents with "
                                f"one particular true answer, so it reveals that answer (one-sided garbling protects "
                                f"one answer only). A two-sided design has a finite ε, e.g. "
                                f"{{design: forced_response, truth: 1/2, yes: 1/4, no: 1/4}} (ε = ln 3)")
        return warnings

    # ------------------------------------------------------------------ skip logic

    def shown(self, answers: dict) -> list[str]:
        """Ids of the questions and notes shown for these answers (public ones decide; answers to
        questions that are not shown do not count)."""
        visible: dict = {}
        shown = []
        for section in self.sections:
            if section.relevant is not None and not skiplogic.evaluate(section.relevant, visible):
                continue
            for item in section.items:
                if item.relevant is not None and not skiplogic.evaluate(item.relevant, visible):
                    continue
                shown.append(item.id)
                if item.id in self.questions and answers.get(item.id) is not None:
                    visible[item.id] = answers[item.id]
        return shown

    def required_now(self, answers: dict, shown=None) -> list[str]:
        """Ids of the shown questions that must be answered, given these answers."""
        shown = self.shown(answers) if shown is None else shown
        visible = {qid: answers[qid] for qid in shown if qid in self.questions and answers.get(qid) is not None}
        return [qid for qid in shown if qid in self.questions and
                (self.questions[qid].required if isinstance(self.questions[qid].required, bool)
                 else skiplogic.evaluate(self.questions[qid].required, visible))]

    @property
    def has_skip_logic(self) -> bool:
        return any(item.relevant is not None for item in self.items) or \
            any(s.relevant is not None for s in self.sections)

    def condition(self, qid: str):
        """The tree that decides whether an item is shown (its section's and its own, joined by
        and), or None when it is shown to everyone."""
        item = next(i for i in self.items if i.id == qid)
        parts = [t for t in (item.section.relevant, item.relevant) if t is not None]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return skiplogic.parse(" and ".join(f"({skiplogic.to_text(t)})" for t in parts))

    # ------------------------------------------------------------------ canonical form

    @classmethod
    def from_dict(cls, spec: dict) -> "Survey":
        return cls(spec)

    @classmethod
    def from_json(cls, text: str) -> "Survey":
        _check_size(text)
        try:
            return cls(json.loads(text))
        except json.JSONDecodeError as error:
            raise SpecError(f"survey: not valid JSON ({error})") from None
        except RecursionError:
            raise SpecError("survey: nested too deeply to be a survey spec") from None

    @classmethod
    def from_yaml(cls, text: str) -> "Survey":
        _check_size(text)
        marks = len(_YAML_MARKS.findall(text))
        if marks > MAX_YAML_MARKS:
            raise SpecError(f"survey: {marks:,} YAML tokens, more than the {MAX_YAML_MARKS:,} a spec may have "
                            f"(long option lists cost the most; JSON specs are read without this limit)")
        return cls(load_yaml(text))

    @classmethod
    def from_file(cls, path) -> "Survey":
        """Read a ``.json``, ``.yaml`` or ``.yml`` spec, or an XLSForm (``.xlsx``; needs the
        server extra's openpyxl)."""
        path = Path(path)
        if path.suffix.lower() == ".xlsx":
            return cls.from_xlsform(path)
        try:
            if path.stat().st_size > MAX_SPEC_BYTES:
                raise SpecError(f"{path}: larger than {MAX_SPEC_BYTES // 1024} KiB, the limit for a survey spec")
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise SpecError(f"{path}: cannot read ({error.strerror})") from None
        except UnicodeDecodeError:
            raise SpecError(f"{path}: not a text file (a spec is UTF-8 YAML or JSON; an XLSForm ends in .xlsx)") from None
        if path.suffix.lower() == ".json":
            return cls.from_json(text)
        return cls.from_yaml(text)

    @classmethod
    def from_xlsform(cls, path) -> "Survey":
        """Read an XLSForm (.xlsx). The reader (openpyxl) lives in the server extra, not the client."""
        try:
            from .xlsform import read_xlsform
        except ImportError:
            raise SpecError("reading XLSForms needs the server extra: pip install 'deniable[server]'") from None
        return cls(read_xlsform(path))

    def to_dict(self) -> dict:
        spec = {"id": self.id, "title": self.titles}
        if self.descriptions is not None:
            spec["description"] = self.descriptions
        if self.version is not None:
            spec["version"] = self.version
        if self.languages.declared:
            spec["languages"] = list(self.languages.codes)
            spec["default_language"] = self.languages.default
        if self.layout != "auto":
            spec["layout"] = self.layout
        if self.sections[0].id is None:
            spec["questions"] = [item.to_dict() for item in self.items]
        else:
            spec["sections"] = [section.to_dict() for section in self.sections]
        return spec

    def canonical_json(self) -> str:
        return canonical_json(self.to_dict())

    @property
    def hash(self) -> str:
        """SHA-256 of the canonical JSON (every language included): identifies this version."""
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
        at all, which `privacy_summary` states separately. Skip logic cannot lower the total
        for a respondent who is shown every question, so it counts them all.
        """
        return math.fsum(q.epsilon for q in self.private_questions)

    def randomize(self, answers: dict, rng=None) -> dict:
        """Reports for the shown, answered questions; unanswered (absent or None) ones and the
        answers to questions that skip logic hides are left out."""
        if not isinstance(answers, dict):
            raise ValueError("answers must be a mapping of question id to answer")
        unknown = sorted(set(answers) - set(self.questions))
        if unknown:
            raise AnswerError(unknown[0], "no such question in this survey", ", ".join(self.questions))
        for qid, answer in answers.items():  # every answer checked before any is randomized
            if answer is not None:
                question = self.questions[qid]
                try:
                    question.mechanism.validate_answer(answer)
                except ValueError as error:
                    raise AnswerError(qid, str(error), question.describe_answers()) from None
        shown = set(self.shown(answers))
        return {qid: q.mechanism.randomize(answers[qid], rng)
                for qid, q in self.questions.items() if qid in shown and answers.get(qid) is not None}

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


def _check_size(text: str):
    if len(text) > MAX_SPEC_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_SPEC_BYTES:
        raise SpecError(f"survey: larger than {MAX_SPEC_BYTES // 1024} KiB, the limit for a survey spec")


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
        # pure: ruamel's C parser (libyaml) follows the YAML 1.1 grammar and refuses some 1.2
        # plain scalars ("Which region do you live in?, …" in a flow mapping).
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as error:
        raise SpecError(f"survey: not valid YAML ({error})") from None
    try:
        return _plain(data)
    except RecursionError:  # a recursive alias (a: &a [*a]) or absurd nesting
        raise SpecError("survey: the YAML refers to itself (a recursive alias) or is nested too deeply") from None


def _plain(value):
    """ruamel's safe loader already yields dict/list/str/int/float/bool/None; dates become text."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (str, bool)) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)
