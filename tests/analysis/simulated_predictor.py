"""Simulated surveys with a randomized answer as a predictor (tests/analysis/test_predictor.py;
``python scripts/predictor_coverage.py`` runs more of them for the validation table): ages, a true yes that grows
likelier with age, trust (normal) and a vote (logistic) that depend on it, the yes reported through forced
response; optionally clusters whose respondents share an effect on trust, and weights of 1 or 2."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

from deniable.analysis import load
from deniable.client import Survey

SPEC = {"id": "p", "title": "A randomized answer as a predictor", "questions": [
    {"id": "dodged", "type": "yes_no", "text": "Dodged taxes?",
     "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}},
    {"id": "age", "type": "number", "text": "Age", "privacy": "none", "min": 18, "max": 90},
    {"id": "trust", "type": "number", "text": "Trust", "privacy": "none", "min": -50, "max": 150, "step": 0.5},
    {"id": "voted", "type": "yes_no", "text": "Voted?", "privacy": "none"},
    {"id": "psu", "type": "number", "text": "PSU", "privacy": "none", "min": 0, "max": 1000},
    {"id": "w", "type": "number", "text": "Weight", "privacy": "none", "min": 1, "max": 10},
    {"id": "cheated", "type": "yes_no", "text": "Cheated?",
     "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]}
SURVEY = Survey.from_dict(SPEC)
#: P(report yes | yes), P(report yes | no) of forced response (truth 1/2, yes 1/4, no 1/4)
P, Q = 0.75, 0.25
TRUE = {"linear": (40.0, -6.0, 0.2), "logistic": (-0.5, -1.0, 0.02)}


def survey(rng, n=600, clusters=0):
    """Ages, a true yes that grows likelier with age, trust (normal) and a vote (logistic) that depend on it; the
    yes is reported through forced response. ``clusters``: that many PSUs sharing a random effect on trust."""
    age = rng.integers(18, 91, n)
    truth = rng.random(n) < expit(-1 + 0.03 * (age - 50))
    psu = rng.integers(0, clusters, n) if clusters else np.arange(n)
    effect = rng.normal(0, 4, clusters)[psu] if clusters else 0
    b0, b1, b2 = TRUE["linear"]
    trust = np.round(2 * (b0 + b1 * truth + b2 * age + effect + rng.normal(0, 10, n))) / 2
    c0, c1, c2 = TRUE["logistic"]
    voted = rng.random(n) < expit(c0 + c1 * truth + c2 * (age - 50))
    report = np.where(rng.random(n) < np.where(truth, P, Q), "yes", "no")
    other = np.where(rng.random(n) < 0.5, "yes", "no")
    return pd.DataFrame({"dodged": report, "age": age, "trust": trust, "voted": np.where(voted, "yes", "no"),
                         "psu": psu, "w": 1 + (age > 60), "cheated": other, "truth": truth})


def loaded(frame):
    return load(frame.drop(columns=["truth"]), spec=SURVEY)


