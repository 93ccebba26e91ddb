"""Exact coverage of the binary-design intervals, and simulated bias/variance/coverage of the rest.

``python scripts/validation.py`` regenerates the tables in docs/validation.md (``--only NAME`` one section); the
test suite checks the same figures against their tolerances, importing the studies from here. A study of the
estimators, not part of them: it lives with the tests, outside the analysis package, which never imports it.
"""

from __future__ import annotations

import functools
import math
import sys
import zlib

import numpy as np
from scipy import stats

from deniable.analysis import channels, likelihood
from deniable.analysis import estimators as est
from deniable.client import Survey

GRID_N = (50, 200, 1000, 10000)
GRID_PI = (0.0, 0.02, 0.1, 0.5)
GRID_EPSILON = (("0.5", 0.5), ("ln 3", "ln 3"), ("2", 2))


def binary_question(epsilon):
    spec = {"id": "v", "title": "v", "questions": [
        {"id": "q", "type": "yes_no", "text": "?", "privacy": {"design": "k_rr", "epsilon": epsilon}}]}
    return Survey.from_dict(spec).questions["q"]


@functools.lru_cache(maxsize=4096)
def exact_coverage(channel: channels.BinaryChannel, n: int, pi: float, level: float, method: str) -> float:
    """P(π ∈ interval) summed exactly over the binomial distribution of "yes" reports. Remembered: a grid
    asks the same cell again (every option of a uniform multi-select question has the same share)."""
    rate = channel.rate(pi)
    distribution = stats.binom(n, rate)
    low, high = (int(x) for x in distribution.ppf([1e-12, 1 - 1e-12]))
    ks = np.arange(max(low - 1, 0), min(high + 1, n) + 1)
    if method == "clopper-pearson":  # the default: every count's interval in one vectorised call
        from deniable.analysis.from_counts import _clopper_pearson_shares

        lows, highs = _clopper_pearson_shares(channel, ks, n, level)
    else:
        lows, highs = np.array([tuple(est.binary_interval(channel, int(k), n, level, method)[0]) for k in ks]).T
    inside = (lows - 1e-12 <= pi) & (pi <= highs + 1e-12)
    return float(distribution.pmf(ks[inside]).sum())


def mean_width(channel, n, pi, level, method) -> float:
    rate = channel.rate(pi)
    distribution = stats.binom(n, rate)
    low, high = (int(x) for x in distribution.ppf([1e-9, 1 - 1e-9]))
    ks = range(max(low, 0), min(high, n) + 1)
    weights = distribution.pmf(list(ks))
    intervals = [est.binary_interval(channel, k, n, level, method)[0] for k in ks]
    widths = [interval.high - interval.low for interval in intervals]
    return float(np.dot(weights, widths) / weights.sum())


def coverage_table(methods=est.BINARY_METHODS, level=0.95):
    rows = []
    for label, epsilon in GRID_EPSILON:
        channel = channels.binary_channel(binary_question(epsilon).mechanism)
        for n in GRID_N:
            for pi in GRID_PI:
                row = {"epsilon": label, "n": n, "pi": pi}
                for method in methods:
                    row[method] = exact_coverage(channel, n, pi, level, method)
                rows.append(row)
    return rows


GRID_K = (2, 4, 10)
#: The two-answer interval methods compared: the cells of a method below this are bold.
COVERAGE_FLOOR = 0.94
#: The default 95% interval of every answer, in every cell of the grid, every design: coverage below is bold.
COVERAGE_TARGET = 0.95


def truths(k: int) -> dict:
    """The true distributions of the coverage grid: uniform (every share 1/k), and skewed with a share of 0
    and a share of 1/k (for k = 2: one share 0, the other 1)."""
    if k == 2:
        return {"uniform": np.array([0.5, 0.5]), "skewed": np.array([0.0, 1.0])}
    rest = 0.5 ** np.arange(k - 2)
    return {"uniform": np.full(k, 1 / k),
            "skewed": np.concatenate([[0.0, 1 / k], rest / rest.sum() * (1 - 1 / k)])}


def grid_question(design: str, k: int, epsilon):
    """The question of one grid cell: k answers (k grid points 0..k−1 for numbers, k options for unary)."""
    options = [f"o{i}" for i in range(k)]
    spec = {"k_rr": {"type": "choice", "options": options, "privacy": {"design": "k_rr", "epsilon": epsilon}},
            "ordinal": {"type": "ordinal", "options": options, "privacy": {"design": "ordinal", "epsilon": epsilon}},
            "laplace": {"type": "number", "min": 0, "max": k - 1, "step": 1,
                        "privacy": {"design": "laplace", "epsilon": epsilon}},
            "unary": {"type": "multi_select", "options": options, "privacy": {"design": "unary", "epsilon": epsilon}},
            "unary optimized": {"type": "multi_select", "options": options,
                                "privacy": {"design": "unary", "epsilon": epsilon, "variant": "optimized"}}}[design]
    return _question(spec)


def unary_coverage(design: str, k: int, epsilon, n: int, shares, level: float = 0.95) -> dict:
    """Exact coverage of a multi-select question's default intervals: each option's count of reported
    selections is binomial, so coverage is a binomial sum; with options selected independently the
    simultaneous coverage is the product of the options' coverages at the Bonferroni level."""
    channel = channels.binary_channel(grid_question(design, k, epsilon).mechanism)
    each = [exact_coverage(channel, n, float(share), level, est.DEFAULT_BINARY_METHOD) for share in shares]
    bonferroni = est.per_answer_level(level, k, True)
    together = math.prod(exact_coverage(channel, n, float(share), bonferroni, est.DEFAULT_BINARY_METHOD)
                         for share in shares)
    return {"per-answer (min)": min(each), "worst answer": int(np.argmin(each)), "simultaneous": together}


def marginal_coverage(channel: channels.BinaryChannel, n: int, truth, level: float = 0.95) -> dict:
    """k-ary randomized response: each answer's report count is binomial, so the coverage of its Clopper–Pearson
    interval is a binomial sum (a lower bound for `estimate`'s, which is widened when needed to reach the
    estimate); the simultaneous intervals cover at least 1 − Σ_j (1 − coverage_j) at the Bonferroni level."""
    each = [exact_coverage(channel, n, float(share), level, est.DEFAULT_BINARY_METHOD) for share in truth]
    bonferroni = est.per_answer_level(level, len(truth), True)
    misses = sum(1 - exact_coverage(channel, n, float(share), bonferroni, est.DEFAULT_BINARY_METHOD) for share in truth)
    return {"per-answer (min)": min(each), "worst answer": int(np.argmin(each)), "simultaneous": 1 - misses,
            "reps": "exact (simultaneous: lower bound)"}


def simulated_coverage(design: str, k: int, epsilon, n: int, truth, reps: int, seed: int, level: float = 0.95,
                       uncalibrated: bool = False, simultaneous: bool = True) -> dict:
    """Coverage of the default intervals over ``reps`` simulated surveys, for the designs estimated on the simplex
    (k_rr, ordinal, numeric grids), each interval computed as `estimate` computes it (its cut calibrated at the
    estimate where a face is near, `analysis.calibration`); the standard errors are `se_cell`'s.

    ``uncalibrated``: also the coverage of χ²₁'s cut on the same surveys, with no calibration (the statistic at the
    truth against the cut: one constrained maximisation per answer, `likelihood.profile_loglikelihood`)."""
    from deniable.analysis.from_counts import _grid

    mechanism = grid_question(design, k, epsilon).mechanism
    q = channels.channel_matrix(mechanism)
    rates = q @ truth
    rng = np.random.default_rng(seed)
    chi2_cut = likelihood.likelihood_cut(level)
    covered, together, mean_covered, plain = np.zeros(k), 0, 0, np.zeros(k)
    grid = np.array(mechanism.answers, dtype=float) if design == "laplace" else None
    seen: dict = {}
    for counts in rng.multinomial(n, rates / rates.sum(), size=reps):
        signature = counts.tobytes()
        if signature not in seen:
            one = _grid(mechanism, counts, level, None, "q", False)
            table = one.table
            inside = ((table["ci_low"] - 1e-9 <= truth) & (truth <= table["ci_high"] + 1e-9)).to_numpy()
            jointly = None
            if simultaneous:
                joint = _grid(mechanism, counts, level, None, "q", True).table
                jointly = bool(((joint["ci_low"] - 1e-9 <= truth) & (truth <= joint["ci_high"] + 1e-9)).all())
            inside_mean = None if one.mean is None else one.mean.ci.low - 1e-9 <= grid @ truth <= one.mean.ci.high + 1e-9
            drops = None
            if uncalibrated:
                pi = table["estimate"].to_numpy()
                peak = likelihood.loglikelihood(q, counts, pi)
                drops = np.array([0.0 if abs(pi[j] - truth[j]) <= 1e-12 else
                                  peak - likelihood.profile_loglikelihood(q, counts, j, float(truth[j]))
                                  for j in range(k)])
            seen[signature] = (inside, jointly, inside_mean, drops)
        inside, jointly, inside_mean, drops = seen[signature]
        covered += inside
        together += bool(jointly)
        mean_covered += bool(inside_mean)
        if drops is not None:
            plain += drops <= chi2_cut + 1e-9
    row = {"per-answer (min)": float(covered.min() / reps), "worst answer": int(np.argmin(covered)),
           "simultaneous": together / reps if simultaneous else math.nan}
    if uncalibrated:
        row["χ²₁ per-answer (min)"] = float(plain.min() / reps)
    if design == "laplace":
        row["mean"] = mean_covered / reps
    return row


