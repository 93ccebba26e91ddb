"""The float channel the analysis inverts: the numpy formulas for the large shapes must equal the exact
channel entry by entry, and stay quick at the largest sizes a spec allows."""

import math

import numpy as np
import pytest

from deniable.analysis import channels
from deniable.client import Survey, mechanisms
from deniable.client.mechanisms import MAX_GRID_POINTS


def _question(kind: str, repeated=None, **extra):
    spec = {"id": "q", "text": "?", "type": kind, **extra}
    return Survey.from_dict({"id": "s", "title": "s", "questions": [spec], "repeated": repeated}).questions["q"].mechanism


SHAPES = {
    "k_rr, 5 options": ("choice", {"options": list("abcde"), "privacy": {"design": "k_rr", "epsilon": 1.3}}),
    "public choice": ("choice", {"options": list("abc"), "privacy": "none"}),
    "ordinal, 7 points": ("ordinal", {"options": list("abcdefg"), "privacy": {"design": "ordinal", "epsilon": 2}}),
    "number 0-10 step 1": ("number", {"min": 0, "max": 10, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}}),
    "number -1-1 step 0.5": ("number", {"min": -1, "max": 1, "step": 0.5, "privacy": {"design": "laplace", "epsilon": 3}}),
    "public number": ("number", {"min": 0, "max": 4, "step": 1, "privacy": "none"}),
    "forced response": ("yes_no", {"privacy": {"design": "forced_response", "truth": 0.75, "yes": 0.15, "no": 0.1}}),
}


def _shape(name: str, repeated=None):
    kind, extra = SHAPES[name]
    return _question(kind, repeated, **extra)


