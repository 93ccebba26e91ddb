"""The items of a survey: questions (each with its mechanism), notes, sections, and the languages
their texts are written in. `Survey` (in `survey`) puts them together."""

from __future__ import annotations

import re

from . import catalogue, designs, mechanisms, order, quality, skiplogic
from .errors import SpecError
from .exact import parse_fraction
from .identifiers import identifier
from .json_text import json_number
from .mechanisms import Mechanism
from .panels import memoized
from .privacy import DEFAULT_PRIOR
from .splitballot import SplitBallot

QUESTION_TYPES = ("yes_no", "choice", "ordinal", "multi_select", "number")
ITEM_TYPES = QUESTION_TYPES + ("note",)
LAYOUTS = ("auto", "paged", "single")
#: Sizes beyond which a spec is refused at once (every check stays well under a second).
MAX_ITEMS = 1000
MAX_OPTIONS = 1000
MAX_SECTIONS = 200
MAX_TEXT_LENGTH = 5000
#: Distinct valid reports a question remembers (a number question's grid can be long; the memo stays small).
_REPORT_MEMO_SIZE = 4096
_LANGUAGE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}")
_SURVEY_FIELDS = {"id", "title", "description", "version", "languages", "default_language", "layout",
                  "questions", "sections", "max_epsilon", "repeated", "page_words", "sample", "opens", "closes", "completion", "consent",
                  "quotas", "randomize_sections", "invitations", "quality"}
_SECTION_FIELDS = {"id", "title", "intro", "relevant", "questions", "randomize"}
_QUESTION_FIELDS = {"id", "type", "text", "hint", "options", "min", "max", "step", "bins", "privacy", "required",
                    "relevant", "constraint_message", "control", "split_ballot", "randomize", "check"}
_NOTE_FIELDS = {"id", "type", "text", "hint", "relevant"}
_OPTION_FIELDS = {"value", "label"}
#: Languages written right to left (the page sets dir="rtl" for them).
RIGHT_TO_LEFT = frozenset({"ar", "arc", "dv", "fa", "ha", "he", "khw", "ks", "ku", "ps", "sd", "ur", "yi"})