COVERAGE_DESIGNS = ("k_rr", "ordinal", "laplace", "unary", "unary optimized")


def coverage_grid(designs=COVERAGE_DESIGNS, reps: int = 1000, level: float = 0.95, cells=None, processes: int = 1):
    """Coverage of every design on the grid n × ε × k × truth; ``cells`` restricts it (tests)."""
    jobs = []
    for design in designs:
        for label, epsilon in GRID_EPSILON:
            for k in GRID_K:
                for truth_name, truth in truths(k).items():
                    for n in GRID_N:
                        cell = (design, label, k, truth_name, n)
                        if cells is None or cell in cells:
                            jobs.append((cell, epsilon, truth, reps, level))
    if processes > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(processes) as pool:
            results = pool.map(_coverage_cell, jobs)
    else:
        results = [_coverage_cell(job) for job in jobs]
    return results


def _coverage_cell(job) -> dict:
    (design, label, k, truth_name, n), epsilon, truth, reps, level = job
    seed = zlib.crc32(f"{design}|{label}|{k}|{truth_name}|{n}".encode())  # one stream per cell
    mechanism = grid_question(design, k, epsilon).mechanism
    if design.startswith("unary"):
        found = unary_coverage(design, k, epsilon, n, truth, level)
        found["reps"] = "exact"
    elif channels.is_binary(mechanism):  # estimated as a yes/no share: exact binomial coverage, the two rows agree
        coverage = exact_coverage(channels.binary_channel(mechanism), n, float(truth[0]), level, est.DEFAULT_BINARY_METHOD)
        found = {"per-answer (min)": coverage, "worst answer": 0, "simultaneous": coverage, "reps": "exact"}
    elif channels.marginal_channel(channels.channel_matrix(mechanism)) is not None:
        found = marginal_coverage(channels.marginal_channel(channels.channel_matrix(mechanism)), n, truth, level)
    else:
        found = simulated_coverage(design, k, epsilon, n, truth, reps, seed, level)
        found["reps"] = reps
    return {"design": design, "epsilon": label, "k": k, "truth": truth_name, "n": n, **found}


#: The random validation space (issue: a validation no constant can be tuned to): cells drawn, not chosen.
RANDOM_SEED = 20261126
RANDOM_CELLS = 200
RANDOM_REPS = 60
#: A cell whose lowest figure falls below this at `RANDOM_REPS` surveys is run again with `RANDOM_RECHECK` surveys,
#: so that the figures well below 95% carry a Monte Carlo error of 1.3 points, not 2.8.
RANDOM_RECHECK_BELOW, RANDOM_RECHECK = 0.92, 300
TRUTH_KINDS = ("uniform", "skewed", "U-shaped", "point mass", "near a face")


def random_truth(rng: np.random.Generator, k: int, kind: str) -> np.ndarray:
    """One true distribution of a kind: uniform; skewed (geometric at a random rate, from either end); U-shaped (the
    two ends, a random split, a little in between); a point mass at a random answer; near a face (a point mass or a
    two-answer split mixed with 1–10% spread over the rest)."""
    if kind == "uniform":
        return np.full(k, 1 / k)
    if kind == "skewed":
        shares = rng.uniform(0.3, 0.8) ** np.arange(k)
        return (shares if rng.random() < 0.5 else shares[::-1]) / shares.sum()
    if kind == "U-shaped":
        truth = np.full(k, rng.uniform(0, 0.02))
        split = rng.uniform(0.3, 0.7)
        truth[0], truth[-1] = split, 1 - split
        return truth / truth.sum()
    truth = np.zeros(k)
    truth[rng.integers(k)] = 1.0
    if kind == "point mass":
        return truth
    if rng.random() < 0.5:
        truth[rng.integers(k)] += rng.uniform(0.2, 1.0)
    truth /= truth.sum()
    spread = rng.uniform(0.01, 0.1)
    return (1 - spread) * truth + spread * rng.dirichlet(np.full(k, 0.5))


def random_cells(count: int = RANDOM_CELLS, seed: int = RANDOM_SEED) -> list[tuple]:
    """(design, k, ε, n, truth kind, truth) drawn from the stated space: ordinal scales and numeric grids 0..k−1 (the
    designs whose intervals are profile likelihood on the simplex) and k-ary randomized response; k from 2 to 11,
    ε log-uniform on [0.25, 4], n log-uniform on [50, 50,000], the truth's kind uniform over `TRUTH_KINDS`."""
    rng = np.random.default_rng(seed)
    cells = []
    for _ in range(count):
        design = rng.choice(["ordinal", "laplace", "k_rr"], p=[0.45, 0.45, 0.1])
        k = int(rng.integers(2, 12))
        epsilon = round(float(np.exp(rng.uniform(np.log(0.25), np.log(4)))), 3)
        n = int(round(float(np.exp(rng.uniform(np.log(50), np.log(50_000))))))
        kind = TRUTH_KINDS[rng.integers(len(TRUTH_KINDS))]
        cells.append((str(design), k, epsilon, n, kind, random_truth(rng, k, kind)))
    return cells


def random_space(count: int = RANDOM_CELLS, seed: int = RANDOM_SEED, reps: int = RANDOM_REPS, processes: int = 2):
    jobs = [(i, cell, reps) for i, cell in enumerate(random_cells(count, seed))]
    rows = _pool_map(_random_cell, jobs, processes)
    again = [(i, cell, RANDOM_RECHECK) for (i, cell, _), row in zip(jobs, rows) if _lowest(row) < RANDOM_RECHECK_BELOW]
    for (i, _, _), row in zip(again, _pool_map(_random_cell, again, processes)):
        rows[i] = row
    return rows


def _pool_map(function, jobs, processes):
    """``function`` over ``jobs`` in order, on ``processes`` forks; each finished job ticks on stderr."""
    if processes > 1 and len(jobs) > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(processes) as pool:
            results = []
            for done, result in enumerate(pool.imap(function, jobs, chunksize=1), 1):
                print(f"{done}/{len(jobs)}", file=sys.stderr, flush=True)
                results.append(result)
            return results
    return [function(job) for job in jobs]


def _lowest(row: dict) -> float:
    return min(row["per-answer (min)"], row.get("mean", 1.0))


def _random_cell(job) -> dict:
    index, (design, k, epsilon, n, kind, truth), reps = job
    mechanism = grid_question(design, k, epsilon).mechanism
    cell = {"cell": index, "design": design, "k": k, "epsilon": epsilon, "n": n, "truth": kind, "reps": reps}
    if channels.is_binary(mechanism):
        coverage = exact_coverage(channels.binary_channel(mechanism), n, float(truth[0]), 0.95, est.DEFAULT_BINARY_METHOD)
        return {**cell, "per-answer (min)": coverage, "χ²₁ per-answer (min)": coverage, "reps": "exact"}
    marginal = channels.marginal_channel(channels.channel_matrix(mechanism))
    if marginal is not None:
        found = marginal_coverage(marginal, n, truth)
        return {**cell, "per-answer (min)": found["per-answer (min)"], "χ²₁ per-answer (min)": found["per-answer (min)"],
                "reps": "exact"}
    seed = zlib.crc32(f"random|{index}|{reps}".encode())
    return {**cell, **simulated_coverage(design, k, epsilon, n, truth, reps, seed, uncalibrated=True,
                                         simultaneous=False)}


