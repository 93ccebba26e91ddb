"""The estimates of long grids (more answers than the batched solver takes) stay the figures they were when the faster
paths came in: every share, standard error and interval end, and the mean's, to 1e-9 (a 0..1000 grid's to the
precision its certificate fixes them: `_TOLERANCE`).

The figures in tests/fixtures/grid_figures.json were written with the lock's numpy (uv.lock: its Generator's binomial
stream draws the bootstrap's surveys, and numpy does not promise that stream across versions); rewrite them only for a
change meant to move them, or a move of the lock's numpy:

    python -m tests.analysis.test_grid_figures
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deniable.analysis import channels
from deniable.analysis.from_counts import estimate_counts
from deniable.client import Survey

FIGURES = Path(__file__).resolve().parents[1] / "fixtures" / "grid_figures.json"

#: name: (question spec, n, truth). Chosen so that the vertex test both rejects (a wide grid at large n) and accepts
#: (a point mass at small n), on a number grid and on an ordinal scale longer than the batched solver's.
CASES = {
    "number 0..100, n = 10^4, lumpy": (
        {"type": "number", "min": 0, "max": 100, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
        10_000, "dirichlet"),
    "number 0..30, n = 200, a point mass": (
        {"type": "number", "min": 0, "max": 30, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
        200, "mass at 3"),
    "ordinal of 31, n = 300, a U-shape": (
        {"type": "ordinal", "options": [f"o{i}" for i in range(31)], "privacy": {"design": "ordinal", "epsilon": 1}},
        300, "u-shape"),
    "number 0..1000, n = 10^4, lumpy": (
        {"type": "number", "min": 0, "max": 1000, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
        10_000, "dirichlet"),
}


def _mechanism(spec: dict):
    survey = Survey.from_dict({"id": "grid", "title": "grid", "questions": [{"id": "q", "text": "?", **spec}]})
    return survey.questions["q"].mechanism


def _truth(kind: str, k: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "dirichlet":
        return rng.dirichlet(np.full(k, 0.5))
    if kind == "mass at 3":
        return np.eye(k)[3]
    shape = np.abs(np.arange(k) - (k - 1) / 2) ** 2 + 1.0
    return shape / shape.sum()


def figures(name: str) -> dict:
    spec, n, truth = CASES[name]
    mechanism = _mechanism(spec)
    q = channels.channel_matrix(mechanism)
    rng = np.random.default_rng(len(name))
    counts = rng.multinomial(n, q @ _truth(truth, q.shape[1], rng))
    scores = np.arange(q.shape[1], dtype=float) if spec["type"] == "ordinal" else None
    # Every value's row: a wide number publishes bins unless asked (the figures pinned are the per-value ones).
    result = estimate_counts(mechanism, counts, 0.95, None, "q", scores=scores, values=spec["type"] == "number")
    table = result.table
    return {"counts": counts.tolist(),
            **{column: table[column].tolist() for column in ("estimate", "se", "ci_low", "ci_high")},
            "mean": [result.mean.estimate, result.mean.se, *result.mean.ci]}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_long_grids_keep_their_figures(name):
    expected = json.loads(FIGURES.read_text())[name]
    found = figures(name)
    assert found["counts"] == expected["counts"]  # the same survey, or the comparison means nothing
    for column in ("estimate", "se", "ci_low", "ci_high", "mean"):
        np.testing.assert_allclose(found[column], expected[column], rtol=1e-9 if column == "mean" else 0,
                                   atol=_TOLERANCE.get(name, 1e-9), err_msg=f"{name}: {column}")


#: The 0..1000 grid is applied through its structure (`channels.FoldedGeometric`), whose products differ from the
#: matrix's in the last bits; the maximiser stops at a relative KKT residual of 1e-11, which on the grid's nearly flat
#: directions (two neighbouring answers splitting a share) fixes a share only to about 1e-9, an SE or interval end
#: (a function of 200 such fits) to about 1e-8. Measured: 1.2e-9, 3.8e-9 and 7.5e-9 at most; the mean's figures to
#: 1e-11 relative.
_TOLERANCE = {"number 0..1000, n = 10^4, lumpy": 2e-8}


if __name__ == "__main__":
    FIGURES.write_text(json.dumps({name: figures(name) for name in CASES}, indent=1) + "\n")
    print(f"wrote {FIGURES}")


def test_a_ten_thousand_point_number_is_estimated_through_its_structure():
    """0..10,000 at ε = 1, n = 10⁴, whose channel written out would
    be 30,001 × 10,001 (2.4 GB): the whole estimate reads it as its structure (`channels.WRITTEN_OUT_POINTS`): the
    certified fit, the bootstrap's standard errors, Wald rows, the unbiased column through the structure's own left
    inverse, the mean's calibrated interval (which covers the truth's mean and agrees with the bootstrap's spread), the
    fit test (which does not flag honest reports) and the binned ranges with their intervals."""
    spec = {"type": "number", "min": 0, "max": 10_000, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}}
    mechanism = Survey.from_dict({"id": "s", "title": "s", "questions": [{"id": "q", "text": "?", **spec}]}
                                 ).questions["q"].mechanism
    q = channels.channel_matrix(mechanism)
    assert isinstance(q, channels.FoldedGeometric)
    rng = np.random.default_rng(1)
    truth = rng.dirichlet(np.full(10_001, 0.5))
    result = estimate_counts(mechanism, rng.multinomial(10_000, q.matvec(truth)), 0.95, None, "q")
    grid = np.arange(10_001, dtype=float)
    mean = result.mean
    assert result.converged and not result.fit.flagged and len(result.table) == 10  # bins of 1,000
    assert mean.ci.low < mean.estimate < mean.ci.high and mean.ci.low < grid @ truth < mean.ci.high
    assert 0.8 < (mean.ci.high - mean.ci.low) / (2 * 1.96 * mean.se) < 1.25
    assert abs(mean.unbiased - grid @ truth) < 3 * mean.unbiased_se
    assert (result.table["ci_low"] <= result.table["estimate"]).all()
    assert (result.table["estimate"] <= result.table["ci_high"]).all()
    bin_truths = [truth[members].sum() for members in result.bin_members.values()]
    assert ((result.table["ci_low"] <= bin_truths) & (np.array(bin_truths) <= result.table["ci_high"])).all()
    quartiles = np.searchsorted(np.cumsum(truth), [0.25, 0.5, 0.75])
    quantiles = result.quantiles
    assert ((quantiles["ci_low"] <= quartiles) & (quartiles <= quantiles["ci_high"])).all()
    assert ((quantiles["ci_low"] <= quantiles["estimate"]) & (quantiles["estimate"] <= quantiles["ci_high"])).all()
    rows = result.value_rows([0, 5_000, 10_000])  # per-value rows, only those read
    assert list(rows.index) == [0, 5_000, 10_000] and (rows["ci_low"] <= rows["estimate"]).all()
    # The dashboard leads with ranges of values on a grid this wide: each range's interval maximises over the faces
    # "inside it" and "outside it" through the structure, and covers the truth's share of the range.
    binned = result.binned()
    truths = [truth[members].sum() for members in np.array_split(np.arange(10_001), len(binned))]
    assert len(binned) == 5 and ((binned["ci_low"] <= binned["estimate"]) & (binned["estimate"] <= binned["ci_high"])).all()
    assert ((binned["ci_low"] <= truths) & (np.array(truths) <= binned["ci_high"])).all()