def refuse_unknown_fields(spec: dict, allowed: set, where: str):
    """SpecError naming the first field of ``spec`` that ``allowed`` does not list, and what is allowed."""
    unknown = sorted(set(spec) - allowed, key=str)
    if unknown:
        raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _plain_text(value, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: must be a non-empty string, got {value!r}")
    if len(value) > MAX_TEXT_LENGTH:
        raise SpecError(f"{where}: longer than {MAX_TEXT_LENGTH} characters")
    return value


#: What ends a line anywhere a line is read (Python's str.splitlines, e-mail headers, the Unicode separators).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def refuse_line_breaks(texts, where: str):
    """A text that becomes one line (a title in an e-mail's subject, any header): refused with a line break in it, in
    any of its languages (``texts``: one text or {language: text})."""
    for code, text in (texts.items() if isinstance(texts, dict) else [(None, texts)]):
        if text is not None and any(mark in text for mark in LINE_BREAKS):
            raise SpecError(f"{where}{'.' + code if code else ''}: one line, without a line break (it is put in "
                            "e-mail subjects and page titles)")


def is_right_to_left(language: str | None) -> bool:
    return language is not None and language.split("-")[0].lower() in RIGHT_TO_LEFT


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
                if not isinstance(code, str) or not _LANGUAGE.fullmatch(code):
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

    type: str

    def __init__(self, spec: dict, position: int, languages: _Languages, allowed: set):
        self.id = identifier(spec.get("id"), f"questions[{position}].id")
        self.where = where = f"question {self.id!r}"
        refuse_unknown_fields(spec, allowed, where)
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
        if self.mechanism.respondent_randomizes:
            return "the respondent's own randomized report, one of " + ", ".join(map(repr, self.mechanism.reports))
        return "one of " + ", ".join(map(repr, self.mechanism.answers))

    def __init__(self, spec: dict, position: int, languages: _Languages | None = None):
        if not isinstance(spec, dict):
            raise SpecError(f"questions[{position}]: must be a mapping, got {spec!r}")
        languages = languages or _Languages(None, None)
        self.type = spec.get("type")  # type: ignore[assignment]  # checked against QUESTION_TYPES below
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
        self.option_labels: dict = {}
        self._valid_reports: dict = {}  # (type, report) -> its canonical form, see validate_report
        self.options = self._read_options(spec, where)
        self.randomize = order.read_option_flag(spec.get("randomize", False), self.type, f"{where}.randomize")
        self.grid = self._read_grid(spec, where)
        self.bins = self._read_bins(spec.get("bins"), f"{where}.bins")
        self.constraint_messages = languages.text(spec.get("constraint_message"), f"{where}.constraint_message",
                                                  required=False)
        if self.constraint_messages is not None and self.type != "number":
            raise SpecError(f"{where}.constraint_message: only number questions have a range to explain")
        privacy = spec.get("privacy")
        if privacy is None:  # absent or null: the type's default, as in the JS twin
            privacy = designs.DEFAULT_PRIVACY.get(self.type)
        if privacy is None:
            raise SpecError(f"{where}.privacy: required for {self.type} questions "
                            f"(a design such as {self._suggestion()}, or 'none' for a public question)")
        try:
            self.mechanism: Mechanism = designs.build(self.type, privacy, f"{where}.privacy", self.options, self.grid,
                                                      text=languages.text)
        except ValueError as error:
            raise SpecError(str(error)) from None
        self.control = self._read_control(spec.get("control"), f"{where}.control")
        self.check = quality.read_check(spec.get("check"), self, f"{where}.check")  # an instructed answer
        split = spec.get("split_ballot")
        try:
            self.split_ballot = None if split is None else SplitBallot(split, f"{where}.split_ballot", self.type,
                                                                        self.mechanism)
        except ValueError as error:
            raise SpecError(str(error)) from None

    @property
    def report_space(self):
        """What a report of this question may be: the mechanism's reports, or with a split ballot both arms'
        (``reports`` and ``validate_report``, as a mechanism has them)."""
        return self.split_ballot or self.mechanism

    def validate_report(self, report):
        """The canonical form of a report of this question; ValueError when it is not one."""
        # A question's reports come from a small alphabet: a text or whole number seen before is answered from
        # a memo (ingest judges every report of every response; the canonical forms are immutable).
        key = (type(report), report) if type(report) in (str, int) else None
        if key is not None:
            clean = self._valid_reports.get(key)
            if clean is not None:
                return clean
        clean = self.report_space.validate_report(report)
        if key is not None and len(self._valid_reports) < _REPORT_MEMO_SIZE:
            self._valid_reports[key] = clean
        return clean

    def _read_control(self, control, where: str):
        """``control: {share: 0}``: an item whose true "yes" share is known (a fictitious country nobody can
        have visited), so the analysis can check the design recovered it. None when not a control."""
        if control is None:
            return None
        if self.type != "yes_no":
            raise SpecError(f"{where}: only yes/no questions can be known-share controls")
        if not isinstance(control, dict) or set(control) != {"share"}:
            raise SpecError(f"{where}: a mapping with the one key 'share' (the known share of 'yes', e.g. 0), got {control!r}")
        share = parse_fraction(control["share"], f"{where}.share")
        if not 0 <= share <= 1:
            raise SpecError(f"{where}.share: must be between 0 and 1, got {control['share']!r}")
        return share

    def _suggestion(self) -> str:
        return {"choice": "{design: k_rr, epsilon: ln 3}", "ordinal": "{design: ordinal, epsilon: 1}",
                "multi_select": "{design: unary, epsilon: 2}", "number": "{design: laplace, epsilon: 1}"}[self.type]

    def _read_options(self, spec, where):
        if self.type == "yes_no" and "options" in spec:
            self._read_yes_no_labels(spec["options"], f"{where}.options")
            return None
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
                refuse_unknown_fields(option, _OPTION_FIELDS, f"{where}.options[{i}]")
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

    def _read_yes_no_labels(self, options, where):
        """A yes/no question's own labels for its two answers (an XLSForm's list, "Oui, déjà" / "Jamais"):
        ``[{value: yes, label: …}, {value: no, label: …}]``; without them the page says the catalogue's Yes/No."""
        if not isinstance(options, list) or len(options) != 2 or not all(isinstance(o, dict) for o in options):
            raise SpecError(f"{where}: a yes/no question takes only labels for its answers, as "
                            "[{value: yes, label: …}, {value: no, label: …}], got " + repr(options))
        for i, option in enumerate(options):
            refuse_unknown_fields(option, _OPTION_FIELDS, f"{where}[{i}]")
            if option.get("value") != ("yes", "no")[i]:
                raise SpecError(f"{where}[{i}].value: must be {('yes', 'no')[i]!r} (yes first), got {option.get('value')!r}")
            self.option_labels[option["value"]] = self.languages.text(option.get("label"), f"{where}[{i}].label")

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

    def _read_bins(self, bins, where):
        """The lower edges of the ranges a wide number is published over (values on its grid, increasing): ``[0, 1,
        5, 10]`` bins 0..100 as 0, 1–4, 5–9 and 10–100. None: the analysis's round ones."""
        if bins is None:
            return None
        if self.type != "number":
            raise SpecError(f"{where}: only number questions are published over bins")
        if not isinstance(bins, list) or not bins:
            raise SpecError(f"{where}: must be a list of the bins' lower edges, values on the grid, got {bins!r}")
        low, high, step = self.grid
        edges = []
        for i, raw in enumerate(bins):
            if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
                raise SpecError(f"{where}[{i}]: must be a number, got {raw!r}")
            try:
                edge = parse_fraction(raw, f"{where}[{i}]")
            except ValueError as error:
                raise SpecError(str(error)) from None
            if not low <= edge <= high:
                raise SpecError(f"{where}[{i}]: {raw!r} is outside the question's range "
                                f"[{json_number(low)}, {json_number(high)}]")
            if ((edge - low) / step).denominator != 1:
                raise SpecError(f"{where}[{i}]: {raw!r} is not on the grid {json_number(low)}..{json_number(high)} "
                                f"step {json_number(step)}")
            if edges and edge <= edges[-1]:
                raise SpecError(f"{where}[{i}]: the edges must increase; {raw!r} follows {json_number(edges[-1])}")
            edges.append(edge)
        return tuple(edges)

    @property
    def is_private(self) -> bool:
        """Randomized on the device (any design but ``none``), even one whose ε is infinite."""
        return self.mechanism.design != "none"

    @property
    def epsilon(self) -> float:
        """ε of one report: in a repeated survey, of one wave's (the composite channel's), ε₁."""
        return self.mechanism.epsilon

    @property
    def permanent(self) -> Mechanism:
        """The design as the spec gives it: in a repeated survey, the permanent layer under the instantaneous one."""
        return getattr(self.mechanism, "permanent", self.mechanism)

    @property
    def epsilon_all_waves(self) -> float:
        """ε of every report of every wave together, for an unchanged answer: ε∞, the permanent layer's (ε of one
        report when the survey is not repeated)."""
        return self.permanent.epsilon

    def make_repeated(self, repeated) -> None:
        """Turn this private question into a panel's: the composite channel (`panels.memoized`) becomes its
        mechanism, the design stays its `permanent` layer."""
        self.mechanism = memoized(self.mechanism, repeated.layer(self.mechanism))
        if self.split_ballot is not None:
            self.split_ballot.mechanism = self.mechanism
        self._valid_reports.clear()

    def option_label(self, value: str, language: str | None = None, words=None) -> str:
        """An option's label in ``language``: its own label, else for a yes/no answer the page word (of ``words``,
        a table from `catalogue.messages`, else of ``language``), else its value."""
        if value in self.option_labels:
            return localize(self.option_labels[value], language, self.languages.default)
        if self.type == "yes_no" and value in ("yes", "no"):
            return catalogue.table(language if words is None else words)[value]
        return value

    def constraint_message_in(self, language: str | None = None) -> str | None:
        return localize(self.constraint_messages, language, self.languages.default)

    def privacy_statement(self, prior: float = DEFAULT_PRIOR, words=None) -> str:
        """What this question's report can reveal, in plain words: in English, or in ``words`` (a table from
        `catalogue.messages`, or a language code). One template per language, filled with the same figures."""
        words = catalogue.table(words)
        respondent = self.mechanism.design if self.mechanism.respondent_randomizes else None
        statement = catalogue.privacy_statement(self.epsilon, words, prior, randomized=self.is_private,
                                                respondent=respondent)
        if self.split_ballot is not None:
            statement += " " + catalogue.split_ballot_statement(self.split_ballot.direct, words)
        if self.permanent is not self.mechanism:
            statement += " " + catalogue.repeated_statement(self.epsilon_all_waves, words)
        return statement

    def to_dict(self) -> dict:
        """The canonical spec of this question (defaults filled in, fractions normalized).

        Fields a plain question does not use are left out, so a spec written before they
        existed keeps its hash."""
        spec = self._common_dict()
        spec["required"] = self.required if isinstance(self.required, bool) else skiplogic.to_text(self.required)
        if self.options is not None:
            spec["options"] = [{"value": o, "label": self.option_labels[o]} if o in self.option_labels else o
                               for o in self.options]
            if self.randomize:
                spec["randomize"] = True
        elif self.option_labels:  # a yes/no question's own labels
            spec["options"] = [{"value": o, "label": self.option_labels[o]} for o in ("yes", "no")]
        if self.grid is not None:
            spec.update(zip(("min", "max", "step"), map(json_number, self.grid)))
        if self.bins is not None:
            spec["bins"] = [json_number(edge) for edge in self.bins]
        if self.constraint_messages is not None:
            spec["constraint_message"] = self.constraint_messages
        spec["privacy"] = "none" if self.mechanism.design == "none" else dict(self.permanent.params)
        if self.control is not None:
            spec["control"] = {"share": str(self.control)}
        if self.check is not None:
            spec["check"] = self.check
        if self.split_ballot is not None:
            spec["split_ballot"] = self.split_ballot.to_dict()
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

    #: None: the one section of a spec that names none (`Survey` makes it).
    id: str | None

    def __init__(self, spec, position: int, languages: _Languages, first_position: int):
        if not isinstance(spec, dict):
            raise SpecError(f"sections[{position}]: must be a mapping, got {spec!r}")
        self.id = identifier(spec.get("id"), f"sections[{position}].id")
        where = f"section {self.id!r}"
        refuse_unknown_fields(spec, _SECTION_FIELDS, where)
        self.languages = languages
        if spec.get("title") is None:  # required, as the screen's heading: say so, not "got None"
            raise SpecError(f"{where}.title: required: the section's heading, one text or one per language")
        self.titles = languages.text(spec.get("title"), f"{where}.title")
        self.intros = languages.text(spec.get("intro"), f"{where}.intro", required=False)
        self.relevant = _expression(spec.get("relevant"), f"{where}.relevant")
        self.randomize = order.read_flag(spec.get("randomize", False), f"{where}.randomize")  # its items shuffled
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
        if self.randomize:
            spec["randomize"] = True
        spec["questions"] = [item.to_dict() for item in self.items]
        return spec


def leak_message(where: str, item_id: str, private_id: str) -> str:
    decided = "must be answered" if where.endswith(".required") else "is shown"
    return (f"{where}: refers to {private_id!r}, a private (randomized) question. Whether {item_id!r} {decided}, "
            f"and so whether a report for it reaches the server, would reveal the true answer to {private_id!r}. "
            f"Ask {item_id!r} of everyone instead, with an option such as 'does not apply' among its "
            f"randomized answers.")