def _random_section(out, count: int = RANDOM_CELLS, seed: int = RANDOM_SEED, processes: int = 2):
    rows = random_space(count, seed, processes=processes)
    print("## Coverage over a random validation space\n", file=out)
    print(f"{count} cells drawn with seed {seed} (`random_cells`): ordinal scales and numeric grids 0..k−1 "
          "(45% each) and k-ary randomized response (10%); k from 2 to 11; ε log-uniform on [0.25, 4]; n log-uniform "
          "on [50, 50,000]; the truth uniform, skewed, U-shaped, a point mass at a random answer, or near a face (a "
          f"point mass or a split mixed with 1–10% spread), one kind in five each. {RANDOM_REPS} surveys a cell; a cell "
          f"whose lowest figure is below {RANDOM_RECHECK_BELOW} is run again with {RANDOM_RECHECK}. Two-answer and "
          "k-ary randomized-response cells are exact (binomial sums). Nothing was tuned on these cells: the cut is "
          "calibrated per estimate (`analysis.calibration`), and the grid above was not used to choose it either.\n",
          file=out)
    figures = [(r["per-answer (min)"], "share", r) for r in rows] + [(r["mean"], "mean", r) for r in rows if "mean" in r]
    plain = [(r["χ²₁ per-answer (min)"], "share", r) for r in rows]
    where = lambda r: (f"{DESIGN_NAMES[r['design']]}, k = {r['k']}, ε = {r['epsilon']}, n = {r['n']}, "  # noqa: E731
                       f"{r['truth']} ({r['reps']} surveys)")
    print("| intervals | lowest coverage | cells below 95% | cells below 95% by more than 2 Monte Carlo errors |\n"
          "|---|---|---|---|", file=out)
    for name, found in (("χ²₁'s cut, no calibration (shares)", plain), ("as published: calibrated (shares and means)",
                                                                       figures)):
        below = [f for f in found if f[0] < 0.95]
        clear = [f for f in below if f[2]["reps"] != "exact" and
                 f[0] < 0.95 - 2 * math.sqrt(0.95 * 0.05 / f[2]["reps"])]
        print(f"| {name} | {min(f[0] for f in found):.3f} | {len(below)} of {len(found)} | {len(clear)} |", file=out)
    for name, found in (("χ²₁'s cut, no calibration", plain), ("calibrated, as published", figures)):
        print(f"\nThe five lowest, {name}:\n\n| coverage | of | cell |\n|---|---|---|", file=out)
        for value, what, r in sorted(found, key=lambda f: f[0])[:5]:
            print(f"| {value:.3f} | {what} | {where(r)} |", file=out)


#: Surveys per cell of the standard-error study: a ratio of a stated SE to the SD of the estimates carries a Monte
#: Carlo error of about 1/√(2·R) (5% at 200).
SE_REPS = 200


def share_place(q: np.ndarray, truth: np.ndarray, n: int) -> np.ndarray:
    """Where each true share sits: "at a face" (0 or 1), "near a face" (within `calibration.INTERIOR_MARGIN`
    standard errors of 0 or 1, the inverse information at the truth) or "inside"."""
    from deniable.analysis import calibration

    se = np.sqrt(np.clip(np.diag(channels.fitted_covariance(q, truth)), 0, None) / n)
    distance = np.minimum(truth, 1 - truth)
    return np.where(distance <= 1e-12, "at a face",
                    np.where(distance <= calibration.INTERIOR_MARGIN * se, "near a face", "inside"))


def se_cell(job) -> dict:
    """One random cell's published standard errors against the real spread over ``reps`` seeded surveys: per share,
    the root mean square of the stated SE over the SD of the estimates (shares whose SD is above 0.001), with where
    the true share sits (`share_place`); the same for the mean of a numeric grid. Each SE is the one `estimate`
    publishes (`from_counts.published_spread`)."""
    from deniable.analysis.from_counts import published_spread

    index, (design, k, epsilon, n, kind, truth), reps = job
    mechanism = grid_question(design, k, epsilon).mechanism
    q = channels.channel_matrix(mechanism)
    rates = q @ truth
    rng = np.random.default_rng(zlib.crc32(f"se|{index}|{reps}".encode()))
    grid = np.array(mechanism.answers, dtype=float) if design == "laplace" else None
    estimates, ses, mean_ses = [], [], []
    for counts in rng.multinomial(n, rates / rates.sum(), size=reps):
        pi = likelihood.certified_maximum(q, counts)[0]
        covariance = published_spread(mechanism, q, counts, pi)[0].matrix()
        estimates.append(pi)
        ses.append(np.sqrt(np.clip(np.diag(covariance), 0, None)))
        if grid is not None:
            mean_ses.append(math.sqrt(max(float(grid @ covariance @ grid), 0.0)))
    spread = np.std(estimates, axis=0)
    varied = spread > 1e-3
    ratio = np.sqrt(np.mean(np.square(ses), axis=0)) / np.where(varied, spread, 1.0)
    places = share_place(q, truth, n)
    row = {"cell": index, "design": design, "k": k, "epsilon": epsilon, "n": n, "truth": kind, "reps": reps,
           "shares": [(str(place), float(r)) for place, r, v in zip(places, ratio, varied) if v]}
    if grid is not None:
        row["mean"] = float(math.sqrt(np.mean(np.square(mean_ses))) / max(float(np.std(np.array(estimates) @ grid)),
                                                                          1e-12))
    return row


def se_study(count: int = RANDOM_CELLS, seed: int = RANDOM_SEED, reps: int = SE_REPS, processes: int = 2):
    """`se_cell` over the simulated cells of the random validation space (`random_cells`)."""
    jobs = [(i, cell, reps) for i, cell in enumerate(random_cells(count, seed))
            if channels.marginal_channel(channels.channel_matrix(grid_question(*cell[:3]).mechanism)) is None]
    return _pool_map(se_cell, jobs, processes)


def _se_section(out, count: int = RANDOM_CELLS, seed: int = RANDOM_SEED, processes: int = 2):
    rows = se_study(count, seed, processes=processes)
    print("## Standard errors against the real spread\n", file=out)
    print(f"The simulated cells of the random space above (seed {seed}), {SE_REPS} surveys each (`se_study`): per "
          "share, the root mean square of the published `se` over the standard deviation of the estimates across the "
          "cell's surveys (shares whose SD is above 0.001), grouped by where the true share sits: inside (more than "
          "3 standard errors from 0 and 1), near a face (within 3, not on it), at a face (0 or 1). A ratio's Monte Carlo "
          f"error is about {1 / math.sqrt(2 * SE_REPS):.0%}.\n", file=out)
    print("| true share | shares | lowest | median | highest | within 15% |\n|---|---|---|---|---|---|", file=out)
    for place in ("inside", "near a face", "at a face"):
        found = np.array([r for row in rows for where, r in row["shares"] if where == place])
        if len(found):
            inside = int(((found >= 0.85) & (found <= 1.15)).sum())
            print(f"| {place} | {len(found)} | {found.min():.2f} | {np.median(found):.2f} | {found.max():.2f} | "
                  f"{inside} of {len(found)} |", file=out)
    means = [(row["mean"], row) for row in rows if "mean" in row]
    print("\nThe mean of a numeric grid, by the kind of truth:\n\n| truth | cells | lowest | median | highest | "
          "within 15% |\n|---|---|---|---|---|---|", file=out)
    for kind in TRUTH_KINDS:
        found = np.array([m for m, row in means if row["truth"] == kind])
        if len(found):
            inside = int(((found >= 0.85) & (found <= 1.15)).sum())
            print(f"| {kind} | {len(found)} | {found.min():.2f} | {np.median(found):.2f} | {found.max():.2f} | "
                  f"{inside} of {len(found)} |", file=out)


SIMULATED = {
    "k_rr, 4 options, ε = ln 3": ({"type": "choice", "options": list("abcd"), "privacy": {"design": "k_rr", "epsilon": "ln 3"}},
                                 [0.55, 0.25, 0.15, 0.05]),
    "ordinal, 5 levels, ε = 2": ({"type": "ordinal", "options": list("12345"), "privacy": {"design": "ordinal", "epsilon": 2}},
                                [0.1, 0.2, 0.4, 0.2, 0.1]),
    "unary symmetric, 3 options, ε = 2": ({"type": "multi_select", "options": list("abc"),
                                          "privacy": {"design": "unary", "epsilon": 2}}, [0.3, 0.1, 0.02]),
    "unary optimized, 3 options, ε = 2": ({"type": "multi_select", "options": list("abc"),
                                          "privacy": {"design": "unary", "epsilon": 2, "variant": "optimized"}}, [0.3, 0.1, 0.02]),
    "laplace 0..10 step 2, ε = 1 (mean)": ({"type": "number", "min": 0, "max": 10, "step": 2,
                                           "privacy": {"design": "laplace", "epsilon": 1}}, [0.3, 0.3, 0.2, 0.1, 0.05, 0.05]),
}


def _question(spec):
    return Survey.from_dict({"id": "v", "title": "v", "questions": [{"id": "q", "text": "?", **spec}]}).questions["q"]


