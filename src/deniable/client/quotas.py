"""A spec's ``quotas:``: how many responses a group of respondents may send, the group told by public answers.

    quotas:
      - question: region          # 500 from each region
        limit: 500
      - question: region          # or a limit per answer (an answer not named takes `limit`, else has none)
        limits: {north: 500, south: 300}
      - questions: [age_group, sex]   # crossed: 100 in each combination
        limit: 100

A quota counts what the server is told in the clear, so it may name only public questions (``privacy: none``) of one
answer each (yes_no, choice, ordinal): a randomized answer cannot be counted, it is not known. A respondent who skips
a quota's question (or is not asked it) falls in none of its cells. A full cell closes politely: the page says so as
soon as the answers fall in it, and the server refuses a response that would pass a limit (409, field ``quota``),
counted in the same transaction as the response is stored (`storage.quotas`), so no cell ever holds more.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SpecError
from .json_text import canonical_json

#: The question types a quota can count: one public answer from a fixed list.
QUOTA_TYPES = ("yes_no", "choice", "ordinal")
MAX_QUOTAS = 50
_FIELDS = ("question", "questions", "limit", "limits")


def _count(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(f"{where}: a whole number of responses (0 or more), got {value!r}")
    return value


@dataclass(frozen=True)
class Quota:
    """One quota: its questions, the limit of every cell (None: only the cells named in ``limits`` have one) and the
    limits of cells named one by one (a cell is the tuple of its questions' answers)."""
    questions: tuple[str, ...]
    limit: int | None
    limits: tuple[tuple[tuple[str, ...], int], ...] = ()

    @property
    def key(self) -> str:
        """The quota's name in storage: its questions, as canonical JSON."""
        return canonical_json(list(self.questions))

    def cell(self, answers: dict) -> tuple | None:
        """The cell a response with these public answers falls in, or None when it leaves one of them out."""
        if any(answers.get(qid) is None for qid in self.questions):
            return None
        return tuple(answers[qid] for qid in self.questions)

    def limit_of(self, cell: tuple) -> int | None:
        return dict(self.limits).get(tuple(cell), self.limit)

    def to_dict(self) -> dict:
        spec: dict = ({"question": self.questions[0]} if len(self.questions) == 1
                      else {"questions": list(self.questions)})
        if self.limit is not None:
            spec["limit"] = self.limit
        if self.limits:
            spec["limits"] = {cell[0]: limit for cell, limit in self.limits}
        return spec


def read_quotas(raw, questions: dict) -> tuple[Quota, ...]:
    """The checked quotas of a spec (``()`` when it has none). ``questions``: the survey's, by id."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise SpecError(f"survey.quotas: a list of quotas, e.g. [{{question: region, limit: 500}}], got {raw!r}")
    if len(raw) > MAX_QUOTAS:
        raise SpecError(f"survey.quotas: at most {MAX_QUOTAS} quotas, got {len(raw)}")
    quotas, seen = [], set()
    for position, spec in enumerate(raw):
        where = f"survey.quotas[{position}]"
        if not isinstance(spec, dict):
            raise SpecError(f"{where}: a mapping with question (or questions) and limit (or limits), got {spec!r}")
        unknown = sorted(set(spec) - set(_FIELDS))
        if unknown:
            raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(_FIELDS)})")
        if ("question" in spec) == ("questions" in spec):
            raise SpecError(f"{where}: give question (one id) or questions (a list of ids), not both and not neither")
        named = [spec["question"]] if "question" in spec else spec["questions"]
        field = "question" if "question" in spec else "questions"
        if not isinstance(named, list) or not named or len(set(map(repr, named))) != len(named):
            raise SpecError(f"{where}.questions: a list of different question ids, got {named!r}")
        for qid in named:
            _check_question(qid, questions, f"{where}.{field}")
        if "limit" not in spec and "limits" not in spec:
            raise SpecError(f"{where}: give limit (every cell) or limits (a limit per answer), or both")
        limit = None if spec.get("limit") is None else _count(spec["limit"], f"{where}.limit")
        limits = ()
        if "limits" in spec:
            if len(named) > 1:
                raise SpecError(f"{where}.limits: a limit per answer is for a quota on one question; a crossed quota "
                                "gives one limit to every cell")
            limits = _read_limits(spec["limits"], questions[named[0]], f"{where}.limits")
        quota = Quota(tuple(named), limit, limits)
        if quota.key in seen:
            raise SpecError(f"{where}: a second quota on {', '.join(named)}; give each cell its limit in one quota")
        seen.add(quota.key)
        quotas.append(quota)
    return tuple(quotas)


def _check_question(qid, questions: dict, where: str):
    question = questions.get(qid) if isinstance(qid, str) else None
    if question is None:
        raise SpecError(f"{where}: {qid!r} is not a question of this survey")
    if question.is_private:
        raise SpecError(f"{where}: {qid!r} is randomized, and a randomized answer cannot be counted (it is not known); "
                        "a quota counts public questions (privacy: none)")
    if question.type not in QUOTA_TYPES:
        raise SpecError(f"{where}: {qid!r} is a {question.type} question; a quota counts a {', '.join(QUOTA_TYPES)} "
                        "question (one answer from a list)")


def _read_limits(raw, question, where: str) -> tuple:
    answers = list(question.options) if question.options is not None else ["yes", "no"]
    if not isinstance(raw, dict) or not raw:
        raise SpecError(f"{where}: a mapping of answers to limits, e.g. {{{answers[0]}: 500}}, got {raw!r}")
    for answer in raw:
        if answer not in answers:
            raise SpecError(f"{where}: {answer!r} is not an answer of {question.id!r} ({', '.join(answers)})")
    return tuple(((answer,), _count(raw[answer], f"{where}.{answer}")) for answer in answers if answer in raw)
