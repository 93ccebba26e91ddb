"""Two-stage stratified cluster samples of a finite population, for the coverage of design-based intervals
(tests/analysis/test_sample_design.py; ``python scripts/design_coverage.py`` runs more of them for the validation table).

The population: 4 strata × 60 clusters × 30 people, with answers that vary between strata and between clusters (a
cluster effect on the log-odds, so people of one cluster answer alike). A sample draws 5, 14, 7 and 16 clusters from
the strata and 10 people from each (weights from 11 to 36), and randomizes each answer through the question's own
channel. The truth is the population's share of each answer (or latent class)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from deniable.analysis import channels
from deniable.client import Survey
from deniable.client.compliance import GroupedMechanism
from deniable.client.reports import group_column

STRATA, CLUSTERS, PEOPLE = 4, 60, 30
SAMPLED_CLUSTERS, SAMPLED_PEOPLE = (5, 14, 7, 16), 10

QUESTIONS = {
    "yes_no": {"id": "q", "text": "?", "type": "yes_no",
               "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}},
    "k_ary": {"id": "q", "text": "?", "type": "choice", "options": ["a", "b", "c"],
              "privacy": {"design": "k_rr", "epsilon": "ln 4"}},
    "ordinal": {"id": "q", "text": "?", "type": "ordinal", "options": ["1", "2", "3", "4"],
                "privacy": {"design": "ordinal", "epsilon": 2}},
    "number": {"id": "q", "text": "?", "type": "number", "min": 0, "max": 6, "step": 1,
               "privacy": {"design": "laplace", "epsilon": 2}},
    "cheating_detection": {"id": "q", "text": "?", "type": "yes_no",
                           "privacy": {"design": "cheating_detection",
                                       "groups": {"a": {"yes": "1/3", "randomizer": "Birthday in January to April: yes."},
                                                  "b": {"yes": "2/3", "randomizer": "Birthday in January to August: yes."}}}},
}


def survey_of(kind: str) -> Survey:
    return Survey.from_dict({"id": "s", "title": "t", "questions": [QUESTIONS[kind]]})


#: The SD of the cluster effect on the log-odds: people of one cluster answer alike (`intraclass_correlation`).
CLUSTER_SD = 1.4


def population(kind: str, seed: int = 1, cluster_sd: float = CLUSTER_SD) -> np.ndarray:
    """Each person's answer (or latent class) index, strata × clusters × people."""
    rng = np.random.default_rng(seed)
    mechanism = survey_of(kind).questions["q"].mechanism
    size = len(mechanism.latent_classes) if isinstance(mechanism, GroupedMechanism) else len(mechanism.answers)
    stratum_effect = rng.normal(0, 1.0, (STRATA, 1, size))
    cluster_effect = rng.normal(0, cluster_sd, (STRATA, CLUSTERS, size))
    logits = stratum_effect + cluster_effect
    if kind == "cheating_detection":
        logits[..., 2] -= 1.5  # cheaters: about one in eight
    shares = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
    draws = rng.random((STRATA, CLUSTERS, PEOPLE, 1))
    return (draws > np.cumsum(shares, axis=2)[:, :, None, :]).sum(axis=3)


def intraclass_correlation(values: np.ndarray) -> float:
    """The population's intraclass correlation of a value per person (strata × clusters × people) within strata: the
    between-cluster share of its variance (ANOVA's, with clusters of equal size)."""
    centred = values - values.mean(axis=(1, 2), keepdims=True)  # within strata
    cluster_means = centred.mean(axis=2)
    between = cluster_means.var()
    within = (centred - cluster_means[..., None]).var() * PEOPLE / (PEOPLE - 1)
    between_corrected = between - within / PEOPLE
    return float(max(between_corrected, 0.0) / (max(between_corrected, 0.0) + within))


def truth(answers: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(answers.ravel(), minlength=size) / answers.size


def sample(kind: str, answers: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """One sample, laid out as a CSV export (the question's reports, its group for cheating detection) with the
    columns weight, stratum and cluster."""
    survey = survey_of(kind)
    mechanism = survey.questions["q"].mechanism
    q = channels.channel_matrix(mechanism)
    rows = []
    for h, taken in enumerate(SAMPLED_CLUSTERS):
        for c in rng.choice(CLUSTERS, taken, replace=False):
            for person in rng.choice(PEOPLE, SAMPLED_PEOPLE, replace=False):
                rows.append((h, c, answers[h, c, person], CLUSTERS / taken * PEOPLE / SAMPLED_PEOPLE))
    table = pd.DataFrame(rows, columns=["stratum", "cluster", "answer", "weight"])
    cumulative = np.cumsum(q, axis=0)[:, table["answer"].to_numpy()]
    positions = (rng.random(len(table)) > cumulative).sum(axis=0)
    reports = [mechanism.reports[p] for p in positions]
    frame = pd.DataFrame({"stratum": table["stratum"].astype(str), "cluster": table["cluster"].astype(str),
                          "weight": table["weight"]})
    if isinstance(mechanism, GroupedMechanism):
        frame["q"] = [r["report"] for r in reports]
        frame[group_column("q")] = [r["group"] for r in reports]
    else:
        frame["q"] = reports
    return frame