def _answer_distribution(mechanism, truth):
    """The distribution over the mechanism's answers, and the estimand per table row."""
    from deniable.client.mechanisms import UnaryMechanism

    if isinstance(mechanism, UnaryMechanism):
        shares = dict(zip(mechanism.options, truth))
        pi = np.array([math.prod(shares[o] if o in a else 1 - shares[o] for o in mechanism.options)
                       for a in mechanism.answers])
        return pi, np.array(truth)
    return np.array(truth), np.array(truth)


PLANNING_CELLS = [
    ("yes/no, forced response ½ truth, ¼ yes", {"type": "yes_no", "privacy": {"design": "forced_response", "truth": "1/2",
                                                                           "yes": "1/4", "no": "1/4"}}, 300),
    ("yes/no, coin flip ε = ln 3", {"type": "yes_no", "privacy": {"design": "k_rr", "epsilon": "ln 3"}}, 1000),
    ("choice k = 3, ε = 1", {"type": "choice", "options": list("abc"), "privacy": {"design": "k_rr", "epsilon": 1}}, 1000),
    ("choice k = 10, ε = 2", {"type": "choice", "options": [f"o{i}" for i in range(10)],
                              "privacy": {"design": "k_rr", "epsilon": 2}}, 2000),
    ("ordinal k = 4, ε = 0.5", {"type": "ordinal", "options": list("abcd"), "privacy": {"design": "ordinal", "epsilon": 0.5}}, 100),
    ("ordinal k = 5, ε = 1.5", {"type": "ordinal", "options": list("abcde"), "privacy": {"design": "ordinal", "epsilon": 1.5}}, 1000),
    ("number 0..4, ε = 1", {"type": "number", "min": 0, "max": 4, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}}, 100),
    ("number 0..10, ε = 2", {"type": "number", "min": 0, "max": 10, "step": 1, "privacy": {"design": "laplace", "epsilon": 2}}, 1000),
    ("number 0..10, ε = 3", {"type": "number", "min": 0, "max": 10, "step": 1, "privacy": {"design": "laplace", "epsilon": 3}}, 1000),
]


def planning_study(reps: int = 1000, stated: int = 100, seed: int = 20261125) -> list[dict]:
    """What planning forecasts against what simulated surveys publish, per design: the planned SE of the least
    precise share (and of the mean) at n, the SD of the published estimate over ``reps`` surveys of n at the
    uniform truth the plan assumes, the `se` that `estimate` states beside it (mean over the first ``stated``
    surveys), and the SD of the unbiased estimate, which the SE used to describe."""
    from deniable.analysis import plan
    from deniable.analysis.from_counts import estimate_counts
    from deniable.analysis.precision import scores

    rows = []
    for label, spec, n in PLANNING_CELLS:
        survey = Survey.from_dict({"id": "v", "title": "v", "questions": [{"id": "q", "text": "?", **spec}]})
        q, planned = survey.questions["q"], plan(survey, n)[0]
        matrix = channels.channel_matrix(q.mechanism)
        k = matrix.shape[1]
        rng = np.random.default_rng([seed, zlib.crc32(label.encode())])
        rates = matrix @ np.full(k, 1 / k)
        shares, unbiased, stated_se = [], [], []
        for survey_number in range(reps):
            counts = rng.multinomial(n, rates / rates.sum()).astype(float)
            shares.append(likelihood.certified_maximum(matrix, counts)[0])
            unbiased.append(est.unbiased(matrix, counts)[0])
            if survey_number < stated:
                stated_se.append(estimate_counts(q.mechanism, counts, 0.95, "wald", "q").table["se"].to_numpy())
        spread = np.std(shares, axis=0)
        worst = int(np.argmax(spread))
        row = {"design": label, "n": n, "planned se": planned.se, "sd of estimate": float(spread[worst]),
               "stated se": float(np.mean(stated_se, axis=0)[worst]),
               "sd of unbiased": float(np.std(unbiased, axis=0).max())}
        if planned.mean_se is not None:
            row["planned mean se"] = planned.mean_se
            row["sd of mean"] = float(np.std(np.array(shares) @ scores(q)))
        rows.append(row)
    return rows


def _planning_section(out, reps: int = 1000, stated: int = 100):
    print("\n## Planning: the forecast against what is published\n", file=out)
    print("`plan` (and `deniable survey check`, `deniable plan`) forecasts the standard error of what `estimate` will", file=out)
    print(f"publish at n. Each row: {reps} simulated surveys of n at the uniform truth the plan assumes; the least", file=out)
    print("precise share's planned SE beside the SD of its published estimate, the `se` stated beside it (mean over", file=out)
    print(f"the first {stated} surveys), and the SD of the unbiased estimate (what the SE described before the", file=out)
    print("bootstrap; `unbiased_se` still states it). A ratio within 1 ± 0.10 is the test's tolerance", file=out)
    print(f"(`tests/analysis/test_planning.py`). The SD of an SD over {reps} surveys is about {1 / math.sqrt(2 * reps):.1%}.\n", file=out)
    print("| design | n | planned SE | SD of estimate | planned / SD | stated se | SD of unbiased | planned mean SE "
          "| SD of mean |\n|---|---|---|---|---|---|---|---|---|", file=out)
    for r in planning_study(reps, stated):
        mean = (f"{r['planned mean se']:.4f} | {r['sd of mean']:.4f}" if "planned mean se" in r else "– | –")
        print(f"| {r['design']} | {r['n']:,} | {r['planned se']:.4f} | {r['sd of estimate']:.4f} | "
              f"{r['planned se'] / r['sd of estimate']:.3f} | {r['stated se']:.4f} | {r['sd of unbiased']:.4f} | "
              f"{mean} |", file=out)


def simulation_study(reps: int = 2000, n: int = 2000, seed: int = 20261122, level: float = 0.95,
                     designs=None) -> list[dict]:
    """Over ``reps`` simulated surveys of ``n`` respondents: that the unbiased estimate is unbiased with the
    variance it states, how much closer the estimate of record (maximum likelihood) comes to the truth
    (mean squared error relative to the unbiased one), and the coverage of its default intervals. ``designs``: some
    of `SIMULATED`'s labels (default: all); each draws from its own seed, so a design's figures are the same alone."""
    from deniable.analysis.from_counts import estimate_counts

    rows = []
    for position, (label, (spec, truth)) in enumerate(SIMULATED.items()):
        if designs is not None and label not in designs:
            continue
        rng = np.random.default_rng([seed, position])
        mechanism = _question(spec).mechanism
        pi, target = _answer_distribution(mechanism, truth)
        rates = channels.channel_matrix(mechanism) @ pi
        unbiased, variances, estimates, covered = [], [], [], np.zeros(len(target))
        means, mean_variances, mean_covered = [], [], 0
        grid_mean = None
        for counts in rng.multinomial(n, rates / rates.sum(), size=reps):
            result = estimate_counts(mechanism, counts, level, None, "q")
            table = result.table
            unbiased.append(table["unbiased"].to_numpy())
            variances.append(table["unbiased_se"].to_numpy() ** 2)
            estimates.append(table["estimate"].to_numpy())
            covered += (table["ci_low"].to_numpy() - 1e-12 <= target) & (target <= table["ci_high"].to_numpy() + 1e-12)
            if result.mean is not None:
                grid_mean = float(np.dot(np.array(mechanism.answers, dtype=float), target))
                means.append(result.mean.unbiased)
                mean_variances.append(result.mean.unbiased_se ** 2)
                mean_covered += result.mean.ci.low <= grid_mean <= result.mean.ci.high
        unbiased, variances, estimates = np.array(unbiased), np.array(variances), np.array(estimates)
        empirical = unbiased.var(axis=0, ddof=1)
        stated = variances.mean(axis=0)
        bias_z = (unbiased.mean(axis=0) - target) / np.sqrt(stated / reps)
        mse_ratio = ((estimates - target) ** 2).mean(axis=0).sum() / ((unbiased - target) ** 2).mean(axis=0).sum()
        row = {"design": label, "n": n, "reps": reps,
               "unbiased: max |bias| / (SE/√reps)": float(np.max(np.abs(bias_z))),
               "unbiased: empirical / stated variance (min)": float(np.min(empirical / stated)),
               "unbiased: empirical / stated variance (max)": float(np.max(empirical / stated)),
               "estimate: total MSE / unbiased total MSE": float(mse_ratio),
               "estimate: per-answer coverage (min)": float(np.min(covered / reps))}
        if means:
            means = np.array(means)
            row.update({"mean bias / (SE/√reps)": float((means.mean() - grid_mean) / math.sqrt(np.mean(mean_variances) / reps)),
                        "mean variance ratio": float(means.var(ddof=1) / np.mean(mean_variances)),
                        "mean coverage": mean_covered / reps})
        rows.append(row)
    return rows


