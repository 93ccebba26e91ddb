import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from deniable import storage
from deniable.analysis import LoadError, compare, estimate, load, logistic, subgroup_frame, subgroups
from deniable.client import Survey
from deniable.server import create_app
from deniable.server.demo import TRUTH
from tests.conftest import EXAMPLES
from tests.support.validation import regression_study


def test_sqlite_counts_agree_with_the_server_api(demo_db):
    data = load(db=demo_db, survey_id="tax")
    assert data.n == 4000
    app = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": "t"})
    api = app.test_client().get("/api/v1/surveys/tax/counts", headers={"Authorization": "Bearer t"}).json
    for qid in data.survey.questions:
        assert data.question_counts(qid).tolist() == [c["count"] for c in api["counts"][qid]]


def test_export_files_load_to_the_same_estimates(demo_db, tmp_path):
    with storage.Store(demo_db) as store:
        rows = list(store.export("tax"))
    jsonl = tmp_path / "tax.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from deniable.server.exports import export_csv

    record = storage.Store(demo_db).get_survey("tax")
    csv_path = tmp_path / "tax.csv"
    csv_path.write_text("".join(export_csv(record, iter(rows))))
    from_db = load(db=demo_db, survey_id="tax")
    for source in (load(jsonl, spec=EXAMPLES / "questionnaire.yaml"), load(csv_path, spec=EXAMPLES / "questionnaire.yaml")):
        assert source.n == 4000
        for qid in from_db.survey.questions:
            assert source.question_counts(qid).tolist() == from_db.question_counts(qid).tolist(), qid
        assert subgroups(source, "dodged", "region")["West"].n == subgroups(from_db, "dodged", "region")["West"].n


def test_load_from_a_running_server(demo_db, tmp_path):
    from tests.support.serving import served

    app = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": "admin"})
    with served(app) as base:
        remote = load(url=base, survey_id="tax", token="admin")
        local = load(db=demo_db, survey_id="tax")
        assert remote.n == local.n
        assert estimate(remote, "dodged").estimate.equals(estimate(local, "dodged").estimate)
        assert remote.levels("region") == local.levels("region")
        assert len(remote.frame(["dodged"])) == 4000
        with pytest.raises(LoadError, match="token rejected"):
            load(url=base, survey_id="tax", token="wrong")
        with pytest.raises(LoadError, match="admin endpoints need"):
            load(url=base, survey_id="tax", token=None)


def test_database_paths_with_awkward_characters(tmp_path, demo_db):
    import shutil

    odd = tmp_path / "a folder?#%" / "demo copy.db"
    odd.parent.mkdir()
    shutil.copy(demo_db, odd)
    assert load(db=odd, survey_id="tax").n == 4000


def test_load_errors_are_clear(tmp_path, demo_db):
    with pytest.raises(LoadError, match="no such database"):
        load(db=tmp_path / "missing.db", survey_id="tax")
    with pytest.raises(LoadError, match="no survey 'nope'"):
        load(db=demo_db, survey_id="nope")
    with pytest.raises(LoadError, match="needs its spec"):
        load(tmp_path / "x.csv")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "1", "spec_hash": "f" * 64, "reports": {"dodged": "yes"}}) + "\n")
    with pytest.raises(LoadError, match="randomized under"):
        load(other, spec=EXAMPLES / "questionnaire.yaml")


def test_subgroups_recover_the_simulated_truth(demo_db):
    data = load(db=demo_db, survey_id="tax")
    groups = subgroups(data, "dodged", "region")
    assert list(groups) == ["North", "South", "East", "West"]
    for region, result in groups.items():
        truth = TRUTH["dodged"][region]
        low, high = result.table.loc["yes", ["ci_low", "ci_high"]]
        assert low - 0.02 <= truth <= high + 0.02, region  # 4 intervals at 95%: allow a whisker
    frame = subgroup_frame(groups)
    assert frame.index.names == ["group", "answer"] and "n" in frame
    with pytest.raises(ValueError, match="group only by a public question"):
        subgroups(data, "cash", "dodged")


def test_compare_two_groups(demo_db):
    data = load(db=demo_db, survey_id="tax")
    result = compare(data, "dodged", "region", "West", "North")
    assert result.difference == pytest.approx(subgroups(data, "dodged", "region")["West"].estimate["yes"]
                                              - subgroups(data, "dodged", "region")["North"].estimate["yes"])
    assert result.pvalue < 0.01  # truth: 0.30 vs 0.10
    assert result.ci.low < TRUTH["dodged"]["West"] - TRUTH["dodged"]["North"] < result.ci.high
    with pytest.raises(ValueError, match="no responses in this group"):
        compare(data, "dodged", "region", "West", "Atlantis")


