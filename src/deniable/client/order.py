"""Randomized order: the questions of a section, the sections of a survey, the options of a question, shuffled on the
respondent's device (ODK's ``randomize``), to spread order effects over the sample.

    sections:
      - {id: intro, title: About you, questions: [...]}        # stays first
      - {id: work, title: Work, randomize: true, questions: [...]}   # its questions in a random order
      - {id: money, title: Money, questions: [...]}
    randomize_sections: [work, money]     # these two change places at random (true: every section)
    ...
      - {id: paper, type: choice, options: [...], randomize: true}   # its options in a random order

Only the options of a choice or multi_select question are shuffled: an ordinal scale's order is its meaning, and
yes/no keeps its two answers. The order is drawn with the client's CSPRNG (a source of its own, so it is independent
of every randomization's coins), is not sent and is not stored: a response is the same whatever order it was asked in.
Because a question may then come before one it would otherwise follow, skip logic may read only questions that are
asked before it in every order (`asked_before`). The JS twin (``src/order.js``) draws the same order from the same
random words (tests/vectors/order.json)."""

from __future__ import annotations

import warnings
from typing import Any

from .errors import DeniableDeprecationWarning, SpecError
from .randomness import default_source

#: The question types whose options can be shuffled.
SHUFFLED_OPTION_TYPES = ("choice", "multi_select")


def read_flag(value, where: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"{where}: true or false, got {value!r}")
    return value


def read_option_flag(value, question_type: str, where: str) -> bool:
    shuffled = read_flag(value, where)
    if shuffled and question_type not in SHUFFLED_OPTION_TYPES:
        reason = {"ordinal": "an ordinal scale's order is its meaning",
                  "yes_no": "yes and no keep their places"}.get(question_type, "it has no options to shuffle")
        raise SpecError(f"{where}: only a choice or multi_select question's options are shuffled; {reason}")
    return shuffled


def read_shuffled_sections(value, section_ids: list) -> tuple[str, ...]:
    """``randomize_sections``: true (every section) or a list of section ids, as the ids in the survey's order."""
    where = "survey.randomize_sections"
    if value is None or value is False:
        return ()
    if section_ids == [None]:
        raise SpecError(f"{where}: the survey has no sections to shuffle; put its questions in sections, or give a "
                        "section randomize: true to shuffle its questions")
    if value is True:
        named = list(section_ids)
    elif isinstance(value, list) and all(isinstance(s, str) for s in value):
        unknown = [s for s in value if s not in section_ids]
        if unknown:
            raise SpecError(f"{where}: {unknown[0]!r} is not a section of this survey ({', '.join(section_ids)})")
        if len(set(value)) != len(value):
            raise SpecError(f"{where}: a section named twice")
        named = [s for s in section_ids if s in value]
    else:
        raise SpecError(f"{where}: true (every section) or a list of section ids, got {value!r}")
    if len(named) < 2:
        raise SpecError(f"{where}: at least two sections to shuffle, got {len(named)}")
    return tuple(named)


def asked_before(survey) -> list[tuple[Any, set]]:  # each a questions.Section (questions imports this module)
    """For each section in order, with the section itself: the question ids asked before its items in every order
    (a shuffled section's questions count only after the last shuffled section; a randomized section's own questions
    only after it). Its items, in turn, see those of their section asked before them unless it is randomized."""
    shuffled = set(survey.shuffled_sections)
    last_shuffled = max((i for i, s in enumerate(survey.sections) if s.id in shuffled), default=-1)
    fixed: set[str] = set()
    pending: set[str] = set()
    found = []
    for position, section in enumerate(survey.sections):
        found.append((section, set(fixed)))
        asked = {item.id for item in section.items if item.id in survey.questions}
        (pending if section.id in shuffled else fixed).update(asked)
        if position == last_shuffled:
            fixed |= pending
    return found


def _shuffle(values: list, source) -> list:
    """Fisher–Yates with exact uniform draws: the same words give the same order in both twins."""
    values = list(values)
    for i in range(len(values) - 1, 0, -1):
        j = source.randbelow(i + 1)
        values[i], values[j] = values[j], values[i]
    return values


def draw_order(survey, rng=None, *, source=None) -> dict:
    """The order one respondent is asked in: ``sections`` (every section id, in the order shown), ``items`` (per
    randomized section, its item ids in order) and ``options`` (per shuffled question, its option values in order).
    Drawn in that order, sections then each randomized section then each shuffled question, in spec order.

    ``rng``: a randomness source (``randbelow``), as every ``randomize`` takes; the operating system's by default.
    ``source=`` is its former name, still taken with a DeprecationWarning."""
    if source is not None:
        warnings.warn("draw_order(source=...) is now draw_order(rng=...), as every randomize() names it",
                      DeniableDeprecationWarning, stacklevel=2)
        rng = source if rng is None else rng
    source = rng or default_source()
    ids = [section.id for section in survey.sections]
    places = [i for i, section_id in enumerate(ids) if section_id in survey.shuffled_sections]
    for place, section_id in zip(places, _shuffle([ids[i] for i in places], source)):
        ids[place] = section_id
    items = {section.id: _shuffle([item.id for item in section.items], source)
             for section in survey.sections if section.randomize}
    options = {question.id: _shuffle(question.options, source)
               for question in survey.questions.values() if question.randomize}
    return {"sections": ids, "items": items, "options": options}