def regression_study(reps: int = 200, n: int = 4000, seed: int = 7, beta=(-1.0, 0.8, -0.5)) -> dict:
    """Known β, randomized outcomes through the coin-flip channel: mean β̂, SD of β̂, mean SE, coverage."""
    from deniable.analysis.regression import logistic

    rng = np.random.default_rng(seed)
    question = _question({"type": "yes_no"})
    channel = channels.binary_channel(question.mechanism)
    beta = np.asarray(beta)
    fits, ses, covered = [], [], np.zeros(len(beta))
    import pandas as pd

    for _ in range(reps):
        x = pd.DataFrame({"age": rng.normal(size=n), "urban": rng.integers(0, 2, size=n).astype(float)})
        truth = rng.random(n) < 1 / (1 + np.exp(-(beta[0] + x.to_numpy() @ beta[1:])))
        report_yes = rng.random(n) < np.where(truth, channel.p, channel.q)
        result = logistic(question, np.where(report_yes, "yes", "no"), x)
        fits.append(result.params.to_numpy())
        ses.append(result.bse.to_numpy())
        ci = result.conf_int().to_numpy()
        covered += (ci[:, 0] <= beta) & (beta <= ci[:, 1])
    fits, ses = np.array(fits), np.array(ses)
    return {"beta": beta, "mean": fits.mean(axis=0), "sd": fits.std(axis=0, ddof=1), "mean se": ses.mean(axis=0),
            "coverage": covered / reps, "reps": reps, "n": n}


DEFAULT_CHOICE = """
**Default for two-answer questions: Clopper–Pearson**, mapped through the design's affine map and
clipped to [0, 1]. It is the only method whose coverage is at least 95% in every cell: it inherits the
exact binomial guarantee on the report rate, and the true rate always lies in the design's feasible
range, so clipping never removes it. Wald falls short for small n near the boundary (π = 0.1, n = 50);
Wilson and the profile likelihood fall short at n = 50, π = 0.5, where the discreteness of the binomial
bites (which is also why a choice between two options is estimated as a yes/no share, not on the
simplex). Where the mapped interval lies outside [0, 1] (the observed "yes" rate is below P(yes|no)),
the profile-likelihood interval on [0, 1] is used: it contains the estimate (then 0) and is never
[0, 0]. For large n the methods agree; Clopper–Pearson costs a little width at small n (table above).
"""

DESIGN_NAMES = {"k_rr": "k-ary randomized response (choice)", "ordinal": "ordinal randomized response",
                "laplace": "numeric grid 0..k−1 (discrete Laplace)", "unary": "multi-select, unary symmetric",
                "unary optimized": "multi-select, unary optimized"}


def _coverage_section(rows, reps, out):
    print("## Coverage of the default 95% intervals on the grid, every design\n", file=out)
    print(f"n ∈ {{{', '.join(map(str, GRID_N))}}}, ε ∈ {{0.5, ln 3, 2}}, k ∈ {{{', '.join(map(str, GRID_K))}}} answers "
          "(options for multi-select, grid points 0..k−1 for numbers), two true distributions: *uniform* (every share "
          "1/k) and *skewed* (one share 0, one share 1/k, the rest falling geometrically; for k = 2: 0 and 1). Each cell "
          "gives the lowest per-answer coverage among the k answers, then the coverage of the simultaneous "
          "(Bonferroni, `simultaneous=True`) intervals, and for numbers the coverage of the mean's interval.\n", file=out)
    print(f"How: multi-select options, two-answer questions and each answer of k-ary randomized response are binomial, "
          f"so their coverage is exact (a binomial sum; simultaneous: the product over independently selected options, "
          f"and for k-ary RR the Bonferroni lower bound). Ordinal and numeric questions are simulated, "
          f"{reps} surveys per cell (seeded per cell), each interval computed as `estimate` computes it: profile "
          f"likelihood at χ²₁'s cut where the estimate is interior, at a cut calibrated on surveys drawn at the "
          f"estimate where a face of the simplex is near, and each end tested at the point mass beyond it "
          f"([analysis](analysis.md)). A simulated coverage of 95% has a Monte Carlo standard error of "
          f"{math.sqrt(0.95 * 0.05 / reps):.4f}, and the lowest of k answers sits below its own cell's true "
          f"coverage by about one such error; figures below {COVERAGE_TARGET} are in bold.\n", file=out)
    print("| design | lowest per-answer | where | lowest simultaneous | where | lowest mean |\n|---|---|---|---|---|---|", file=out)
    for design in COVERAGE_DESIGNS:
        mine = [r for r in rows if r["design"] == design]
        if not mine:
            continue
        low = min(mine, key=lambda r: r["per-answer (min)"])
        together = min(mine, key=lambda r: r["simultaneous"])
        means = [r["mean"] for r in mine if "mean" in r]
        where = lambda r: f"ε={r['epsilon']}, k={r['k']}, {r['truth']}, n={r['n']}"  # noqa: E731
        print(f"| {DESIGN_NAMES[design]} | {_bold(low['per-answer (min)'], COVERAGE_TARGET)} | {where(low)} | "
              f"{_bold(together['simultaneous'], COVERAGE_TARGET)} | {where(together)} | "
              f"{_bold(min(means), COVERAGE_TARGET) if means else '–'} |", file=out)
    for design in COVERAGE_DESIGNS:
        mine = {(r["epsilon"], r["k"], r["truth"], r["n"]): r for r in rows if r["design"] == design}
        if not mine:
            continue
        print(f"\n### {DESIGN_NAMES[design]}\n", file=out)
        numeric = design == "laplace"
        print("Cells: per-answer minimum / simultaneous" + (" / mean" if numeric else "") + ".\n", file=out)
        print("| ε | k | truth | " + " | ".join(f"n = {n}" for n in GRID_N) + " |\n|---|---|---|" + "---|" * len(GRID_N),
              file=out)
        for label, _ in GRID_EPSILON:
            for k in GRID_K:
                for truth_name in truths(k):
                    cells = []
                    for n in GRID_N:
                        r = mine.get((label, k, truth_name, n))
                        if r is None:
                            cells.append("")
                            continue
                        text = f"{_bold(r['per-answer (min)'], COVERAGE_TARGET)} / " \
                               f"{_bold(r['simultaneous'], COVERAGE_TARGET)}"
                        cells.append(text + (f" / {_bold(r['mean'], COVERAGE_TARGET)}" if numeric else ""))
                    print(f"| {label} | {k} | {truth_name} | " + " | ".join(cells) + " |", file=out)


def _bold(value: float, floor: float = COVERAGE_FLOOR) -> str:
    return f"**{value:.3f}**" if value < floor else f"{value:.3f}"