def test_logistic_with_an_identity_channel_is_ordinary_logit():
    rng = np.random.default_rng(3)
    x = pd.DataFrame({"age": rng.normal(size=800), "urban": rng.integers(0, 2, 800).astype(float)})
    truth = rng.random(800) < 1 / (1 + np.exp(-(-0.3 + 0.9 * x["age"] - 0.6 * x["urban"])))
    public = Survey.from_dict({"id": "s", "title": "t", "questions": [
        {"id": "q", "type": "yes_no", "text": "?", "privacy": "none"}]}).questions["q"]
    ours = logistic(public, np.where(truth, "yes", "no"), x)
    reference = sm.Logit(truth.astype(float), sm.add_constant(x).rename(columns={"const": "Intercept"})).fit(disp=False)
    assert list(ours.params.index) == ["Intercept", "age", "urban"]
    assert np.allclose(ours.params, reference.params, atol=1e-6)
    assert np.allclose(ours.bse, reference.bse, rtol=1e-4)
    assert "Intercept" in str(ours.summary())
    assert ours.conf_int().shape == (3, 2)


def test_logistic_recovers_known_coefficients_through_the_coin_flip():
    study = regression_study(reps=60, n=4000, seed=5)
    se_of_mean = study["sd"] / np.sqrt(study["reps"])
    assert np.all(np.abs(study["mean"] - study["beta"]) < 4.5 * se_of_mean + 0.02)
    assert np.all((study["mean se"] / study["sd"] > 0.75) & (study["mean se"] / study["sd"] < 1.33))
    assert np.all(study["coverage"] >= 0.85)


def test_logistic_input_errors():
    coin = Survey.from_file(EXAMPLES / "tax.yaml").questions["dodged"]
    cash = Survey.from_file(EXAMPLES / "tax.yaml").questions["cash"]
    x = pd.DataFrame({"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match="yes/no"):
        logistic(cash, ["Salary", "Other"], x)
    with pytest.raises(ValueError, match="differ in length"):
        logistic(coin, ["yes"], x)
    with pytest.raises(ValueError, match="'yes' or 'no'"):
        logistic(coin, ["yes", "maybe"], x)


@pytest.mark.slow
def test_compare_on_a_number_compares_means_and_covers_the_truth(tmp_path):
    """Two groups with true means 3 and 5 on a 0-10 number at ε = 2: over 40 simulated surveys the difference
    of means is unbiased and its 95% interval covers the truth about 95% of the time."""
    survey = Survey.from_dict({"id": "s", "title": "t", "questions": [
        {"id": "region", "type": "choice", "text": "?", "options": ["A", "B"], "privacy": "none"},
        {"id": "drinks", "type": "number", "text": "?", "min": 0, "max": 10, "step": 1,
         "privacy": {"design": "laplace", "epsilon": 2}}]})
    mechanism = survey.questions["drinks"].mechanism
    cumulative = np.cumsum([[float(p) for p in row] for row in mechanism.channel()], axis=0)
    reports = np.array(mechanism.reports)
    rng = np.random.default_rng(8)
    covered, differences = 0, []
    for rep in range(40):
        lines = []
        for group, share in (("A", 0.3), ("B", 0.5)):
            answers = rng.binomial(10, share, 500)
            drawn = reports[(rng.random(500) > cumulative[:, answers]).sum(axis=0)]
            lines += [json.dumps({"id": f"{group}{i}", "spec_hash": survey.hash,
                                  "reports": {"region": group, "drinks": int(value)}}) for i, value in enumerate(drawn)]
        path = tmp_path / f"rep{rep}.jsonl"
        path.write_text("\n".join(lines))
        result = compare(load(path, spec=survey), "drinks", "region", "B", "A")
        assert result.answer == "mean" and -10 <= result.ci.low <= result.ci.high <= 10
        assert result.difference == pytest.approx(result.results[0].mean.estimate - result.results[1].mean.estimate)
        covered += result.ci.low <= 2.0 <= result.ci.high
        differences.append(result.difference)
    assert covered / 40 >= 0.85
    assert abs(np.mean(differences) - 2.0) < 3 * np.std(differences) / np.sqrt(40) + 0.05
    shares = compare(load(path, spec=survey), "drinks", "region", "B", "A", answer=3)
    assert shares.answer == 3 and -1 <= shares.ci.low <= shares.ci.high <= 1


def test_ordinal_scales_have_a_mean_position_and_lead_with_it(demo_db):
    data = load(db=demo_db, survey_id="tax")
    result = data.estimate("fairness")
    assert result.mean is not None and list(result.scores) == [1, 2, 3, 4, 5]
    assert result.mean.estimate == pytest.approx(float(np.arange(1, 6) @ result.table["estimate"].to_numpy()))
    assert result.mean.ci.low <= result.mean.estimate <= result.mean.ci.high
    header = result.summary().as_text().splitlines()
    assert header[2].startswith("Mean: ") and "on 1–5" in header[2]
    by_mean = compare(data, "fairness", "region", "West", "North", answer="mean")
    assert -4 <= by_mean.ci.low <= by_mean.difference <= by_mean.ci.high <= 4


def _regression_file(tmp_path, privacy, n, seed):
    """A survey file of n respondents: drugs (yes/no, randomized by ``privacy``), region (public choice),
    age (public number), with drugs ~ Bernoulli(σ(−1 + 0.8·[South] − 0.5·[East] + 0.04·(age − 40)))."""
    survey = Survey.from_dict({"id": "s", "title": "t", "questions": [
        {"id": "drugs", "type": "yes_no", "text": "?", "privacy": privacy},
        {"id": "region", "type": "choice", "text": "?", "options": ["North", "South", "East"], "privacy": "none"},
        {"id": "age", "type": "number", "text": "?", "min": 18, "max": 90, "privacy": "none"}]})
    rng = np.random.default_rng(seed)
    region = rng.choice(["North", "South", "East"], n)
    age = rng.integers(18, 91, n)
    linear = -1 + 0.8 * (region == "South") - 0.5 * (region == "East") + 0.04 * (age - 40)
    truth = rng.random(n) < 1 / (1 + np.exp(-linear))
    mechanism = survey.questions["drugs"].mechanism
    keep = {a: float(mechanism.probability("yes", a)) for a in ("yes", "no")}
    reported = np.where(rng.random(n) < np.where(truth, keep["yes"], keep["no"]), "yes", "no")
    path = tmp_path / f"regression-{seed}.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"r{i}", "spec_hash": survey.hash, "reports": {
        "drugs": str(reported[i]), "region": str(region[i]), "age": int(age[i])}}) for i in range(n)))
    return load(path, spec=survey), pd.DataFrame({"drugs": reported, "region": region, "age": age})


