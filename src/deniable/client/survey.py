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
import math
from fractions import Fraction
from pathlib import Path

from . import catalogue, skiplogic, specfile
from .completion import Completion
from .compliance import GroupedMechanism
from .errors import AnswerError, SpecError
from .exact import EpsilonRequest
from .identifiers import identifier
from .invitations import Invitations
from .json_text import canonical_json, check_json_text
from .memo import Memo, MemoError
from .order import read_shuffled_sections
from .page_words import read_page_words
from .panels import Repeated
from .privacy import DEFAULT_PRIOR, WEAK_EPSILON, posterior_bound, survey_summary
from .quality import Quality
from .questions import (
    _SURVEY_FIELDS,
    LAYOUTS,
    MAX_ITEMS,
    MAX_SECTIONS,
    Question,
    Section,
    _item,
    _Languages,
    _plain_text,
    localize,
    refuse_line_breaks,
    refuse_unknown_fields,
)
from .quotas import read_quotas
from .randomness import default_source
from .rules import check_skip_logic
from .sample import read_sample
from .schedule import Schedule


class Survey:
    """A validated survey spec. Build with `Survey.from_file` or `Survey.from_dict`."""

    def __init__(self, spec: dict):
        if not isinstance(spec, dict):
            raise SpecError(f"survey: must be a mapping, got {type(spec).__name__}")
        try:
            check_json_text(spec, "survey")
        except ValueError as error:
            raise SpecError(str(error)) from None
        refuse_unknown_fields(spec, _SURVEY_FIELDS, "survey")
        self.id = identifier(spec.get("id"), "survey.id")
        self.languages = _Languages(spec.get("languages"), spec.get("default_language"))
        self.titles = self.languages.text(spec.get("title"), "survey.title")
        self.descriptions = self.languages.text(spec.get("description"), "survey.description", required=False)
        # What a respondent agrees to before the first question (with the privacy statement beside it): per language.
        self.consents = self.languages.text(spec.get("consent"), "survey.consent", required=False)
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
        self.shuffled_sections = read_shuffled_sections(spec.get("randomize_sections"), [s.id for s in self.sections])
        check_skip_logic(self)
        try:
            self.repeated = Repeated.parse(spec.get("repeated"))
        except ValueError as error:
            raise SpecError(str(error)) from None
        if self.repeated is not None:
            for question in self.private_questions:
                question.make_repeated(self.repeated)
        self.max_epsilon = self._read_budget(spec.get("max_epsilon"))
        self.page_words = read_page_words(spec.get("page_words"), self.page_languages)
        self.sample = read_sample(spec.get("sample"), self.questions)
        self.schedule = Schedule.read(spec.get("opens"), spec.get("closes"))
        self.completion = Completion.read(spec.get("completion"))
        self.quotas = read_quotas(spec.get("quotas"), self.questions)
        self.invitations = Invitations.read(spec.get("invitations"), self.languages)
        self.quality = Quality.read(spec.get("quality"))

    @property
    def page_languages(self) -> list[str]:
        """The languages its pages are shown in: its declared languages, else English."""
        return list(self.languages.codes) if self.languages.declared else [catalogue.DEFAULT]

    def words(self, language: str | None = None) -> dict:
        """The page words of ``language``: the shipped catalogue's, completed or overridden by ``page_words``."""
        return catalogue.messages(language, self.page_words.get(language))

    def statement_words(self) -> set[str]:
        """The page words its privacy statements are made of (a language must have them to be fielded)."""
        recording = catalogue.Recording(catalogue.shipped(catalogue.DEFAULT))
        for question in self.questions.values():
            question.privacy_statement(words=recording)
        return recording.read

    def check_fieldable(self):
        """SpecError when a language of the survey has no privacy statement: deniable ships no page words for it and
        ``page_words`` does not give the ones its statements need. A respondent must read the guarantee in the
        survey's language, so such a survey is refused where it is added (a stored one still loads). So is a title with
        a line break: it goes into e-mail subjects, where one cost `deniable invite` a traceback after it had claimed a
        contact."""
        refuse_line_breaks(self.titles, "survey.title")
        needed = self.statement_words()
        for code in self.page_languages:
            missing = [key for key in catalogue.fallbacks(code, self.page_words.get(code)) if key in needed]
            if missing:
                raise SpecError(f"survey.page_words.{code}: deniable ships no {code!r} page words, and the privacy "
                                f"statements of this survey need {', '.join(missing)}: give them under page_words.{code} "
                                "(a respondent must read the guarantee in the survey's language), or drop the language")

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
        implicit.randomize = False
        implicit.languages = self.languages
        implicit.items = [_item(item, i, self.languages) for i, item in enumerate(questions)]
        for item in implicit.items:
            item.section = implicit
        return [implicit]

    def _read_budget(self, raw) -> EpsilonRequest | None:
        """``max_epsilon``: the most a respondent may spend over the survey's private questions (sequential
        composition, as `epsilon` adds them; over all waves of a repeated survey); a spec over it is refused with
        the figures."""
        if raw is None:
            return None
        try:
            budget = EpsilonRequest.parse(raw, "survey.max_epsilon", ceiling=None)
        except ValueError as error:
            raise SpecError(str(error)) from None
        if not budget.allows(lambda: self.exp_epsilon, self.epsilon):
            costly = sorted(self.private_questions, key=lambda q: -q.epsilon_all_waves)[:3]
            listed = ", ".join(f"{q.id} {q.epsilon_all_waves:.4g}" for q in costly)
            raise SpecError(f"survey.max_epsilon: the private questions spend ε = {self.epsilon:.4g} per respondent, over "
                            f"the budget of {float(budget):.4g} (the largest: {listed}); lower their ε, drop a "
                            "question, or raise the budget")
        return budget

    @property
    def exp_epsilon(self):
        """The exact e^ε of the whole survey (the product of the private questions', over all waves of a repeated
        one), None when infinite."""
        total = Fraction(1)
        for question in self.private_questions:
            if question.permanent.exp_epsilon is None:
                return None
            total *= question.permanent.exp_epsilon
        return total

    def budget_use(self) -> str | None:
        """The budget in words ("ε = 2.197 of 3 (73%)"), or None without one."""
        if self.max_epsilon is None:
            return None
        budget = float(self.max_epsilon)
        return f"ε = {self.epsilon:.4g} of {budget:.4g} ({self.epsilon / budget:.0%})"

    @property
    def has_random_order(self) -> bool:
        """Whether some sections, questions or options are shown in an order drawn on the device (`client.order`)."""
        return bool(self.shuffled_sections) or any(s.randomize for s in self.sections) or any(
            q.randomize for q in self.questions.values())

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

    def consent_in(self, language: str | None = None) -> str | None:
        return localize(self.consents, language, self.languages.default)

    @property
    def default_language(self) -> str | None:
        return self.languages.default

    @property
    def warnings(self) -> list[str]:
        """What is valid but worth fixing before fielding: missing translations, private
        questions whose ε is infinite (a one-sided design protects one answer only)."""
        by_language: dict = {}
        for where, code in self.languages.missing:
            by_language.setdefault(code, []).append(where)
        warnings = [f"{len(places)} text(s) have no {code!r} translation and fall back to "
                    f"{self.languages.default!r}: {', '.join(places[:5])}{', ...' if len(places) > 5 else ''}"
                    for code, places in by_language.items()]
        for code in self.page_languages:
            english = catalogue.fallbacks(code, self.page_words.get(code))
            if english:
                warnings.append(f"{len(english)} page word(s) in {code!r} fall back to English (give them under "
                                f"page_words.{code}): {', '.join(english)}")
        for q in self.private_questions:
            if q.split_ballot is not None:
                warnings.append(f"question {q.id!r}: a split ballot asks {float(q.split_ballot.direct):.3g} of respondents "
                                "directly: their answer to it is sent as given, with no privacy (the page says so before "
                                "they answer); ε below is the randomized arm's")
            if WEAK_EPSILON < q.epsilon < math.inf:
                warnings.append(f"question {q.id!r}: ε = {q.epsilon:.3g} leaves little protection: someone 2% sure of "
                                f"an answer beforehand can be {posterior_bound(DEFAULT_PRIOR, q.epsilon):.0%} sure after one report "
                                f"(flagged above ε = ln 49 ≈ {WEAK_EPSILON:.2f}, where 2% can pass 50%)")
            if math.isinf(q.epsilon):  # randomized, yet one report value pins the answer
                two_sided = {
                    "triangular": "{design: crosswise, companion: …, p: 1/4} (ε = ln 3): the same companion question, "
                                  "and neither choice reveals the answer",
                    "cheating_detection": "the symmetric variant: give each group a 'no' share beside its 'yes' "
                                          "(e.g. a: {yes: 2/3, no: 1/12}, b: {yes: 1/12, no: 2/3}: ε = ln 4; groups far from "
                                          "proportional keep the cheater share estimable)",
                    "stochastic_lie_detector": "crosswise, which measures no lying; the lie detector is one-sided "
                                               "by construction (an honest 'no' is only ever sent by a non-carrier)",
                }.get(q.mechanism.design, "{design: forced_response, truth: 1/2, yes: 1/4, no: 1/4} (ε = ln 3)")
                warnings.append(f"question {q.id!r}: ε is infinite: some report is only ever sent by respondents with "
                                f"one particular true answer, so it reveals that answer (one-sided garbling protects "
                                f"one answer only). A two-sided design has a finite ε, e.g. {two_sided}")
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
        return cls(specfile.from_json(text))

    @classmethod
    def from_yaml(cls, text: str) -> "Survey":
        return cls(specfile.from_yaml(text))

    @classmethod
    def from_file(cls, path) -> "Survey":
        """Read a ``.json``, ``.yaml`` or ``.yml`` spec, or an XLSForm (``.xlsx``; needs openpyxl,
        the xlsform extra)."""
        path = Path(path)
        if path.suffix.lower() == ".xlsx":
            return cls.from_xlsform(path)
        text = specfile.read_text(path)
        return cls.from_json(text) if path.suffix.lower() == ".json" else cls.from_yaml(text)

    @classmethod
    def from_xlsform(cls, path) -> "Survey":
        """Read an XLSForm (.xlsx), through openpyxl (the xlsform extra), imported only here."""
        from .xlsform_reader import checked, read_form  # openpyxl, the xlsform extra's: loaded when a form is read

        return checked(Path(path), read_form(path), cls)

    def to_dict(self) -> dict:
        spec = {"id": self.id, "title": self.titles}
        if self.descriptions is not None:
            spec["description"] = self.descriptions
        if self.consents is not None:
            spec["consent"] = self.consents
        if self.version is not None:
            spec["version"] = self.version
        if self.languages.declared:
            spec["languages"] = list(self.languages.codes)
            spec["default_language"] = self.languages.default
        if self.layout != "auto":
            spec["layout"] = self.layout
        if self.repeated is not None:
            spec["repeated"] = self.repeated.canonical()
        if self.max_epsilon is not None:
            spec["max_epsilon"] = self.max_epsilon.canonical()
        if self.page_words:
            spec["page_words"] = self.page_words
        if self.sample:
            spec["sample"] = self.sample
        spec.update(self.schedule.to_dict())
        if self.completion is not None:
            spec["completion"] = self.completion.to_dict()
        if self.shuffled_sections:
            every = len(self.shuffled_sections) == len(self.sections)
            spec["randomize_sections"] = True if every else list(self.shuffled_sections)
        if self.invitations is not None:
            spec["invitations"] = self.invitations.to_dict()
        if self.quality is not None:
            spec["quality"] = self.quality.to_dict()
        if self.quotas:
            spec["quotas"] = [quota.to_dict() for quota in self.quotas]
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
        for a respondent who is shown every question, so it counts them all. In a repeated survey this is ε∞,
        over every wave (for unchanged answers); `epsilon_per_wave` is one wave's.
        """
        return math.fsum(q.epsilon_all_waves for q in self.private_questions)

    @property
    def epsilon_per_wave(self) -> float:
        """Total ε of one wave's reports: ε₁ summed (equal to `epsilon` when the survey is not repeated)."""
        return math.fsum(q.epsilon for q in self.private_questions)

    def randomize(self, answers: dict, rng=None, arms: dict | None = None, memo: Memo | None = None) -> dict:
        """Reports for the shown, answered questions; unanswered (absent or None) ones and the
        answers to questions that skip logic hides are left out. A question in which the respondent
        randomizes (crosswise, triangular, a natural randomizer) takes the respondent's report as it
        is: the device has no true answer to randomize.

        ``arms``: for each answered split-ballot question, the arm its respondent was shown before
        answering (`SplitBallot.assign_arm`, with the direct arm's notice on screen); a direct answer is
        sent as given, a randomized one through the design. Drawing the arm here, after the answer, would
        send a direct answer the respondent was never warned about, so a missing arm is an error.

        ``memo``: required by a repeated survey (and refused by any other), the device's `Memo`: each answer's
        permanent report is derived from it, then randomized afresh with ``rng`` (`deniable.client.panels`).
        Arms and groups are then the memo's (`arm_for`, `group_for`), the same in every wave."""
        self._check_memo(memo, required=True)
        return self._reports(answers, rng, simulate=False, arms=arms, memo=memo)

    def simulate(self, answers: dict, rng=None, memo: Memo | None = None) -> dict:
        """What respondents with these true answers would send: `randomize`, except that a question
        in which the respondent randomizes draws their report through its channel as they would, and a
        split ballot draws each respondent's arm (for demos, tests and planning; a real page never holds
        those true answers). In a repeated survey, ``memo`` (`Memo.new()` per simulated person) makes the
        reports of one person's waves share their permanent layer; without it each call is a new person."""
        self._check_memo(memo, required=False)
        return self._reports(answers, rng, simulate=True, memo=memo)

    def _check_memo(self, memo, required: bool):
        if memo is not None and not isinstance(memo, Memo):
            raise MemoError(f"memo: a deniable.client.Memo, got {type(memo).__name__}")
        if memo is not None and self.repeated is None:
            raise MemoError(f"memo: survey {self.id!r} is not repeated; a memo keeps reports alike across the waves "
                            "of a repeated survey only")
        if memo is None and required and self.repeated is not None:
            raise MemoError(f"memo: survey {self.id!r} is repeated: pass memo=Memo(path), the device's panel secret, "
                            "so every wave repeats the same permanent reports (a fresh draw per wave would spend ε anew)")

    def arm_for(self, question_id: str, memo: Memo) -> str:
        """The split-ballot arm this device's respondent is shown in every wave of a repeated survey."""
        split = self.questions[question_id].split_ballot
        assert split is not None, f"{question_id}: not a split-ballot question"
        return split.assign_arm(memo.stream(self.id, question_id, "arm"))

    def group_for(self, question_id: str, memo: Memo) -> str:
        """The group (cheating detection, lie detector) this device's respondent follows in every wave."""
        grouped = self.questions[question_id].permanent
        assert isinstance(grouped, GroupedMechanism), f"{question_id}: not a design with groups"
        return grouped.assign_group(memo.stream(self.id, question_id, "group"))

    def _reports(self, answers: dict, rng, simulate: bool, arms: dict | None = None, memo: Memo | None = None) -> dict:
        if not isinstance(answers, dict):
            raise ValueError("answers must be a mapping of question id to answer")
        unknown = sorted(set(answers) - set(self.questions))
        if unknown:
            raise AnswerError(unknown[0], "no such question in this survey", ", ".join(self.questions))
        if memo is not None:
            arms = self._memo_arms(answers, arms, memo)
        arms = self._arms(answers, arms, rng, simulate)
        given = {}  # every answer checked before any is randomized
        for qid, answer in answers.items():
            if answer is None:
                continue
            question = self.questions[qid]
            mechanism = question.mechanism
            try:
                if arms.get(qid) == "direct":
                    given[qid] = mechanism.validate_answer(answer)
                elif mechanism.respondent_randomizes and not simulate:
                    given[qid] = mechanism.validate_report(answer)
                    if memo is not None and "group" in given[qid] and given[qid]["group"] != self.group_for(qid, memo):
                        raise ValueError(f"group {given[qid]['group']!r} is not the one this device shows in every wave "
                                         f"(survey.group_for({qid!r}, memo) = {self.group_for(qid, memo)!r})")
                else:
                    mechanism.validate_answer(answer)
                    given[qid] = answer
            except ValueError as error:
                raise AnswerError(qid, str(error), question.describe_answers()) from None
        # Skip logic reads public answers only, and a public question's report is its answer.
        shown = set(self.shown(given))
        reports = {}
        for qid, value in given.items():
            if qid not in shown:
                continue
            question = self.questions[qid]
            if arms.get(qid) == "direct":
                reports[qid] = value
            else:
                reports[qid] = self._draw(question, value, rng, simulate, memo)
            if question.split_ballot is not None:
                reports[qid] = question.split_ballot.wrap(arms[qid], reports[qid])
        return reports

    def _draw(self, question, value, rng, simulate: bool, memo):
        """One question's randomized report: the design's draw, or in a repeated survey the permanent report
        (the memo's, or what the respondent chose) re-randomized by the instantaneous layer."""
        mechanism = question.mechanism
        typed = mechanism.respondent_randomizes and not simulate
        if self.repeated is None or not question.is_private:
            return value if typed else mechanism.randomize(value, rng)
        if memo is None:  # a simulated one-wave respondent: the composite channel in one draw
            return mechanism.randomize(value, rng)
        permanent = mechanism.permanent
        if not typed:  # the device's draw, or a simulated respondent's fixed fact, keyed on the answer
            stream = memo.stream(self.id, question.id, "report", permanent.answer_position(value))
            value = permanent.randomize(value, stream)
        return mechanism.instant.apply(permanent, value, rng or default_source())

    def _memo_arms(self, answers: dict, arms, memo) -> dict:
        """A repeated survey's arms are the memo's: given ones must be those."""
        kept = {qid: self.arm_for(qid, memo) for qid, answer in answers.items()
                if answer is not None and qid in self.questions and self.questions[qid].split_ballot is not None}
        for qid, arm in (arms or {}).items():
            if kept.get(qid, arm) != arm:
                raise AnswerError(qid, f"arms: {arm!r} is not the arm this device shows in every wave "
                                       f"(survey.arm_for({qid!r}, memo) = {kept[qid]!r})", "the memo's arm")
        return kept

    def _arms(self, answers: dict, arms, rng, simulate: bool) -> dict:
        """The arm of every answered split-ballot question: given (a real respondent's, drawn before the
        question was shown), or drawn now for a simulated respondent."""
        if arms is not None and not isinstance(arms, dict):
            raise ValueError("arms must be a mapping of question id to 'direct' or 'randomized'")
        arms = dict(arms or {})
        for qid in arms:
            question = self.questions.get(qid)
            if question is None or question.split_ballot is None:
                raise AnswerError(qid, "arms: this question has no split ballot", "no arm")
            if arms[qid] not in ("direct", "randomized"):
                raise AnswerError(qid, f"arms: {arms[qid]!r} is not an arm", "'direct' or 'randomized'")
        for qid, answer in answers.items():
            question = self.questions[qid]
            if answer is None or question.split_ballot is None or qid in arms:
                continue
            if not simulate:
                raise AnswerError(qid, "a split-ballot question needs the arm its respondent was shown before "
                                       "answering: pass arms={%r: question.split_ballot.assign_arm()}, drawn when "
                                       "the question is shown (with the direct arm's notice)" % qid,
                                  "an answer with its arm")
            arms[qid] = question.split_ballot.assign_arm(rng)
        return arms

    def privacy_summary(self, prior: float = DEFAULT_PRIOR) -> str:
        """Each question's design, ε and how far one report can move a belief of ``prior``; the totals (`privacy`)."""
        return survey_summary(self, prior)

    def __repr__(self) -> str:
        return f"<Survey {self.id} {len(self.questions)} questions ε={self.epsilon:.4g} {self.hash[:12]}>"