def main(out=sys.stdout, reps: int = 1500, processes: int = 2):
    rows = coverage_table()
    methods = est.BINARY_METHODS
    print("# Validation\n", file=out)
    print("Generated by `python scripts/validation.py > docs/validation.md` (about fifteen minutes on two "
          "cores); `tests/analysis` checks the same figures on a subset of the grid.\n", file=out)
    print("\n## Two-answer questions: the interval methods compared (exact, not simulated)\n", file=out)
    print("Each figure is P(true π inside the interval), summed over the exact binomial distribution of the", file=out)
    print("number of \"yes\" reports, for the k_rr (Warner) channel at each ε. Minimum per method:\n", file=out)
    print("| method | minimum coverage | cell where it occurs |\n|---|---|---|", file=out)
    for method in methods:
        worst = min(rows, key=lambda r: r[method])
        print(f"| {method} | {worst[method]:.4f} | ε={worst['epsilon']}, n={worst['n']}, π={worst['pi']} |", file=out)
    print("\n| ε | n | π | " + " | ".join(methods) + " |", file=out)
    print("|---|---|---|" + "---|" * len(methods), file=out)
    for r in rows:
        cells = " | ".join(_bold(r[m]) for m in methods)
        print(f"| {r['epsilon']} | {r['n']} | {r['pi']} | {cells} |", file=out)
    print("\n## Mean interval width at π = 0.1 (ε = ln 3)\n", file=out)
    channel = channels.binary_channel(binary_question("ln 3").mechanism)
    print("| n | " + " | ".join(methods) + " |\n|---|" + "---|" * len(methods), file=out)
    for n in GRID_N:
        print(f"| {n} | " + " | ".join(f"{mean_width(channel, n, 0.1, 0.95, m):.4f}" for m in methods) + " |", file=out)
    print(DEFAULT_CHOICE, file=out)
    print("\n## The estimate against the unbiased one: simulated surveys\n", file=out)
    study = simulation_study()
    print("Each design: 2000 simulated surveys of 2000 respondents (seed 20261122), reports drawn from the exact", file=out)
    print("channel. For the `unbiased` column: bias in units of the standard error of the mean over surveys", file=out)
    print("(|z| < 4 is consistent with 0) and the ratio of the spread of the estimates to the variance the", file=out)
    print("estimator states. For the `estimate` column (maximum likelihood): its mean squared error summed over", file=out)
    print("the answers, relative to the unbiased one's (below 1 means closer to the truth on the whole), and the", file=out)
    print("coverage of its default per-answer 95% intervals.\n", file=out)
    keys = list(study[0].keys())[3:]
    print("| design | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys), file=out)
    for row in study:
        print(f"| {row['design']} | " + " | ".join(f"{row[k]:.4f}" for k in keys) + " |", file=out)
    for row in study:
        if "mean coverage" in row:
            print(f"\n{row['design']}: unbiased mean's bias z = {row['mean bias / (SE/√reps)']:.3f}, variance ratio "
                  f"{row['mean variance ratio']:.3f}; 95% coverage of the mean's (profile-likelihood) interval "
                  f"{row['mean coverage']:.4f}.", file=out)
    _planning_section(out)
    reg = regression_study()
    print(f"\n## Regression\n\n{reg['reps']} simulated surveys of {reg['n']} respondents, outcome through the coin flip, "
          "covariates age ~ N(0, 1) and urban ~ Bernoulli(1/2):\n", file=out)
    print("| term | true β | mean β̂ | SD of β̂ | mean SE | 95% coverage |\n|---|---|---|---|---|---|", file=out)
    for i, term in enumerate(["Intercept", "age", "urban"]):
        print(f"| {term} | {reg['beta'][i]:.3f} | {reg['mean'][i]:.4f} | {reg['sd'][i]:.4f} | {reg['mean se'][i]:.4f} | "
              f"{reg['coverage'][i]:.3f} |", file=out)
    _compliance_section(out, processes=processes)
    generated_sections(out)
    print(READING, file=out)


def _profile_reading(rows, reps: int) -> str:
    """The reading of the simulated cells (ordinal and numeric questions), from the figures themselves."""
    simulated = [r for r in rows if r["design"] in ("ordinal", "laplace")]
    figures = [(r[key], key, r) for r in simulated for key in ("per-answer (min)", "simultaneous", "mean") if key in r]
    below = [f for f in figures if f[0] < COVERAGE_TARGET]
    value, key, worst = min(figures, key=lambda f: f[0])
    monte_carlo = math.sqrt(0.95 * 0.05 / reps)
    return (f"Reading: {len(below)} of the {len(figures)} simulated figures of {len(simulated)} cells (per-answer "
            f"minimum, simultaneous, mean) fall below 95%; the lowest is {value:.3f} ({key}, "
            f"{DESIGN_NAMES[worst['design']]}, ε = {worst['epsilon']}, k = {worst['k']}, {worst['truth']}, "
            f"n = {worst['n']}), {(value - 0.95) / monte_carlo:+.1f} Monte Carlo errors from 95%. The grid chose "
            "nothing: the random space below is the test no constant could be fitted to.")


#: Sections regenerated on their own (``python scripts/validation.py --only panels``): each sits between
#: ``<!-- begin NAME -->`` and ``<!-- end NAME -->`` in docs/validation.md.
SECTIONS = {"grid": lambda out: _grid_section(out), "random": lambda out: _random_section(out),
            "se": lambda out: _se_section(out),
            "poisoning": lambda out: _poisoning_section(out), "audit": lambda out: _audit_section(out),
            "wide": lambda out: _wide_section(out)}


def _wide_section(out):
    from .wide_coverage import wide_section  # it reads this module's truths

    wide_section(out)


#: Surveys per simulated cell of the grid (each estimate bootstraps where a face is near, so the grid is a check of
#: every cell at Monte Carlo error 2.2 points; the random space below is the study).
GRID_REPS = 100


def _grid_section(out, reps: int = GRID_REPS, processes: int = 2):
    rows = coverage_grid(reps=reps, processes=processes)
    _coverage_section(rows, reps, out)
    print(f"\n{_profile_reading(rows, reps)}", file=out)


def _audit_section(out):
    from tests.support.epsilon_audit import section

    section(out)


def generated_sections(out):
    for name, write in SECTIONS.items():
        print(f"\n<!-- begin {name} -->", file=out)
        write(out)
        print(f"<!-- end {name} -->", file=out)


def replace_section(name: str, path: str = "docs/validation.md"):
    """Regenerate one section in place (the rest of the file keeps its figures)."""
    import io
    import re
    from pathlib import Path

    buffer = io.StringIO()
    SECTIONS[name](buffer)
    text = Path(path).read_text(encoding="utf-8")
    block = f"<!-- begin {name} -->\n\n{buffer.getvalue().strip()}\n<!-- end {name} -->"  # as the whole run writes it
    pattern = re.compile(rf"<!-- begin {name} -->.*?<!-- end {name} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:  # a first run: before "Reading these tables"
        text = text.replace("\n## Reading these tables", f"\n{block}\n\n## Reading these tables", 1)
    Path(path).write_text(text, encoding="utf-8")


# --- designs in which the respondent randomizes, and designs that measure compliance -----------------

CROSSWISE_P = ("1/4", "1/6")
COMPLIANCE_N = (100, 500, 2000)
CDM_PAIRS = (("1/3", "2/3"), ("1/4", "3/4"))
SLD_PAIRS = (("2/12", "10/12"), ("1/4", "3/4"))
#: (π, γ) for cheating detection, (π, t) for the lie detector: inside, and on the boundaries γ = 0, π = 0, t = 1.
CDM_TRUTHS = ((0.3, 0.1), (0.3, 0.0), (0.0, 0.2))
SLD_TRUTHS = ((0.3, 0.8), (0.3, 1.0), (0.0, 1.0))


def _yes_no_question(privacy):
    return Survey.from_dict({"id": "v", "title": "v", "questions": [
        {"id": "q", "type": "yes_no", "text": "?", "privacy": privacy}]}).questions["q"]


def _grouped_question(design: str, pair) -> "Question":  # noqa: F821 - deniable.client.Question
    key = "yes" if design == "cheating_detection" else "p"
    return _yes_no_question({"design": design, "groups": {g: {key: v, "randomizer": "r"} for g, v in zip("ab", pair)}})


def crosswise_coverage(level: float = 0.95) -> list[dict]:
    """Crosswise is a two-answer channel: the coverage of its default (Clopper–Pearson) interval is exact."""
    rows = []
    for p in CROSSWISE_P:
        channel = channels.binary_channel(_yes_no_question({"design": "crosswise", "companion": "c", "p": p}).mechanism)
        for n in COMPLIANCE_N:
            for pi in (0.0, 0.1, 0.3):
                rows.append({"p": p, "n": n, "pi": pi, "coverage": exact_coverage(channel, n, pi, level, est.DEFAULT_BINARY_METHOD)})
    return rows


def _compliance_cell(job) -> dict:
    """One cell: ``reps`` surveys drawn from the analysis channel at the true class shares, each estimated
    as `estimate` does; coverage, bias and SE against SD of every row."""
    from deniable.analysis.compliance import class_matrix, estimate_compliance

    design, pair, truth, n, reps, level = job
    question = _grouped_question(design, pair)
    q = class_matrix(question.mechanism)
    if design == "cheating_detection":
        pi, gamma = truth
        theta, rows = np.array([pi, 1 - pi - gamma, gamma]), {"yes": pi, "cheater": gamma}
    else:
        pi, t = truth
        theta, rows = np.array([pi * t, pi * (1 - t), 1 - pi]), {"yes": pi, "truthful": t}
    rng = np.random.default_rng(zlib.crc32(f"{design}|{pair}|{truth}|{n}".encode()))
    found = {row: {"covered": 0, "estimates": [], "ses": []} for row in rows}
    for counts in rng.multinomial(n, q @ theta, size=reps):
        table = estimate_compliance(question.mechanism, counts, level, None, None)[0]
        for row, value in rows.items():
            if row == "truthful" and pi == 0:
                continue  # no carriers: their truthfulness is not identified (the interval is [0, 1])
            estimate, se, low, high = table.loc[row, ["estimate", "se", "ci_low", "ci_high"]]
            found[row]["covered"] += low - 1e-9 <= value <= high + 1e-9
            found[row]["estimates"].append(estimate)
            found[row]["ses"].append(se)
    result = {"design": design, "groups": " / ".join(pair), "truth": truth, "n": n}
    for row, figures in found.items():
        if figures["estimates"]:
            estimates = np.array(figures["estimates"], dtype=float)
            result[row] = {"coverage": figures["covered"] / len(estimates), "bias": float(np.nanmean(estimates) - rows[row]),
                           "sd": float(np.nanstd(estimates)), "mean se": float(np.nanmean(figures["ses"]))}
    return result


def compliance_grid(reps: int = 400, level: float = 0.95, processes: int = 1) -> list[dict]:
    jobs = [(design, pair, truth, n, reps, level)
            for design, pairs, truths in (("cheating_detection", CDM_PAIRS, CDM_TRUTHS),
                                          ("stochastic_lie_detector", SLD_PAIRS, SLD_TRUTHS))
            for pair in pairs for truth in truths for n in COMPLIANCE_N]
    if processes > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(processes) as pool:
            return pool.map(_compliance_cell, jobs)
    return [_compliance_cell(job) for job in jobs]


def attack_study(n: int = 2000, reps: int = 400, seed: int = 20261123) -> list[dict]:
    """A population in which 10% are yes-holders who answer "no" whatever they are told (20% honest yes,
    70% honest no). Forced response (the coin flip) estimates the share of yes-holders; cheating detection
    (groups 1/3 and 2/3) estimates honest yes π and cheaters γ. Mean estimate and coverage of each."""
    from deniable.analysis.compliance import class_matrix, estimate_compliance

    honest_yes, cheaters = 0.2, 0.1
    rng = np.random.default_rng(seed)
    rows = []
    coin = _yes_no_question({"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"})
    coin_q = channels.channel_matrix(coin.mechanism)
    # a cheater reports "no" always: the coin flip's reports are a mixture of the honest channel and "no"
    rates = coin_q @ np.array([honest_yes, 1 - honest_yes - cheaters]) + np.array([0.0, cheaters])
    estimates, covered = [], 0
    for counts in rng.multinomial(n, rates, size=reps):
        low, high = est.binary_interval(channels.binary_channel(coin.mechanism), int(counts[0]), n, 0.95,
                                        est.DEFAULT_BINARY_METHOD)[0]
        estimate = est.binary_mle(channels.binary_channel(coin.mechanism), int(counts[0]), n)
        estimates.append(estimate)
        covered += low <= honest_yes + cheaters <= high
    rows.append({"design": "forced_response (coin flip)", "row": "yes (all yes-holders: 0.3)",
                 "truth": honest_yes + cheaters, "mean": float(np.mean(estimates)), "coverage": covered / reps})
    cdm = _grouped_question("cheating_detection", ("1/3", "2/3"))
    q = class_matrix(cdm.mechanism)
    theta = np.array([honest_yes, 1 - honest_yes - cheaters, cheaters])
    found = {"yes": [], "cheater": []}
    hits = {"yes": 0, "cheater": 0}
    truth = {"yes": honest_yes, "cheater": cheaters}
    for counts in rng.multinomial(n, q @ theta, size=reps):
        table = estimate_compliance(cdm.mechanism, counts, 0.95, None, None)[0]
        for row in found:
            found[row].append(table.loc[row, "estimate"])
            hits[row] += table.loc[row, "ci_low"] <= truth[row] <= table.loc[row, "ci_high"]
    rows.append({"design": "cheating_detection (1/3, 2/3)", "row": "yes (honest yes: 0.2)", "truth": honest_yes,
                 "mean": float(np.mean(found["yes"])), "coverage": hits["yes"] / reps})
    rows.append({"design": "cheating_detection (1/3, 2/3)", "row": "cheater (0.1)", "truth": cheaters,
                 "mean": float(np.mean(found["cheater"])), "coverage": hits["cheater"] / reps})
    return rows


def _compliance_section(out, reps: int = 400, processes: int = 2):
    print("\n## Designs in which the respondent randomizes, and designs that measure compliance\n", file=out)
    print("Crosswise is a two-answer channel: the coverage of its default (Clopper–Pearson) 95% interval is", file=out)
    print("exact. Minimum over the grid below:", file=out)
    rows = crosswise_coverage()
    worst = min(rows, key=lambda r: r["coverage"])
    print(f"{worst['coverage']:.4f} (p = {worst['p']}, n = {worst['n']}, π = {worst['pi']}).\n", file=out)
    print("| p | n | π | coverage |\n|---|---|---|---|", file=out)
    for r in rows:
        print(f"| {r['p']} | {r['n']} | {r['pi']} | {_bold(r['coverage'], 0.95)} |", file=out)
    print(f"\nCheating detection and the stochastic lie detector: {reps} simulated surveys a cell, drawn from the", file=out)
    print("analysis channel at the true class shares and estimated as `estimate` does (certified maximum", file=out)
    print("likelihood, profile-likelihood intervals; where a latent class lies within 3 SEs of its boundary the", file=out)
    print("intervals use the χ²₂ cut, the projection of the joint region, since the χ²₁ cut covered 92–94% in", file=out)
    print("such cells). Truths include the boundaries γ = 0, π = 0 and t = 1; with", file=out)
    print("π = 0 the carriers' truthfulness is not identified and is not scored. Per row: 95% coverage, bias of", file=out)
    print("the mean estimate, and the mean stated SE against the SD of the estimates (Monte Carlo error of a", file=out)
    print(f"coverage near 95%: about ±{100 * math.sqrt(0.95 * 0.05 / reps):.1f} points).\n", file=out)
    grid = compliance_grid(reps, processes=processes)
    print("| design | groups | truth | n | row | coverage | bias | SD | mean SE |\n|---|---|---|---|---|---|---|---|---|", file=out)
    minima = {}
    for cell in grid:
        for row in ("yes", "cheater", "truthful"):
            if row in cell:
                f = cell[row]
                minima.setdefault((cell["design"], row), []).append(f["coverage"])
                print(f"| {cell['design']} | {cell['groups']} | {cell['truth']} | {cell['n']} | {row} | "
                      f"{_bold(f['coverage'], 0.95)} | {f['bias']:+.4f} | {f['sd']:.4f} | {f['mean se']:.4f} |", file=out)
    print("\nMinimum coverage per design and row: " + "; ".join(
        f"{design} {row} {min(values):.3f}" for (design, row), values in minima.items()) + ".", file=out)
    print("\n### The attack study\n", file=out)
    print("10% of the population hold a \"yes\" and answer \"no\" whatever they are told (20% honest yes, 70% honest", file=out)
    print("no); 400 surveys of 2000. Forced response cannot see them and reports too few yes-holders; cheating", file=out)
    print("detection estimates the honest yes share and the cheaters, and its intervals cover both.\n", file=out)
    print("| design | row | truth | mean estimate | 95% coverage |\n|---|---|---|---|---|", file=out)
    for r in attack_study():
        print(f"| {r['design']} | {r['row']} | {r['truth']:.2f} | {r['mean']:.4f} | {r['coverage']:.3f} |", file=out)


# --- poisoning: reports nobody randomized ------------------------------------------------------------

POISON_SHARES = (0.005, 0.01, 0.02, 0.05, 0.10)
HONEST_N = 10_000


def _poison_question(qtype: str, privacy: dict, options):
    return Survey.from_dict({"id": "v", "title": "v", "questions": [
        {"id": "q", "type": qtype, "text": "?", "privacy": privacy, "options": options}]}).questions["q"]


def poisoning_cases() -> list[dict]:
    """The designs, honest populations and what the attacker wants: the maximal-gain attack of Cao, Jia & Gong
    (2021) sends the report that raises the target estimate most, every time."""
    options = ["a", "b", "c", "d"]
    scale = ["1", "2", "3", "4", "5"]
    return [
        {"design": "k_rr ε = ln 3, 4 options", "question": _poison_question("choice", {"design": "k_rr", "epsilon": "ln 3"}, options),
         "truth": np.array([0.4, 0.3, 0.2, 0.1]), "target": "share of d (0.1)", "fake": "d"},
        {"design": "ordinal ε = 1, 5 points", "question": _poison_question("ordinal", {"design": "ordinal", "epsilon": 1}, scale),
         "truth": np.array([0.1, 0.2, 0.4, 0.2, 0.1]), "target": "mean position (3.0)", "fake": "5"},
        {"design": "unary ε = 2, 4 options", "question": _poison_question("multi_select", {"design": "unary", "epsilon": 2}, options),
         "truth": np.array([0.4, 0.3, 0.2, 0.1]), "target": "share selecting d (0.1)", "fake": ["d"]},
        {"design": "unary ε = 2, 4 options, padded",
         "question": _poison_question("multi_select", {"design": "unary", "epsilon": 2}, options),
         "truth": np.array([0.4, 0.3, 0.2, 0.1]), "target": "share selecting d (0.1)", "fake": "padded"},
        # sparse tails: the fit test's Monte Carlo route (2,000 honest reports; fakes send the lowest report)
        {"design": "number 0..10, ε = 4, n = 2,000", "n": 2000,
         "question": Survey.from_dict({"id": "v", "title": "v", "questions": [
             {"id": "q", "type": "number", "text": "?", "min": 0, "max": 10,
              "privacy": {"design": "laplace", "epsilon": 4}}]}).questions["q"],
         "truth": np.full(11, 1 / 11), "target": "mean (5.0)", "fake": -10},
    ]


def _honest_counts(case, rng) -> np.ndarray:
    mechanism = case["question"].mechanism
    if case["question"].type == "multi_select":  # options held independently with these shares
        answers = rng.random((HONEST_N, len(case["truth"]))) < case["truth"]
        reports = np.where(answers, rng.random(answers.shape) < float(mechanism.keep_one),
                           rng.random(answers.shape) < float(mechanism.flip_zero))
        masks = reports @ (1 << np.arange(reports.shape[1]))
        return np.bincount(masks, minlength=2 ** reports.shape[1])
    q = channels.channel_matrix(mechanism)
    return rng.multinomial(case.get("n", HONEST_N), q @ case["truth"])


def _fake_counts(case, fakes: int, rng) -> np.ndarray:
    mechanism = case["question"].mechanism
    counts = np.zeros(len(mechanism.reports), dtype=np.int64)
    if case["fake"] == "padded":
        # the target's bit set, and as many other options as an honest report selects on average, at random:
        # the number selected per report then looks honest
        m = len(mechanism.options)
        honest = float(sum(case["truth"] * float(mechanism.keep_one) + (1 - case["truth"]) * float(mechanism.flip_zero)))
        others = rng.binomial(m - 1, max(honest - 1, 0) / (m - 1), size=fakes)
        for extra in others:
            chosen = rng.choice(m - 1, size=extra, replace=False)
            mask = (1 << (m - 1)) | sum(1 << int(i) for i in chosen)
            counts[mask] += 1
        return counts
    counts[[r == case["fake"] for r in mechanism.reports].index(True)] = fakes
    return counts


def _target_estimate(case, counts) -> tuple[float, float]:
    """(the target estimate, the fit test's p) as `estimate` computes them."""
    from deniable.analysis.fit import fit_test

    mechanism = case["question"].mechanism
    if case["question"].type == "multi_select":
        channel = channels.binary_channel(mechanism)
        selected = counts[[mechanism.options[-1] in r for r in mechanism.reports]].sum()
        value = est.binary_mle(channel, int(selected), int(counts.sum()))
        return value, fit_test(mechanism, counts, None).pvalue
    q = channels.channel_matrix(mechanism)
    pi, _ = likelihood.certified_maximum(q, counts)
    if case["question"].type == "number":
        value = float(pi @ np.array(mechanism.answers, dtype=float))
    else:
        value = float(pi @ np.arange(1, len(pi) + 1)) if case["question"].type == "ordinal" else float(pi[-1])
    return value, fit_test(mechanism, counts, pi).pvalue


def poisoning_study(reps: int = 200, seed: int = 20261124) -> list[dict]:
    """For each design and attacker share: the mean shift of the target estimate (against the truth) and the share
    of surveys the goodness-of-fit check flags (p < 0.001); share 0 is the check's false-alarm rate on honest data."""
    from deniable.analysis.fit import FLAG_P

    rows = []
    for case in poisoning_cases():
        rng = np.random.default_rng(seed)
        if case["question"].type == "number":
            truth = float(case["truth"] @ np.array(case["question"].mechanism.answers, dtype=float))
        else:
            truth = float(case["truth"] @ np.arange(1, len(case["truth"]) + 1)) if case["question"].type == "ordinal" \
                else float(case["truth"][-1])
        for share in (0.0, *POISON_SHARES):
            fakes = round(share * case.get("n", HONEST_N) / (1 - share))  # the attacker's share of all reports
            shifts, flagged = [], 0
            for _ in range(reps):
                counts = _honest_counts(case, rng) + _fake_counts(case, fakes, rng)
                value, pvalue = _target_estimate(case, counts)
                shifts.append(value - truth)
                flagged += pvalue < FLAG_P
            rows.append({"design": case["design"], "target": case["target"], "share": share, "fakes": fakes,
                         "shift": float(np.mean(shifts)), "detected": flagged / reps})
    return rows


def _poisoning_section(out, reps: int = 200):
    print("\n## Poisoning: reports nobody randomized\n", file=out)
    print(f"An honest population of {HONEST_N:,} respondents (2,000 for the number) randomizes as the design says; an "
          "attacker adds", file=out)
    print("reports chosen to raise one estimate as far as it goes (the maximal-gain attack of Cao, Jia & Gong 2021: the", file=out)
    print("target's report every time; for multi-select either the target option alone, or *padded* with as many", file=out)
    print("other options as an honest report selects on average, so the count per report looks honest). Share:", file=out)
    print("the attacker's share of all reports; shift: the mean change of the target estimate from the truth;", file=out)
    print(f"detected: the share of {reps} surveys whose goodness-of-fit test (`EstimateResult.fit`) has p < 0.001,", file=out)
    print("which names the question in `summary()`, the CLI and the dashboard. Share 0: honest data, the false", file=out)
    print("alarm rate.\n", file=out)
    print("| design | target | attacker share | fake reports | mean shift | detected |\n|---|---|---|---|---|---|", file=out)
    for r in poisoning_study(reps):
        print(f"| {r['design']} | {r['target']} | {r['share']:.1%} | {r['fakes']:,} | {r['shift']:+.4f} | "
              f"{r['detected']:.3f} |", file=out)
    print(POISONING_READING, file=out)


POISONING_READING = """
The check sees what no honest population could send, and nothing else. A k-ary or ordinal channel is square:
every report distribution inside the image of the channel is some population's, so a flood of one report is
flagged only once it pushes the rates outside that image (a share below 0 elsewhere); until then the fake
reports are indistinguishable from a population with more of the target, and the shift is the price. The
multi-select count test catches a target-only attack early (honest reports select about as many options as
their population holds; fake ones select one), and padding defeats it. A number's lowest report is one no honest
population sends often: its flood is seen at once, on the Monte Carlo route (sparse cells), whose draws now go on
past 999 while too few reach the statistic (with 999 alone its smallest p was 0.001, and nothing was ever
flagged). Rate limits, invitation tokens and the responses-per-day chart are the defences against volume; this
check is the last line, and says so."""


READING = """
## Reading these tables

- Every design's default interval contains its estimate and stays in the parameter space by
  construction (tests pin both on random designs and counts). Coverage: see the first table; the
  exact figures (two-answer questions, multi-select) carry no simulation error, the simulated ones
  carry the Monte Carlo error stated above.
- Profile-likelihood intervals (ordinal and numeric questions) take χ²₁'s cut where the estimate is interior and
  a cut calibrated on surveys drawn at the estimate where a face of the simplex is near, each end tested at the
  point mass beyond it. Over the random space (200 cells nobody chose) χ²₁'s cut alone covered as little as 0.80
  (point masses, near-face mixtures), 19 cells clearly below 95%; calibrated, the lowest is 0.923 (a near-face mix on
  an 8-value grid at n = 217, 300 surveys) and one cell is below 95% by more than two Monte Carlo errors.
- Standard errors (the table above): a share's `se` inside the simplex is its real spread (98 of 103 shares within
  15%, 0.90–1.19, at a Monte Carlo error of 5%), and so is a mean's (77 of 84 cells; 0.87–1.23, the seven outside at
  point masses or near a face, all over-stating). A share at or near 0 is not described by one number: its estimates
  are a mass at 0 and a tail, whose spread depends on whether the truth is on the face or a few standard errors above
  it, which one survey cannot tell apart; the bootstrap at the estimate is inconsistent at a boundary (Andrews 2000)
  and states more there (at a face: median 1.30×, 0.72–2.4×; near one: 552 of 790 within 15%, 0.76–3.4×). No choice
  of where to draw the
  bootstrap is right on both sides: drawn at the estimate with the shares within κ SEs set to 0 (κ = 1, √log n, or
  shrunk by κ SEs), the faces came nearer 1 and shares a few SEs inside fell to 0.25–0.5 of their spread (30 cells,
  40 surveys each). So the estimate's note says it: near a face, a share's `se` is the bootstrap's and its
  interval, calibrated at that face, is the figure to read.
- Exact intervals: k-ary randomized response, multi-select and two-answer questions use exact binomial intervals and
  never fall below 95%.
- Two-answer questions: only Clopper–Pearson stays at or above 95% in every cell, so it is the
  default; the worst cells of the other methods are bold.
- Regression: coefficients are recovered without visible bias and the information-matrix standard
  errors match the spread of the estimates; Wald coverage is within simulation error of 95% over 200
  surveys (the simulation error of a coverage figure here is about ±1.5 points).
"""

