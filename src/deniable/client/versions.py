"""Naming one stored version of a survey: by its number, or by a unique prefix of its spec hash.

Every surface shows a version as ``3 abc123def456`` (the number and the first 12 characters of the
hash); every command and endpoint that reads a version accepts either part back. Submitting is not
a read: a response names the full hash it was randomized under, never a prefix.
"""

from __future__ import annotations

import difflib

from . import skiplogic
from .errors import DeniableError

#: The shortest hash prefix accepted (shorter ones would match by accident).
MIN_PREFIX = 4


class VersionError(DeniableError, ValueError):
    """The version asked for is not one of the survey's, or a prefix names more than one."""

    def __init__(self, message: str, field: str, missing: bool = True):
        super().__init__(message, field)
        self.missing = missing


def label(number, spec_hash: str) -> str:
    """How a version is shown: ``3 abc123def456``."""
    return f"{number} {spec_hash[:12]}" if number is not None else spec_hash[:12]


def resolve_version(versions: list[dict], survey_id: str, spec_hash: str | None = None, version=None) -> dict:
    """The entry of ``versions`` (dicts with ``version`` and ``hash``) that ``spec_hash`` (the full hash
    or a unique prefix) or ``version`` (a number, or its digits) names; the newest when neither is given.
    Raises `VersionError` naming the field and the versions there are."""
    if not versions:
        raise VersionError(f"survey {survey_id!r} has no versions", "survey_id")
    known = ", ".join(label(v["version"], v["hash"]) for v in versions)
    if spec_hash is not None and version is not None:
        raise VersionError("give spec_hash or version, not both", "version", missing=False)
    if version is not None:
        if isinstance(version, str) and version.strip().isdigit():
            version = int(version)
        if isinstance(version, bool) or not isinstance(version, int):
            raise VersionError(f"version: must be a whole number (versions of {survey_id!r}: {known})", "version",
                               missing=False)
        for entry in versions:
            if entry["version"] == version:
                return entry
        raise VersionError(f"version: survey {survey_id!r} has no version {version} (versions: {known})", "version")
    if spec_hash is None:
        return max(versions, key=lambda v: v["version"])
    if not isinstance(spec_hash, str) or not spec_hash.strip():
        raise VersionError("spec_hash: must be a hash or a prefix of one", "spec_hash", missing=False)
    prefix = spec_hash.strip().lower()
    exact = [v for v in versions if v["hash"] == prefix]
    if exact:
        return exact[0]
    if len(prefix) < MIN_PREFIX:
        raise VersionError(f"spec_hash: give at least {MIN_PREFIX} characters of the hash (versions: {known})",
                           "spec_hash", missing=False)
    matches = [v for v in versions if v["hash"].startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise VersionError(f"spec_hash: {spec_hash!r} starts more than one version of {survey_id!r} "
                           f"({', '.join(label(v['version'], v['hash']) for v in matches)}); give more characters",
                           "spec_hash", missing=False)
    raise VersionError(f"spec_hash: no version of survey {survey_id!r} starts with {spec_hash!r} (versions: {known})",
                       "spec_hash")


def lowered_privacy(current, proposed) -> list[str]:
    """What a new version ``proposed`` makes less private than ``current`` (both `Survey`): a question asked
    randomized that is now asked directly, one whose ε grew (a weaker randomization), or one now asked directly of a
    share of respondents (a split ballot's direct arm), whether it keeps its id or not: a randomized question removed
    and a new one of the same type and answers and the same (or nearly the same) text added less private is the same
    question renamed. One line per question; empty when nothing is lowered. Publishing such a version needs an
    explicit confirmation on every surface."""
    removed = [q for qid, q in current.questions.items() if qid not in proposed.questions and q.is_private]
    added = [q for qid, q in proposed.questions.items() if qid not in current.questions]
    pairs = [(before.id, before, before.id, proposed.questions[before.id])
             for before in current.questions.values() if before.id in proposed.questions and before.is_private]
    for before in removed:
        renamed = next((after for after in added if _same_question(before, after)), None)
        if renamed is not None:
            added.remove(renamed)
            pairs.append((before.id, before, renamed.id, renamed))
    lowered = []
    for qid, before, new_id, after in pairs:
        named = qid if new_id == qid else f"{qid} → {new_id} (the same question under a new id)"
        if not after.is_private:
            lowered.append(f"{named}: randomized ({before.mechanism.design}, ε {before.epsilon:.3g}) → asked directly")
        elif after.epsilon > before.epsilon * (1 + 1e-12):
            lowered.append(f"{named}: ε {before.epsilon:.3g} → {after.epsilon:.3g} ({after.mechanism.design})")
        elif _direct_share(after) > _direct_share(before):
            lowered.append(f"{named}: now asked directly of {_direct_share(after):.0%} of respondents (a split "
                           f"ballot's direct arm; {_direct_share(before):.0%} before)")
    return lowered


def _same_question(before, after) -> bool:
    """Whether ``after`` (a question a new version adds) asks what ``before`` (one it removes) asked: the same type and
    answers, and a text the same or nearly (in some language both have; case and spacing aside)."""
    if before.type != after.type or list(before.mechanism.answers) != list(after.mechanism.answers):
        return False

    def texts(question) -> dict:
        return question.texts if isinstance(question.texts, dict) else {None: question.texts}

    def plain(text: str) -> str:
        return " ".join(text.casefold().split())

    first, second = texts(before), texts(after)
    pairs = [(first[code], second[code]) for code in first if code in second] or [(before.text_in(), after.text_in())]
    return any(difflib.SequenceMatcher(None, plain(a), plain(b)).ratio() >= 0.8 for a, b in pairs)


def _direct_share(question) -> float:
    """The share of respondents a question asks directly: a split ballot's direct arm (0 without one)."""
    return float(question.split_ballot.direct) if question.split_ballot is not None else 0.0


def channel_difference(first, second, question_id: str) -> str | None:
    """How ``question_id`` is randomized or asked differently in two versions (`Survey`s; None: the same), in words."""
    a, b = first.questions[question_id], second.questions[question_id]
    m, n = a.mechanism, b.mechanism
    if a.type != b.type:
        return f"the question type changed from {a.type} to {b.type}"
    if m.design != n.design:
        return f"the design changed from {m.design} to {n.design}"
    if m.answers != n.answers:
        return f"the answers changed from {_listed(m.answers)} to {_listed(n.answers)}"
    if m.reports != n.reports:
        return f"the reports changed from {_listed(m.reports)} to {_listed(n.reports)}"
    if m.exp_epsilon != n.exp_epsilon:
        return f"ε changed from {m.epsilon:.4g} to {n.epsilon:.4g}"
    if not m.same_channel(n):
        return f"the randomization probabilities changed ({_params(m)} to {_params(n)})"
    before, after = first.condition(question_id), second.condition(question_id)
    if before != after:
        def whom(condition):
            return "everyone" if condition is None else f"respondents with {skiplogic.to_text(condition)}"

        return f"it was asked of {whom(before)}, then of {whom(after)}"
    return None


def _listed(values) -> str:
    shown = ", ".join(map(str, values[:6])) + (", …" if len(values) > 6 else "")
    return f"[{shown}]"


def _params(mechanism) -> str:
    return ", ".join(f"{k}: {v}" for k, v in mechanism.params.items() if k != "design") or "defaults"


def changed_randomization(current, proposed, answered) -> list[str]:
    """The questions of ``answered`` (ids with reports already stored) that ``proposed`` asks but randomizes or asks
    differently from ``current`` (`channel_difference`), one line each: their reports so far and those to come are
    estimated apart (a pooled figure cannot combine them). Publishing such a version needs a confirmation."""
    return [f"{qid}: {difference}" for qid in current.questions
            if qid in answered and qid in proposed.questions
            and (difference := channel_difference(current, proposed, qid)) is not None]
