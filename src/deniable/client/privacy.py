"""What ε means for a person: the most an observer's belief can move after seeing a report, and a survey's summary of it."""

from __future__ import annotations

import math

#: The prior a privacy statement assumes unless told otherwise: an observer 2% sure of a respondent's answer beforehand
#: (someone who knows the base rate of a rare behaviour, and nothing about the person).
DEFAULT_PRIOR = 0.02
#: Below this ε a randomized question is refused: its reports say next to nothing about the answer
#: (e^ε < 1.01), and no survey could afford the respondents an estimate would need.
MIN_EPSILON = 0.01
#: Above this ε a question is flagged as giving little protection: someone 2% sure of an answer
#: beforehand can be more than 50% sure after one report (e^ε > 49). The coin-flip design has ln 3.
WEAK_EPSILON = math.log(49)


def posterior_bound(prior: float, epsilon: float) -> float:
    """The largest posterior P(answer | report) an observer can reach from ``prior``.

    For any report r, P(r | a) ≤ e^ε · P(r | a'), so by Bayes' rule the posterior odds are
    at most e^ε times the prior odds: q·e^ε / (q·e^ε + 1 − q). At ε = ln 3 a prior of 0.02
    becomes about 0.058 (the tax-dodging example of the coin-flip design).
    """
    if not 0 <= prior <= 1:
        raise ValueError(f"prior must be between 0 and 1, got {prior!r}")
    if math.isinf(epsilon):
        return 1.0 if prior > 0 else 0.0
    scaled = prior * math.exp(epsilon)
    return scaled / (scaled + 1 - prior)


def survey_summary(survey, prior: float = DEFAULT_PRIOR) -> str:
    """The privacy summary of a `Survey` (`Survey.privacy_summary`, `deniable survey check` and `show`)."""
    lines = [f"Survey {survey.id!r}: {survey.title}", f"version {survey.hash[:12]}", ""]
    if survey.repeated is not None:
        lines[-1:-1] = [_repeated_summary(survey.repeated)]
    for q in survey.questions.values():
        if q.is_private:
            who = "   randomized by the respondent (the device never sees the answer)" \
                if q.mechanism.respondent_randomizes else ""
            if q.split_ballot is not None:
                who += f"   split ballot: {float(q.split_ballot.direct):.3g} asked directly (announced; no privacy)"
            if survey.repeated is not None:
                who = f"   all waves ε∞ = {q.epsilon_all_waves:.4f}" + who
            lines.append(f"  {q.id:<20} {q.mechanism.design:<20} ε = {q.epsilon:.4f}   "
                         f"prior {prior:.0%} → at most {posterior_bound(prior, q.epsilon):.1%}{who}")
        else:
            lines.append(f"  {q.id:<20} {'none (PUBLIC)':<20} ε = ∞        sent as is")
    lines += ["", f"Total ε per respondent (private questions): {survey.epsilon:.4f}"
              f"  (e^ε = {math.exp(survey.epsilon):.4g})" + (", over every wave" if survey.repeated else "")]
    if survey.repeated is not None:
        lines.append(f"Total ε of one wave's reports: {survey.epsilon_per_wave:.4f}")
    if survey.max_epsilon is not None:
        lines.append(f"Budget (max_epsilon): {survey.budget_use()}")
    if survey.public_questions:
        names = ", ".join(q.id for q in survey.public_questions)
        lines.append(f"WARNING: {len(survey.public_questions)} public question(s) are NOT randomized and "
                     f"carry no privacy guarantee: {names}")
    return "\n".join(lines)


def _repeated_summary(repeated) -> str:
    instant = "1 report in 10 replaced by a uniform one" if repeated.instant_epsilon is None else \
        f"instant_epsilon {float(repeated.instant_epsilon):.4g}"
    return ("REPEATED (a panel): each device keeps a memo; an unchanged answer gives the same permanent report in every "
            f"wave, re-randomized each wave ({instant}). ε below is one wave's report (ε₁); ε∞ covers every wave "
            "together, for an unchanged answer (a changed answer draws a new permanent report: up to ε∞ again).")
