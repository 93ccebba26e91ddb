"""The respondent pages' own words (buttons, privacy notes, errors), in every language we ship.

One source of truth: the server renders its templates from here and hands the page script the
same table (``page_data.messages``), so a word is translated once. Each shipped language is a
table in ``words/<code>.json`` with every key of English (a test checks each is complete); a
survey completes or overrides them with ``page_words`` (its languages beyond the shipped ones
must give at least the privacy statements they use). Numbers in the statements follow the
table's ``decimal_mark`` and ``percent`` words, so a statement is the same figures in every
language.
"""

from __future__ import annotations

import functools
import json
import math
import string
from collections.abc import Mapping
from pathlib import Path

from .designs import DESIGNS
from .privacy import DEFAULT_PRIOR, posterior_bound

DEFAULT = "en"
#: The languages whose page words ship with deniable (``words/<code>.json``), each complete.
SHIPPED = ("en", "es", "fr", "de", "pt", "ar")
_FOLDER = Path(__file__).with_name("words")


@functools.lru_cache(maxsize=None)
def shipped(code: str) -> dict:
    """The shipped table of ``code`` (exactly as shipped: copy before changing it)."""
    if code not in SHIPPED:
        raise KeyError(code)
    return json.loads(_FOLDER.joinpath(f"{code}.json").read_text(encoding="utf-8"))


def shipped_for(language: str | None) -> str | None:
    """The shipped table that serves ``language`` (``pt-BR`` → ``pt``), or None."""
    if not language:
        return DEFAULT
    if language in SHIPPED:
        return language
    base = language.split("-")[0].lower()
    return base if base in SHIPPED else None


def messages(language: str | None, overrides: dict | None = None) -> dict:
    """The page words of ``language``: English, completed by the shipped table of the language (its base
    language for a regional code), completed by ``overrides`` (a survey's ``page_words`` for it)."""
    words = dict(shipped(DEFAULT))
    code = shipped_for(language)
    if code is not None and code != DEFAULT:
        words.update(shipped(code))
    if overrides:
        words.update(overrides)
    return words


def fallbacks(language: str | None, overrides: dict | None = None) -> list[str]:
    """The page words that ``language`` would show in English: none for a shipped language."""
    if shipped_for(language) is not None:
        return []
    return [key for key in shipped(DEFAULT) if key not in (overrides or {})]


def placeholders(template: str) -> set[str]:
    """The ``{names}`` a page word fills in; ValueError when its braces do not parse, or a placeholder is more than
    a name: a format spec (``{title:d}`` made every thank-you page a 500, ``{value:>30000000}`` each survey page
    120 MB), a conversion (``{value!r}``), or attribute or index access (``{value.__class__}``, ``{value[0]}``)."""
    names = set()
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(f"{{{shown}}}: a placeholder is a name alone, such as {{value}} (no format, conversion, "
                             "attribute or index)")
        names.add(name)
    return names


def _number(value: float, digits: int, words) -> str:
    return f"{value:.{digits}g}".replace(".", words["decimal_mark"])


def _percent(share: float, decimals: int, words) -> str:
    """A share as a percentage with ``decimals`` places (the statements' prior and posterior)."""
    return words["percent"].format(value=f"{share * 100:.{decimals}f}".replace(".", words["decimal_mark"]))


def _share(share: float, words) -> str:
    """A share as a percentage with up to three significant digits (25%, 12.5%, 33.3%)."""
    return words["percent"].format(value=_number(share * 100, 3, words))


def table(words) -> Mapping:
    """A table given as itself, or as a language code (None: English)."""
    return words if isinstance(words, Mapping) else messages(words)


class Recording(dict):
    """A table that remembers which words were read (to find the words a statement needs)."""

    def __init__(self, table):
        super().__init__(table)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def privacy_statement(epsilon: float, words=None, prior: float = DEFAULT_PRIOR, randomized: bool = False,
                      respondent: str | None = None) -> str:
    """`deniable.client.Question.privacy_statement` in the words of ``words`` (a table from `messages`, or a
    language code; None: English). ``respondent``: the design, when the respondent randomizes (crosswise,
    triangular, a natural randomizer): the statement then says the device never sees the answer and names the
    assumption the guarantee rests on. Every language fills the same figures into its template."""
    words = table(words)
    figures = {} if math.isinf(epsilon) else {
        "factor": _number(math.exp(epsilon), 3, words), "epsilon": _number(epsilon, 3, words),
        "prior": _percent(prior, 0, words), "posterior": _percent(posterior_bound(prior, epsilon), 1, words)}
    if respondent is not None:
        keys = DESIGNS[respondent].respondent_words
        assert keys is not None  # a design the respondent randomizes says how
        how, fact = (words[key] for key in keys)
        if math.isinf(epsilon):
            return words["respondent_one_sided_statement"].format(how=how, fact=fact)
        return words["respondent_statement"].format(how=how, fact=fact, **figures)
    if math.isinf(epsilon):
        return words["one_sided_statement" if randomized else "public_statement"]
    return words["private_statement"].format(**figures)


def english_statement(epsilon: float, prior: float = DEFAULT_PRIOR) -> str:
    """Plain-language privacy note for one question, in English (`deniable.client.privacy_statement`)."""
    return privacy_statement(epsilon, None, prior)


def split_ballot_statement(direct, words=None) -> str:
    """What a split ballot means for the respondent, said beside the question's own privacy statement."""
    words = table(words)
    return words["split_ballot_statement"].format(share=_share(float(direct), words))



def repeated_statement(epsilon_all: float, words=None) -> str:
    """What a repeated survey's memo means for the respondent, beside the question's statement (which gives one
    report's ε)."""
    words = table(words)
    if math.isinf(epsilon_all):
        return words["repeated_one_sided_statement"]
    return words["repeated_statement"].format(factor_all=_number(math.exp(epsilon_all), 3, words),
                                              epsilon_all=_number(epsilon_all, 3, words))


def describe_condition(tree: dict, survey, language: str | None, words=None) -> str:
    """A skip-logic tree in words a respondent reads (the no-JavaScript form uses it)."""
    words = table(language if words is None else words)
    op = tree["op"]
    if op in ("and", "or"):
        return words[op].join(describe_condition(arg, survey, language, words) for arg in tree["args"])
    if op == "not":
        return words["not"].format(condition=describe_condition(tree["arg"], survey, language, words))
    question = survey.questions[tree["question"]]
    value = tree["value"]
    if "number" in value:
        shown = value["number"]
    else:
        shown = question.option_label(value["text"], language, words)
    text = question.text_in(language)
    if op == "selected":
        return words["condition_selected"].format(question=text, value=shown)
    if op == "=":
        return words["condition_is"].format(question=text, value=shown)
    if op == "!=":
        return words["condition_is_not"].format(question=text, value=shown)
    return words["condition_compare"].format(question=text, op=words[f"op_{op}"], value=shown)