def test_a_formula_with_categorical_covariates_matches_statsmodels_without_randomization(tmp_path):
    import statsmodels.formula.api as smf

    data, frame = _regression_file(tmp_path, "none", 3000, 4)
    ours = logistic("drugs ~ C(region) + age", data)
    frame["y"] = (frame["drugs"] == "yes").astype(float)
    frame["region"] = pd.Categorical(frame["region"], categories=["North", "South", "East"])  # the options' order
    reference = smf.logit("y ~ C(region) + age", frame).fit(disp=False)
    assert list(ours.params.index) == list(reference.params.index)  # the names statsmodels users know
    assert list(ours.params.index) == ["Intercept", "C(region)[T.South]", "C(region)[T.East]", "age"]
    assert np.allclose(ours.params, reference.params, atol=1e-6) and np.allclose(ours.bse, reference.bse, rtol=1e-4)
    plain = logistic("drugs ~ region + age", data)  # a choice question is categorical without C() too
    assert np.allclose(plain.params.to_numpy(), ours.params.to_numpy())


def test_a_formula_recovers_known_coefficients_through_the_coin_flip(tmp_path):
    data, _ = _regression_file(tmp_path, {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"},
                               20000, 5)
    fitted = logistic("drugs ~ C(region) + age", data)
    truth = {"Intercept": -1 - 0.04 * 40, "C(region)[T.South]": 0.8, "C(region)[T.East]": -0.5, "age": 0.04}
    low, high = fitted.conf_int(0.001).T.to_numpy()
    for (term, value), lo, hi in zip(truth.items(), low, high):
        assert lo <= value <= hi, (term, value, lo, hi)
    with pytest.raises(ValueError, match="drugs is randomized; covariates must be public"):
        logistic("drugs ~ drugs", data)
    with pytest.raises(ValueError, match="no question 'smoking'"):
        logistic("smoking ~ age", data)
    with pytest.raises(ValueError, match="outcome ~ covariates"):
        logistic("drugs + age", data)


def test_logistic_through_a_crosswise_outcome_recovers_known_coefficients():
    """The respondent randomized: the model of the 'same' report goes through the crosswise channel."""
    crosswise = Survey.from_dict({"id": "s", "title": "t", "questions": [
        {"id": "q", "type": "yes_no", "text": "?", "privacy": {"design": "crosswise", "companion": "Born in Jan-Mar?", "p": "1/6"}}]
    }).questions["q"]
    rng = np.random.default_rng(8)
    beta = np.array([-0.5, 0.8])
    estimates, ses = [], []
    for _ in range(30):
        x = pd.DataFrame({"age": rng.normal(size=3000)})
        truth = rng.random(3000) < 1 / (1 + np.exp(-(beta[0] + beta[1] * x["age"])))
        companion = rng.random(3000) < 1 / 6
        reports = np.where(truth == companion, "same", "different")
        fit = logistic(crosswise, reports, x)
        estimates.append(fit.params.to_numpy())
        ses.append(fit.bse.to_numpy())
    mean, sd = np.mean(estimates, axis=0), np.std(estimates, axis=0)
    assert np.all(np.abs(mean - beta) < 4 * sd / np.sqrt(30) + 0.02), (mean, beta)
    assert np.all((np.mean(ses, axis=0) / sd > 0.7) & (np.mean(ses, axis=0) / sd < 1.4))
    with pytest.raises(ValueError, match="'same' or 'different'"):
        logistic(crosswise, ["same", "yes"], pd.DataFrame({"a": [1.0, 2.0]}))


# --- separation: a coefficient at the boundary, and Firth's penalized fit ---------------------

def _separated(rng, n=600):
    """A forced-response outcome whose "gt5" group never has the sensitive answer: its reports are all the design's
    noise, so the best-fitting share there is exactly 0 and its coefficient runs off to −∞."""
    coin = Survey.from_file(EXAMPLES / "tax.yaml").questions["dodged"]
    x = pd.DataFrame({"gt5": (rng.random(n) < 0.3).astype(float), "age": rng.normal(size=n)})
    truth = np.where(x["gt5"] == 1, False, rng.random(n) < 0.5)
    reports = [coin.mechanism.randomize("yes" if t else "no", rng=_Source(rng)) for t in truth]
    # Make the separated group's reports fit a share of 0 exactly: no more "yes" than the design forces.
    forced_yes = float(coin.mechanism.channel()[0][1])  # P(report yes | answer no)
    group = np.flatnonzero(x["gt5"] == 1)
    allowed = int(np.floor(forced_yes * len(group) * 0.8))
    for count, i in enumerate(group):
        reports[i] = "yes" if count < allowed else "no"
    return coin, reports, x


class _Source:
    def __init__(self, rng):
        self.rng = rng

    def randbelow(self, n):
        return int(self.rng.integers(n))


def test_a_coefficient_at_the_boundary_is_named_and_firth_keeps_it_finite():
    from scipy import optimize

    from deniable.analysis import SeparationWarning
    from deniable.analysis.regression import FirthRandomizedLogit

    coin, reports, x = _separated(np.random.default_rng(8))
    with pytest.warns(SeparationWarning, match=r"separation: gt5 = -\d.*firth=True"):
        plain = logistic(coin, reports, x)
    assert plain.boundary_terms == ["gt5"] and plain.params["gt5"] < -10
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", SeparationWarning)
        penalized = logistic(coin, reports, x, firth=True)
    assert penalized.boundary_terms == [] and -10 < penalized.params["gt5"] < 0
    assert np.isfinite(penalized.bse).all() and (penalized.bse < 5).all()
    # Optimality: the penalized score is zero there, and an independent optimiser from elsewhere agrees.
    model = FirthRandomizedLogit(plain.model.endog, plain.model.exog, plain.model.p_yes, plain.model.q_yes)
    assert np.abs(model.score(penalized.params.to_numpy())).max() < 1e-4
    found = optimize.minimize(lambda b: -model.loglike(b), np.full(3, 0.5), method="Nelder-Mead",
                              options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 20000, "maxfev": 20000})
    assert found.x == pytest.approx(penalized.params.to_numpy(), abs=1e-3)


def test_firth_is_close_to_the_maximum_likelihood_fit_without_separation():
    rng = np.random.default_rng(9)
    coin = Survey.from_file(EXAMPLES / "tax.yaml").questions["dodged"]
    x = pd.DataFrame({"age": rng.normal(size=3000)})
    truth = rng.random(3000) < 1 / (1 + np.exp(-(-0.4 + 0.8 * x["age"])))
    reports = [coin.mechanism.randomize("yes" if t else "no", rng=_Source(rng)) for t in truth]
    plain, penalized = logistic(coin, reports, x), logistic(coin, reports, x, firth=True)
    assert plain.boundary_terms == []
    assert np.all(np.abs(plain.params - penalized.params) < 0.1 * plain.bse)
    assert penalized.bse.to_numpy() == pytest.approx(plain.bse.to_numpy(), rel=0.05)
