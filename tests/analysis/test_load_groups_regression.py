import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from deniable.analysis import LoadError, compare, estimate, load, logistic, subgroup_frame, subgroups
from deniable.analysis.validation import regression_study
from deniable.client import Survey
from deniable.server import create_app, storage
from deniable.server.demo import TRUTH
from tests.conftest import EXAMPLES


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
    import threading

    from werkzeug.serving import make_server

    app = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": "admin"})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
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
    finally:
        server.shutdown()


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
