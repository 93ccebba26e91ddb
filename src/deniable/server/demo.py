"""The demo: the seed's tax-dodging coin flip plus one question of every other type, in two
languages and three sections with skip logic on a public question, and simulated respondents
with a known truth so the researcher side has data to look at."""

from __future__ import annotations

import secrets
from importlib import resources

from deniable.client import Survey
from deniable.storage import Store

#: The truth the simulated respondents are drawn from (the analysis should recover it).
TRUTH = {
    "dodged": {"North": 0.10, "South": 0.25, "East": 0.15, "West": 0.30},  # P(yes) by region
    "region": {"North": 0.3, "South": 0.3, "East": 0.2, "West": 0.2},
    "worked": 0.8,  # P(yes); the section on work is shown to these respondents only
    # Among respondents who worked:
    "cash": {"Salary": 0.6, "Self-employed": 0.2, "Cash in hand": 0.15, "Other": 0.05},
    "fairness": {"Strongly disagree": 0.1, "Disagree": 0.25, "Neutral": 0.3, "Agree": 0.25, "Strongly agree": 0.1},
    "undeclared": {"Tips": 0.3, "Rental income": 0.1, "Side jobs": 0.2, "Foreign accounts": 0.02},
    "hours": {0: 0.6, 5: 0.2, 10: 0.1, 20: 0.07, 40: 0.03},
}


def demo_survey() -> Survey:
    text = resources.files("deniable.server").joinpath("demo/questionnaire.yaml").read_text(encoding="utf-8")
    return Survey.from_yaml(text)


def _pick(distribution: dict, rng) -> object:
    scale = 10**6
    draw = rng.randbelow(scale)
    running = 0
    for value, probability in distribution.items():
        running += round(probability * scale)
        if draw < running:
            return value
    return value


def simulated_answers(rng=secrets) -> dict:
    """One respondent's true answers, drawn from `TRUTH`."""
    region = _pick(TRUTH["region"], rng)
    answers = {
        "region": region,
        "worked": "yes" if rng.randbelow(10**6) < TRUTH["worked"] * 10**6 else "no",
        "dodged": "yes" if rng.randbelow(10**6) < TRUTH["dodged"][region] * 10**6 else "no",
        "fairness": _pick(TRUTH["fairness"], rng),
    }
    if answers["worked"] == "yes":
        answers.update(cash=_pick(TRUTH["cash"], rng),
                       undeclared=[o for o, p in TRUTH["undeclared"].items() if rng.randbelow(10**6) < p * 10**6],
                       hours=_pick(TRUTH["hours"], rng))
    return answers


def simulate(store: Store, survey: Survey, count: int, rng=secrets) -> int:
    """Randomize ``count`` simulated respondents with the client and store their reports."""
    record = store.get_survey(survey.id)
    with store.transaction():  # one commit for the lot
        for _ in range(count):
            reports = survey.simulate(simulated_answers(rng), rng)
            store.submit(survey.id, record.hash, secrets.token_hex(16), reports)
    return count
