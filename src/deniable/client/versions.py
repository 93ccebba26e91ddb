"""Naming one stored version of a survey: by its number, or by a unique prefix of its spec hash.

Every surface shows a version as ``3 abc123def456`` (the number and the first 12 characters of the
hash); every command and endpoint that reads a version accepts either part back. Submitting is not
a read: a response names the full hash it was randomized under, never a prefix.
"""

from __future__ import annotations

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
    randomized that is now asked directly, or one whose ε grew (a weaker randomization). One line per question; empty
    when nothing is lowered. Publishing such a version needs an explicit confirmation on every surface."""
    lowered = []
    for qid, before in current.questions.items():
        after = proposed.questions.get(qid)
        if after is None or not before.is_private:
            continue
        if not after.is_private:
            lowered.append(f"{qid}: randomized ({before.mechanism.design}, ε {before.epsilon:.3g}) → asked directly")
        elif after.epsilon > before.epsilon * (1 + 1e-12):
            lowered.append(f"{qid}: ε {before.epsilon:.3g} → {after.epsilon:.3g} ({after.mechanism.design})")
    return lowered


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