@pytest.mark.parametrize("repeated", [None, True, {"instant_epsilon": 2}])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_formula_route_equals_the_exact_channel(shape, repeated):
    """Also in a repeated survey, where a private question's channel is its design's followed by the instantaneous
    layer (a number's formula once left the layer out, and its estimates were biased: a mean of 1.41 for 1.35)."""
    mechanism = _shape(shape, repeated)
    exact = np.array([[float(p) for p in row] for row in mechanism.channel()])
    fast = channels.channel_matrix(mechanism)
    assert fast.shape == exact.shape == (len(mechanism.reports), len(mechanism.answers))
    np.testing.assert_allclose(fast, exact, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(fast.sum(axis=0), 1, rtol=1e-12)


def test_the_largest_channels_are_columns_of_probabilities():
    """At the largest sizes a spec allows (where the exact route takes minutes: a million fractions,
    or k³ work; the worst-case hardening test times `survey check` on them). The longest number grid is its
    structure alone: its column sums through it, its first, middle and last columns written out."""
    largest = [
        _question("choice", options=[f"o{i}" for i in range(1000)], privacy={"design": "k_rr", "epsilon": 1}),
        _question("ordinal", options=[f"o{i}" for i in range(1000)], privacy={"design": "ordinal", "epsilon": 1}),
        _question("number", min=0, max=MAX_GRID_POINTS - 1, step=1, privacy={"design": "laplace", "epsilon": 1}),
    ]
    for mechanism in largest:
        matrix = channels.channel_matrix(mechanism)
        if isinstance(matrix, channels.FoldedGeometric):
            np.testing.assert_allclose(matrix.rmatvec(np.ones(matrix.shape[0])), 1, rtol=1e-9)
            matrix = matrix.columns([0, matrix.points // 2, matrix.points])
        assert np.isfinite(matrix).all() and (matrix > 0).all()
        np.testing.assert_allclose(matrix.sum(axis=0), 1, rtol=1e-9)


@pytest.mark.parametrize("k, epsilon", [(2, "ln 3"), (4, 1), (30, "ln 2"), (300, 3)])
def test_k_ary_covariances_in_closed_form_equal_the_dense_route(k, epsilon):
    """The k-ary channel's inverse is (I − o11ᵀ)/(p − o): the fitted and the unbiased covariances (and the
    unbiased estimate) are the dense route's, without inverting anything."""
    from deniable.analysis import estimators as est
    from deniable.client import Survey

    question = Survey.from_dict({"id": "v", "title": "v", "questions": [
        {"id": "q", "type": "choice", "text": "?", "options": [f"o{i}" for i in range(k)],
         "privacy": {"design": "k_rr", "epsilon": epsilon}}]}).questions["q"]
    q = channels.channel_matrix(question.mechanism)
    rng = np.random.default_rng(k)
    pi = rng.dirichlet(np.ones(k))
    pi[0] = 0.0
    pi /= pi.sum()
    counts = rng.multinomial(5000, q @ pi)
    inverse = np.linalg.inv(q)
    rates = q @ pi
    dense = inverse @ (np.diag(rates) - np.outer(rates, rates)) @ inverse.T
    assert channels.marginal_channel(q) is not None
    assert np.allclose(channels.fitted_covariance(q, pi), dense, atol=1e-12)
    observed = counts / counts.sum()
    estimate, spread = est.unbiased(q, counts)
    covariance = spread.matrix()
    assert np.allclose(estimate, inverse @ observed, atol=1e-10)
    assert np.allclose(covariance, inverse @ (np.diag(observed) - np.outer(observed, observed)) @ inverse.T / counts.sum(),
                       atol=1e-12)
    assert np.allclose(spread.variances(), np.diag(covariance), atol=1e-12)
    # The estimate's own columns take the closed forms too (O(k)): each equals the dense route at its fit.
    from deniable.analysis.from_counts import estimate_counts

    result = estimate_counts(question.mechanism, counts, 0.95, None, "q", scores=np.arange(k, dtype=float))
    fitted = q @ result.table["estimate"].to_numpy()
    fitted_dense = inverse @ (np.diag(fitted) - np.outer(fitted, fitted)) @ inverse.T / counts.sum()
    assert np.allclose(result.covariance, fitted_dense, atol=1e-12)
    assert np.allclose(result.table["se"], np.sqrt(np.clip(np.diag(fitted_dense), 0, None)), atol=1e-12)
    assert np.allclose(result.table["unbiased"], inverse @ observed, atol=1e-10)
    assert np.allclose(result.table["unbiased_se"], np.sqrt(np.diag(covariance)), atol=1e-12)
    scores = np.arange(k, dtype=float)
    if k > 2:  # two options are a yes/no question: no mean
        assert result.mean.unbiased_se == pytest.approx(math.sqrt(scores @ covariance @ scores), rel=1e-9)


@pytest.mark.parametrize("k, epsilon", [(2, "ln 3"), (3, 0.1), (3, 0.25), (10, 1), (100, "ln 3"), (1000, 2)])
def test_k_ary_maximum_likelihood_in_closed_form_is_the_iterative_maximiser_s(k, epsilon):
    """Water-filling over the sorted counts gives the k-ary channel's maximum on the simplex: it meets the KKT
    conditions (checked by `certify`, independent of how it was found) and equals what the iterative maximiser
    reaches from the uniform start; `certified_maximum` starts there and stops at once."""
    from deniable.analysis import likelihood

    q = channels.channel_matrix(_question("choice", options=[f"o{i}" for i in range(k)],
                                          privacy={"design": "k_rr", "epsilon": epsilon}))
    marginal = channels.marginal_channel(q)
    rng = np.random.default_rng(k)
    skewed = 0.5 ** np.arange(k)
    cases = [rng.multinomial(n, q @ (truth / truth.sum())) for n in (1, 7, 200, 20_000)
             for truth in (np.ones(k), skewed, np.eye(k)[-1])]
    cases += [np.eye(k, dtype=int)[0], np.full(k, 3)]  # one report in all; every count equal
    for counts in cases:
        closed = marginal.simplex_maximum(counts)
        assert closed.min() >= 0 and closed.max() <= 1 and closed.sum() == pytest.approx(1, abs=1e-12)
        assert likelihood.certify(q, counts, closed).converged
        assert likelihood.certified_maximum(q, counts)[1].iterations == 0
        if k > 100:
            continue  # the iterative route takes seconds per fit at k = 1000: the certificate alone there
        iterative, certificate = likelihood.maximise(q, counts, start=np.full(k, 1 / k))
        assert certificate.converged
        assert likelihood.loglikelihood(q, counts, closed) >= likelihood.loglikelihood(q, counts, iterative) - 1e-9
        assert closed == pytest.approx(iterative, abs=1e-6)


@pytest.mark.parametrize("k, epsilon", [(3, 0.25), (10, 1), (100, "ln 3"), (1000, 2), (5, "public")])
def test_k_ary_estimates_are_worked_from_the_channel_s_two_numbers(k, epsilon, monkeypatch):
    """k-ary randomized response and public choices never write out their k × k matrix: the certificate, the fit test
    and the covariance computed from (p, o) are the dense route's on the written-out matrix, number for number."""
    from deniable.analysis import fit, likelihood
    from deniable.analysis.from_counts import estimate_counts

    privacy = "none" if epsilon == "public" else {"design": "k_rr", "epsilon": epsilon}
    mechanism = _question("choice", options=[f"o{i}" for i in range(k)], privacy=privacy)
    q = channels.channel_matrix(mechanism)
    symmetric = channels.symmetric_channel(mechanism)
    assert (symmetric.p, symmetric.q) == (channels.marginal_channel(q).p, channels.marginal_channel(q).q)
    rng = np.random.default_rng(k)
    cases = [rng.multinomial(n, q @ (truth / truth.sum())) for n in (1, 7, 200, 20_000)
             for truth in (np.ones(k), 0.5 ** np.arange(k), np.eye(k)[-1])]
    cases += [np.eye(k, dtype=int)[0], np.full(k, 3)]
    for counts in cases:
        pi, certificate = likelihood.symmetric_maximum(symmetric, counts)
        dense = likelihood.certify(q, counts, pi)
        assert certificate.converged and certificate.unique is dense.unique is True
        assert certificate.kkt_residual == pytest.approx(dense.kkt_residual, abs=1e-13)
        assert certificate.optimality_gap == pytest.approx(dense.optimality_gap, abs=1e-9)
        structured, written = fit.symmetric_test(symmetric, counts, pi), fit.saturated_test(q, counts, pi)
        assert (structured.df, structured.method) == (written.df, written.method)
        assert structured.statistic == pytest.approx(written.statistic, abs=1e-9)
        assert structured.pvalue == pytest.approx(written.pvalue, abs=1e-9)
    def refuse(_):
        raise AssertionError("the k × k channel was written out")

    monkeypatch.setattr(channels, "channel_matrix", refuse)
    for counts in cases:
        result = estimate_counts(mechanism, counts, 0.95, None, "q")
        assert result.certificate.converged
    n = counts.sum()
    expected = channels.fitted_covariance(q, result.table["estimate"].to_numpy()) / n
    np.testing.assert_allclose(result.covariance, expected, atol=1e-15)  # written out when read, and then kept
    assert result.covariance is result.covariance


def test_a_closed_form_its_certificate_refuses_goes_to_the_dense_maximiser(monkeypatch):
    from deniable.analysis import likelihood
    from deniable.analysis.from_counts import estimate_counts

    mechanism = _question("choice", options=list("abcde"), privacy={"design": "k_rr", "epsilon": 1})
    counts = np.array([40, 25, 20, 10, 5])
    right = channels.symmetric_channel(mechanism).simplex_maximum(counts)
    monkeypatch.setattr(channels.BinaryChannel, "simplex_maximum", lambda self, c: np.full(len(c), 1 / len(c)))
    assert likelihood.symmetric_maximum(channels.symmetric_channel(mechanism), counts) is None
    result = estimate_counts(mechanism, counts, 0.95, None, "q")
    assert result.certificate.converged and result.certificate.iterations > 0
    np.testing.assert_allclose(result.table["estimate"], right, atol=1e-8)


def test_a_note_names_a_few_answers_outside_and_counts_the_rest():
    from deniable.analysis.from_counts import NOTE_NAMES, estimate_counts

    k = 1000
    mechanism = _question("choice", options=[f"o{i}" for i in range(k)], privacy={"design": "k_rr", "epsilon": 2})
    counts = np.zeros(k, dtype=int)
    counts[:3] = [5000, 3000, 2000]  # every answer's unbiased share is outside: above 1 for three, below 0 for the rest
    result = estimate_counts(mechanism, counts, 0.95, None, "q")
    assert ((result.table["unbiased"] < 0) | (result.table["unbiased"] > 1)).all()
    note, = (note for note in result.notes if "lies outside" in note)
    named = ", ".join(f"o{i}" for i in range(NOTE_NAMES))
    assert f"the unbiased estimate of {named} and {k - NOTE_NAMES} other answers lies outside [0, 1]" in note


def test_each_estimate_table_has_an_index_of_its_own():
    """The answers' Index is built once per question and each table gets a view of it: naming one table's index or
    columns must not rename another's."""
    from deniable.analysis.from_counts import estimate_counts

    mechanism = _question("choice", options=list("abcd"), privacy={"design": "k_rr", "epsilon": 1})
    first, second = (estimate_counts(mechanism, np.array(counts), 0.95, None, "q") for counts in ([5, 1, 2, 0], [1, 1, 1, 1]))
    first.table.index.name, first.table.columns.name = "renamed", "renamed"
    assert (second.table.index.name, second.table.columns.name) == ("answer", None)
    assert (estimate_counts(mechanism, np.array([2, 2, 0, 1]), 0.95, None, "q").table.index.name) == "answer"


def test_clopper_pearson_rates_per_distinct_count_are_scipy_s_beta_quantiles():
    from scipy import stats

    from deniable.analysis import estimators as est

    rng = np.random.default_rng(3)
    for counts in (rng.integers(0, 40, 1000), np.array([0, 3, 3, 17, 40]), np.array([40] * 70 + [0] * 70)):
        low, high = est.clopper_pearson_rates(counts, 40, 0.9)
        with np.errstate(invalid="ignore", divide="ignore"):
            expected_low = np.where(counts == 0, 0.0, stats.beta.ppf(0.05, counts, 40 - counts + 1))
            expected_high = np.where(counts == 40, 1.0, stats.beta.isf(0.05, counts + 1, 40 - counts))
        np.testing.assert_allclose(low, expected_low, rtol=1e-14, atol=0)  # to an ulp or two
        np.testing.assert_allclose(high, expected_high, rtol=1e-14, atol=0)
    assert est.clopper_pearson_rates(0, 10, 0.95)[0] == 0 and est.clopper_pearson_rates(10, 10, 0.95)[1] == 1


def test_public_choice_maximum_is_the_observed_shares():
    q = channels.channel_matrix(_shape("public choice"))
    counts = np.array([3, 0, 1])
    assert channels.marginal_channel(q).simplex_maximum(counts) == pytest.approx([0.75, 0, 0.25])


@pytest.mark.parametrize("spec", [
    {"type": "number", "min": 0, "max": 40, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
    {"type": "ordinal", "options": list("abcdefg"), "privacy": {"design": "ordinal", "epsilon": 2}},
])
def test_the_unbiased_covariance_is_the_sandwich_written_out(spec):
    """`estimators.unbiased` forms Q⁺(diag λ − λλᵀ)Q⁺ᵀ without the reports × reports matrix; held here to the product
    written out."""
    from deniable.analysis import estimators as est

    spec = dict(spec)
    mechanism = _question(spec.pop("type"), **spec)
    q = channels.channel_matrix(mechanism)
    counts = np.random.default_rng(2).multinomial(700, q @ np.random.default_rng(3).dirichlet(np.ones(q.shape[1])))
    estimate, spread = est.unbiased(q, counts)
    inverse, rates = channels.left_inverse(q), counts / counts.sum()
    assert estimate == pytest.approx(inverse @ rates, rel=1e-12, abs=1e-12)
    written_out = inverse @ ((np.diag(rates) - np.outer(rates, rates)) / counts.sum()) @ inverse.T
    assert spread.matrix() == pytest.approx(written_out, rel=1e-9, abs=1e-12 * np.abs(written_out).max())
    # What the estimates read of it, each share's variance and a functional's, without the matrix.
    assert spread.variances() == pytest.approx(np.diag(written_out), rel=1e-9, abs=1e-12 * np.abs(written_out).max())
    functional = np.arange(q.shape[1], dtype=float)
    assert spread.variance(functional) == pytest.approx(functional @ written_out @ functional, rel=1e-9)


def test_a_long_grid_s_unbiased_mean_variance_is_exact_to_round_off():
    """The unbiased mean's variance of a 0..1000 grid, Σ_r (Q⁺ᵀg)_r² λ_r − (gᵀπ̂)² over n, read without the k × k
    covariance: within 1e-12 of the same sum in extended precision, where the quadratic form of the written-out matrix
    (Q⁺'s entries reach thousands, of both signs) was 1.4e-6 off."""
    from deniable.analysis import estimators as est

    mechanism = _question("number", min=0, max=1000, step=1, privacy={"design": "laplace", "epsilon": 1})
    q = channels.channel_matrix(mechanism)
    rng = np.random.default_rng(8)
    counts = rng.multinomial(10_000, q @ rng.dirichlet(np.full(q.shape[1], 0.3)))
    _, spread = est.unbiased(q, counts)
    grid = np.arange(q.shape[1], dtype=float)
    pulled = grid.astype(np.longdouble) @ channels.left_inverse(q).astype(np.longdouble)
    rates = (counts / counts.sum()).astype(np.longdouble)
    extended = float(((pulled * pulled) @ rates - (pulled @ rates) ** 2) / counts.sum())
    assert spread.variance(grid) == pytest.approx(extended, rel=1e-12)


def _mirrored_cases():
    rng = np.random.default_rng(0)
    for points, epsilon, repeated in [(1, 1, None), (2, 0.5, None), (3, 2, None), (10, 1, None), (41, 0.5, None),
                                      (100, 1, None), (4, 1, True), (7, 1, {"instant_epsilon": 2})]:
        mechanism = _question("number", repeated, min=0, max=points, step=1, privacy={"design": "laplace", "epsilon": epsilon})
        yield f"number 0..{points}, ε = {epsilon}, repeated: {repeated}", channels.channel_matrix(mechanism)
    for rows, columns in [(7, 3), (8, 4), (7, 4), (8, 3), (9, 5)]:
        block = rng.random((rows, columns))
        yield f"random {rows} × {columns}", block + block[::-1, ::-1]
    column = rng.random(8)
    yield "rank 2 of 4", np.column_stack([column, column, column[::-1], column[::-1]])


@pytest.mark.parametrize("name, matrix", list(_mirrored_cases()), ids=lambda value: value if isinstance(value, str) else "")
def test_a_mirrored_channel_s_left_inverse_is_numpy_s_pseudo_inverse(name, matrix):
    """A number's channel is unchanged when reports and answers are both reversed: its pseudo-inverse is taken from two
    half-size blocks (`channels._mirrored_pinv`), and must be numpy's own, to round-off relative to the condition
    number (odd and even sizes, a panel's composite, a rank-deficient matrix whose cut singular values pinv drops)."""
    assert np.array_equal(matrix, matrix[::-1, ::-1])
    singular = np.linalg.svd(matrix, compute_uv=False)
    condition = singular[0] / singular[singular > 1e-15 * singular[0]][-1]
    expected = np.linalg.pinv(matrix)
    found = channels.left_inverse(matrix)
    assert np.abs(found - expected).max() <= 1e-15 * condition * 100 * np.abs(expected).max(), name


@pytest.mark.parametrize("repeated", [None, {"instant_epsilon": 2}])
@pytest.mark.parametrize("top, epsilon", [(250, 1), (400, 0.2), (1000, 3)])
def test_a_long_number_grid_is_applied_through_its_structure(top, epsilon, repeated):
    """Q·x and Qᵀ·w through the recursions equal the written-out matrix's, for one vector and a batch, with and
    without a panel's instantaneous layer; the matrix is read-only (the structure describes it for as long as it
    lives), and what is cut from it, or a short grid, has no structure."""
    mechanism = _question("number", repeated, min=0, max=top, step=1,
                          privacy={"design": "laplace", "epsilon": epsilon})
    q = channels.channel_matrix(mechanism)
    structure = channels.structure(q)
    assert structure is not None and not q.flags.writeable
    rng = np.random.default_rng(top)
    answers, reports = rng.dirichlet(np.full(q.shape[1], 0.3), size=3), rng.random((3, q.shape[0]))
    reports[:, rng.random(q.shape[0]) < 0.5] = 0.0  # unobserved reports weigh nothing in a gradient
    np.testing.assert_allclose(structure.matvec(answers), answers @ q.T, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(structure.rmatvec(reports), reports @ q, rtol=1e-12)
    np.testing.assert_allclose(structure.matvec(answers[0]), q @ answers[0], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(structure.rmatvec(reports[0]), reports[0] @ q, rtol=1e-12)
    counts = rng.multinomial(3000, q @ answers[0]).astype(float)
    vertices = structure.vertex_loglikelihoods(counts)  # every point mass's log-likelihood, from running sums
    if repeated is None:
        np.testing.assert_allclose(vertices, counts @ np.log(q), rtol=1e-13)
    else:
        assert vertices is None  # a layered channel's entries are sums: the matrix's logarithms are read instead
    some, rows = np.sort(rng.choice(q.shape[1], 40, replace=False)), np.flatnonzero(counts)
    rows = np.union1d(rows, [0, q.shape[0] - 1])  # the folded tails among them
    np.testing.assert_array_equal(structure.columns(some, rows), q[rows[:, None], some])
    np.testing.assert_array_equal(channels.columns(q, some), q[:, some])
    # The curvature a block of reports at a time (a few blocks here) is the written-out matrix's, to round-off.
    from deniable.analysis import likelihood

    rates = (q @ answers[0])[counts > 0]
    monkeypatched, likelihood.CURVATURE_BLOCK = likelihood.CURVATURE_BLOCK, 40 * 200
    try:
        blocked = likelihood._Problem(structure, counts).curvature(some, rates)
    finally:
        likelihood.CURVATURE_BLOCK = monkeypatched
    written = q[counts > 0][:, some] * (np.sqrt(counts[counts > 0]) / rates)[:, None]
    np.testing.assert_allclose(blocked, written.T @ written, rtol=1e-10, atol=1e-12 * np.abs(blocked).max())
    with pytest.raises(ValueError):
        q[0, 0] = 1.0
    assert channels.structure(q[1:]) is None and channels.structure(q.copy()) is None
    assert channels.channel_matrix(mechanism) is q  # remembered: the next estimate writes nothing out
    short = channels.channel_matrix(_question("number", repeated, min=0, max=100, step=1,
                                              privacy={"design": "laplace", "epsilon": epsilon}))
    assert channels.structure(short) is None


@pytest.mark.parametrize("points, epsilon, keep", [(3, 0.5, 1.0), (40, 1, 1.0), (300, 2, 1.0), (260, 2, 0.7)])
def test_a_structure_s_unbiased_estimate_is_a_left_inverse_read_without_writing_it_out(points, epsilon, keep):
    """A grid too long to write out takes its unbiased estimate from its structure: the reports outside the grid merged
    into its two ends (their rows are multiples of the end's), then the tridiagonal inverse of the block of the reports
    0..N, O(N). Written out here: L·Q = I (with a panel's layer undone), so it is unbiased, and each share's variance
    and a functional's read from the structure equal L(diag λ − λλᵀ)Lᵀ/n's."""
    from deniable.analysis import estimators as est

    other = (1 - keep) / (3 * points)  # a panel's layer: the other reports share what is not kept
    structure = channels.FoldedGeometric(math.exp(-epsilon / points), points, keep, other)
    q = structure.columns(np.arange(points + 1))
    reports = q.shape[0]
    offset = structure.unbiased(np.zeros(reports))  # the constant a layer's "other" leaves
    left = np.column_stack([structure.unbiased(unit) - offset for unit in np.eye(reports)])
    np.testing.assert_allclose(left @ (q - other), np.eye(points + 1), atol=1e-9)  # L(Q − other) = I
    rng = np.random.default_rng(points)
    truth = rng.dirichlet(np.full(points + 1, 0.5))
    np.testing.assert_allclose(structure.unbiased(q @ truth), truth, atol=1e-9)
    counts = rng.multinomial(2_000, q @ truth)
    estimate, spread = est.unbiased(structure, counts)
    rates = counts / counts.sum()
    np.testing.assert_allclose(estimate, left @ rates + offset, rtol=1e-9, atol=1e-9)
    written_out = (left @ np.diag(rates) @ left.T - np.outer(left @ rates, left @ rates)) / counts.sum()
    # Round-off bounds of the written-out L(diag λ − λλᵀ)Lᵀ/n: each term carries about one unit of round-off per
    # report summed (γ_R ≈ R·eps) of the absolute terms, which the left inverse's large alternating entries make far
    # larger than the variance itself on an ill-conditioned grid (a fixed 1e-7 held on one BLAS and not on another).
    unit = 4 * reports * np.finfo(float).eps / counts.sum()
    magnitudes = np.abs(left) ** 2 @ rates + (np.abs(left) @ rates) ** 2
    assert (np.abs(spread.variances() - np.diag(written_out)) <= unit * magnitudes).all()
    grid = np.arange(points + 1, dtype=float)
    absolute = np.abs(left).T @ grid
    roundoff = unit * (absolute**2 @ rates + (absolute @ rates) ** 2)
    assert abs(spread.variance(grid) - grid @ written_out @ grid) <= roundoff


def test_a_structure_s_unbiased_mean_is_unbiased_with_the_stated_spread():
    """Known truth, 2,000 simulated surveys of a 0..200 grid read through its structure alone: the unbiased mean
    averages to the truth's within 3 Monte Carlo SEs, and its SD is within 6% of the stated one."""
    from deniable.analysis import estimators as est

    structure = channels.FoldedGeometric(math.exp(-1 / 200), 200)
    q = structure.columns(np.arange(201))
    rng = np.random.default_rng(11)
    truth = rng.dirichlet(np.full(201, 0.3))
    grid = np.arange(201, dtype=float)
    surveys = rng.multinomial(3_000, q @ truth, size=2_000)
    means = surveys / 3_000 @ structure.unbiased(np.eye(q.shape[0])) @ grid  # the estimate is linear in the shares
    stated = math.sqrt(est.LinearSpread(structure, q @ truth, 3_000).variance(grid))
    assert abs(means.mean() - grid @ truth) < 3 * means.std() / math.sqrt(len(means))
    assert means.std(ddof=1) == pytest.approx(stated, rel=0.06)


def test_a_grid_longer_than_the_written_out_limit_is_its_structure_alone(monkeypatch):
    """Up to `WRITTEN_OUT_POINTS` a number's channel is a matrix; past it (the spec's own limit raised here) its
    structure, never written out."""
    monkeypatch.setattr(mechanisms, "MAX_GRID_POINTS", 20_001)
    longest = channels.channel_matrix(_question("number", min=0, max=channels.WRITTEN_OUT_POINTS - 1, step=1,
                                                privacy={"design": "laplace", "epsilon": 1}))
    longer = channels.channel_matrix(_question("number", min=0, max=channels.WRITTEN_OUT_POINTS, step=1,
                                               privacy={"design": "laplace", "epsilon": 1}))
    assert isinstance(longest, np.ndarray) and longest.shape[1] == channels.WRITTEN_OUT_POINTS
    assert isinstance(longer, channels.FoldedGeometric) and longer.shape == (3 * 1001 + 1, 1002)


def _restricted_inverse_information(q: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """The fit's covariance for one respondent, I⁻¹ − I⁻¹11ᵀI⁻¹/(1ᵀI⁻¹1) with I = Qᵀdiag(1/Qπ)Q, written out independently
    of `channels`: the information built in extended precision and its float inverse refined there (Newton–Schulz), so
    it is good to far below the float inverse's own 10⁻⁹ on these ill-conditioned channels."""
    extended = q.astype(np.longdouble)
    information = extended.T @ (extended / (extended @ pi.astype(np.longdouble))[:, None])
    inverse = np.linalg.inv(information.astype(float)).astype(np.longdouble)
    identity = np.eye(len(pi), dtype=np.longdouble)
    for _ in range(4):
        inverse = inverse + inverse @ (identity - information @ inverse)
    through_ones = inverse.sum(axis=1)
    return inverse - np.outer(through_ones, through_ones) / through_ones.sum()  # extended: its forms cancel


@pytest.mark.parametrize("points, epsilon, keep", [(3, 0.5, 1.0), (40, 1, 1.0), (120, 2, 1.0), (60, 1, 0.7)])
def test_a_structure_s_inverse_information_is_read_without_writing_it_out(points, epsilon, keep):
    """The maximum-likelihood fit's covariance (the inverse information restricted to the simplex) through a number's
    structure, O(N): every row outside the grid is a multiple of an end's row (plus a panel's constant, which only
    moves the information along 1, where the simplex does not look), so it is κ²·T·D·T there, with T⁻¹ tridiagonal.
    Against the information written out and inverted in extended precision, at a lumpy fit with shares near 0: each
    share's variance, a functional's and the whole matrix (its estimators' reading too), to 10⁻¹¹ of the largest entry
    (the float inverse of the written-out information, `channels.fitted_covariance` of a matrix, is 3·10⁻⁹ off here)."""
    from deniable.analysis import estimators as est

    other = (1 - keep) / (3 * points)
    structure = channels.FoldedGeometric(math.exp(-epsilon / points), points, keep, other)
    q = structure.columns(np.arange(points + 1))
    pi = np.random.default_rng(points).dirichlet(np.full(points + 1, 0.3))
    extended = _restricted_inverse_information(q, pi)
    exact, scale = extended.astype(float), float(np.abs(extended).max())
    grid = np.arange(points + 1, dtype=float)
    mean_variance = float(grid @ extended @ grid)
    np.testing.assert_allclose(structure.fitted_covariance(pi), exact, rtol=0, atol=1e-11 * scale)
    np.testing.assert_allclose(channels.fitted_variances(structure, pi), np.diag(exact), rtol=0, atol=1e-11 * scale)
    assert channels.fitted_variance(structure, pi, grid) == pytest.approx(mean_variance, rel=1e-11)
    reading = est.fitted_spread(structure, pi, 500)
    assert isinstance(reading, est.InverseInformation)
    assert reading.variance(grid) == pytest.approx(mean_variance / 500, rel=1e-11)
    np.testing.assert_allclose(reading.matrix(), exact / 500, rtol=0, atol=1e-11 * scale / 500)
    np.testing.assert_allclose(reading.variances(), np.diag(exact) / 500, rtol=0, atol=1e-11 * scale / 500)


def test_a_long_grid_s_inverse_information_is_read_through_its_structure():
    """A written-out channel that has a structure (0..1000) reads its inverse information through it (`fitted_variances`,
    `fitted_variance`, the estimators' reading): the figures of inverting the written-out information to that inverse's
    own accuracy (its condition is 6·10¹²), and of an independent route: at a fixed ε the channel is nearly the same
    kernel on a finer step, so the mean's SE grows as the grid's length."""
    from deniable.analysis import estimators as est

    q = channels.channel_matrix(_question("number", min=0, max=1000, step=1, privacy={"design": "laplace", "epsilon": 1}))
    assert channels.structure(q) is not None
    pi = np.full(1001, 1 / 1001)
    grid = np.arange(1001, dtype=float)
    inverted = channels.fitted_covariance(q, pi)
    assert channels.fitted_variance(q, pi, grid) == pytest.approx(float(grid @ inverted @ grid), rel=1e-5)
    np.testing.assert_allclose(channels.fitted_variances(q, pi), np.diag(inverted), rtol=1e-4)
    assert isinstance(est.fitted_spread(q, pi, 100), est.InverseInformation)
    ratios = [s.fitted_variance(np.full(s.points + 1, 1 / (s.points + 1)), np.arange(s.points + 1.0)) / s.points**2
              for s in (channels.FoldedGeometric(math.exp(-1 / 500), 500), channels.structure(q),
                        channels.FoldedGeometric(math.exp(-1 / 2000), 2000))]
    assert max(ratios) / min(ratios) - 1 < 0.01
