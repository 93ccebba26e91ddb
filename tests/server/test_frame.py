"""The sampling frame travels with the invitation: a frame row per token (stratum, PSU, weight, public covariates the
spec declares), stored once per distinct row and carried by the response that token sends; `load()` gives the rows as
columns, every export holds them, and `deniable estimate` uses the spec's design with them. A row shared by fewer than
``min_cell`` invitations is refused (it would narrow a response to that few), and so is anything not declared."""

import io
import json
import random
import re

import pandas as pd
import pytest

from deniable import storage
from deniable.analysis import LoadError, SampleDesign, compare, estimate, load, subgroups
from deniable.client import Survey
from deniable.server.cli import main
from tests.conftest import EXAMPLES, SeededSource
from tests.server.conftest import ADMIN, ANSWERS, sign_in, table_rows

pytestmark = pytest.mark.both_engines

FRAME_SAMPLE = {"frame": ["stratum", "psu", "weight", "area"], "weights": "weight", "strata": "stratum",
                "clusters": "psu"}
#: stratum → its weight; 3 strata × 4 PSUs × 10 invitations (area is the PSU's, so a PSU's rows are one cell of 10)
STRATA = {"A": 1.5, "B": 3, "C": 6.25}


def _framed_survey() -> Survey:
    return Survey.from_dict({**Survey.from_file(EXAMPLES / "tax.yaml").to_dict(), "sample": FRAME_SAMPLE})


def _frame_rows() -> list[dict]:
    return [{"stratum": stratum, "psu": f"{stratum}{p}", "weight": str(weight), "area": f"area-{(p % 2) + 1}"}
            for stratum, weight in STRATA.items() for p in range(4) for _ in range(10)]


def _frame_csv(rows) -> str:
    out = io.StringIO()
    writer = __import__("csv").DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _answer(store, survey, tokens, rows, seed=3):
    """90 of the 120 invitations answer; a stratum's yes share differs. Returns {response id: its frame row}."""
    rng, coins = random.Random(seed), SeededSource(seed)  # seeded coins too: the figures compared are the same each run
    shares = {"A": 0.2, "B": 0.5, "C": 0.8}
    sent = {}
    for i in rng.sample(range(len(tokens)), 90):
        answers = {**ANSWERS, "dodged": "yes" if rng.random() < shares[rows[i]["stratum"]] else "no"}
        acknowledgement, _ = store.submit("tax", survey.hash, f"key-{i:04d}", survey.randomize(answers, rng=coins),
                                          tokens[i])
        sent[acknowledgement["id"]] = rows[i]
    return sent


def issue_with_frame(db_path, runner, tmp_path, survey, rows):
    """The survey stored and a token issued per frame row by `deniable tokens --frame`: (its result, the tokens)."""
    frame_file = tmp_path / "sample.csv"
    frame_file.write_text(_frame_csv(rows), encoding="utf-8")
    with storage.Store(db_path) as store:
        store.add_survey(survey)
    issued = runner.invoke(main, ["tokens", "tax", "--db", db_path, "--frame", str(frame_file)])
    assert issued.exit_code == 0, issued.output
    return issued, issued.stdout.split()


def test_a_frame_row_goes_with_each_invitation_to_its_response_and_into_the_design(db_path, runner, tmp_path):
    survey = _framed_survey()
    rows = _frame_rows()
    _, tokens = issue_with_frame(db_path, runner, tmp_path, survey, rows)
    assert len(tokens) == 120 and len(set(tokens)) == 120
    with storage.Store(db_path) as store:
        sent = _answer(store, survey, tokens, rows)
        cells = table_rows(store, "frame_cells")
        token_rows = table_rows(store, "tokens")
        responses = table_rows(store, "responses")
    # Stored once per distinct row (12 PSUs), nothing but the declared columns; every response's cell holds ≥ 5 tokens.
    assert len(cells) == 12 and all(set(json.loads(c["frame"])) == set(FRAME_SAMPLE["frame"]) for c in cells)
    per_cell = pd.Series([t["frame_cell"] for t in token_rows]).value_counts()
    assert per_cell.min() == 10 and all(per_cell[r["frame_cell"]] >= storage.MIN_CELL for r in responses)
    # A cell's tokens sit in one bitmap block: the block a response's bitmap write names holds its whole cell.
    blocks = pd.DataFrame(token_rows).assign(block=lambda t: t["slot"] // 1024).groupby("frame_cell")["block"].nunique()
    assert (blocks == 1).all()

    with load(db=db_path, survey_id="tax") as data:
        columns = data.auxiliary()
        assert set(columns.columns) == set(FRAME_SAMPLE["frame"]) and len(columns) == 90
        for response_id, row in sent.items():
            stored = columns.loc[response_id]
            assert (stored["stratum"], stored["psu"], stored["area"]) == (row["stratum"], row["psu"], row["area"])
            assert float(stored["weight"]) == float(row["weight"])
        by_spec = estimate(data, "dodged", design=SampleDesign.of(survey))
        # The same design from the test's own record of which response came from which row.
        truth = pd.DataFrame.from_dict(sent, orient="index")
        given = estimate(data, "dodged", design=SampleDesign(weights=truth["weight"].astype(float),
                                                             strata=truth["stratum"], clusters=truth["psu"]))
        plain = estimate(data, "dodged")
    assert by_spec.table["estimate"].to_numpy() == pytest.approx(given.table["estimate"].to_numpy(), abs=1e-12)
    assert by_spec.table["se"].to_numpy() == pytest.approx(given.table["se"].to_numpy(), rel=1e-12)
    assert by_spec.table["estimate"].iloc[0] != pytest.approx(plain.table["estimate"].iloc[0], abs=1e-3)

    # The CLI says which design it used and prints the same figures.
    shown = runner.invoke(main, ["estimate", "tax", "--db", db_path, "--question", "dodged", "--format", "csv"])
    assert shown.exit_code == 0, shown.output
    assert pd.read_csv(io.StringIO(shown.stdout))["se"].to_numpy() == pytest.approx(by_spec.table["se"].to_numpy(),
                                                                                    rel=1e-12)
    # The dashboard estimates with the spec's design too, its columns read from the frame.
    from deniable.server import create_app

    client = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "TESTING": True,
                         "RATELIMIT_ENABLED": False}).test_client()
    sign_in(client, ADMIN)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    assert "design-based: weights &#39;weight&#39;, strata &#39;stratum&#39;, clusters &#39;psu&#39;" in page
    status = runner.invoke(main, ["survey", "show", "tax", "--db", db_path, "--n", "10"])
    assert "Frame: 120 invitations in 12 distinct rows (the fewest share one: 10)" in status.output

    # Every export holds the frame columns (the codebook says what they are), and an export loads to the same figures.
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"export.{fmt}"
        assert runner.invoke(main, ["export", "tax", "--db", db_path, "--format", fmt, "--output", str(out)]).exit_code == 0
        from_file = estimate(load(out, spec=survey), "dodged", design=SampleDesign.of(survey))
        assert from_file.table["se"].to_numpy() == pytest.approx(by_spec.table["se"].to_numpy(), rel=1e-12)
    header = (tmp_path / "export.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[3:7] == FRAME_SAMPLE["frame"]
    book = tmp_path / "book.md"
    runner.invoke(main, ["export", "tax", "--db", db_path, "--format", "codebook", "--output", str(book)])
    assert "## Sample design" in book.read_text() and "- `psu`: primary sampling unit (cluster)" in book.read_text()
    pyreadstat = pytest.importorskip("pyreadstat")
    sav = tmp_path / "export.sav"
    assert runner.invoke(main, ["export", "tax", "--db", db_path, "--format", "sav", "--output", str(sav)]).exit_code == 0
    labelled, meta = pyreadstat.read_sav(str(sav))
    assert labelled["weight"].dtype.kind == "f" and set(labelled["stratum"]) == {"A", "B", "C"}
    assert meta.column_names_to_labels["psu"] == "[frame] primary sampling unit (cluster) of the invitation"


def _refusal(store, survey_id, frame, **options):
    with pytest.raises(storage.StorageError) as refused:
        store.issue_tokens(survey_id, frame=frame, **options)
    return refused.value


@pytest.mark.parametrize("change, field, words", [
    (lambda rows: [{**r, "email": "x@example.org"} for r in rows], "email", "not declared in the survey's sample.frame"),
    (lambda rows: [{**r, "area": "anna@example.org"} if i == 7 else r for i, r in enumerate(rows)], "area",
     "frame row 8: area holds 'anna@example.org', which looks like contact data"),
    (lambda rows: [{**r, "area": "+44 20 7946 0958"} if i == 0 else r for i, r in enumerate(rows)], "area",
     "looks like contact data"),
    (lambda rows: [{**r, "weight": "-2"} if i == 3 else r for i, r in enumerate(rows)], "weight",
     "frame row 4: weight (weights) must be a positive, finite number, got '-2'"),
    (lambda rows: [{**r, "weight": "nan"} for r in rows], "weight", "positive, finite"),
    (lambda rows: [{**r, "psu": ""} if i == 5 else r for i, r in enumerate(rows)], "psu", "frame row 6: no value in column 'psu'"),
    (lambda rows: [{**r, "token": "t" * 20} for r in rows], "token", "frame row 2: token is the same as frame row 1's"),
    (lambda rows: [{**r, "weight": f"{1 + i / 1000}"} for i, r in enumerate(rows)], "frame",
     "120 of 120 distinct rows are shared by fewer than 5 invitations"),
    (lambda rows: rows[:3] + rows[10:], "frame", "1 of 12 distinct rows are shared by fewer than 5 invitations, "
                                                   "e.g. row 1: stratum=A, psu=A0, weight=1.5, area=area-1 (3)"),
])
def test_a_bad_frame_is_refused_naming_the_row_and_the_column_and_nothing_is_stored(store, change, field, words):
    survey = _framed_survey()
    store.add_survey(survey)
    refused = _refusal(store, "tax", change(_frame_rows()))
    assert refused.field == field and words in refused.message, refused.message
    assert store.token_counts("tax") == {"issued": 0, "used": 0, "credentials": 0} and not table_rows(store, "frame_cells")


def test_frame_rules_min_cell_supplied_tokens_and_surveys_without_a_frame(store, demo):
    survey = _framed_survey()
    store.add_survey(survey)
    rows = _frame_rows()
    # A survey that declares a frame issues with one; below 2 a row could be unique to one invitation.
    with pytest.raises(storage.Invalid, match="declares a frame"):
        store.issue_tokens("tax", 10)
    assert _refusal(store, "tax", rows, min_cell=1).field == "min_cell"
    # A smaller cell is allowed when the researcher lowers the bound, and the row's own tokens are issued as given.
    small = [{**row, "token": f"own-token-{i:06d}-x"} for i, row in enumerate(rows[:3] + rows[10:])]
    issued = store.issue_tokens("tax", frame=small, min_cell=3)
    assert issued == [row["token"] for row in small]
    assert store.frame_summary("tax")["fewest_invitations"] == 3
    again = _refusal(store, "tax", [{**row, "token": f"own-token-{i:06d}-x"} for i, row in enumerate(rows[:5])])
    assert isinstance(again, storage.Conflict) and "already issued" in again.message
    # The same rows again join the cells they already have.
    store.issue_tokens("tax", frame=rows[:10])
    assert len(table_rows(store, "frame_cells")) == 12
    # A survey whose spec declares no frame refuses one.
    other = Survey.from_dict({**demo.to_dict(), "id": "plain"})
    store.add_survey(other)
    assert "declares no frame columns" in _refusal(store, "plain", rows).message


def test_the_api_and_the_dashboard_take_a_frame(client, store, admin_headers):
    survey = _framed_survey()
    store.add_survey(survey)
    rows = _frame_rows()
    answer = client.post("/api/v1/surveys/tax/tokens", json={"frame": rows}, headers=admin_headers)
    assert answer.status_code == 201 and len(answer.get_json()["tokens"]) == 120
    # Nothing of the frame reaches the respondent: the survey page and the spec it serves name no frame value.
    served = client.get(f"/s/tax?t={answer.get_json()['tokens'][0]}").get_data(as_text=True)
    served += client.get("/api/v1/surveys/tax").get_data(as_text=True)
    # Random identifiers (tokens, the form's CSRF value, hashes) may contain "A0" by chance: they are blanked first.
    served = __import__("re").sub(r"[A-Za-z0-9_-]{16,}", "", served)
    assert "area-1" not in served and "A0" not in served and "6.25" not in served
    refused = client.post("/api/v1/surveys/tax/tokens", json={"frame": [{**r, "phone_no": "1"} for r in rows]},
                          headers=admin_headers)
    assert refused.status_code == 422 and refused.get_json()["error"]["field"] == "phone_no"
    sign_in(client, ADMIN)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    assert 'name="frame" type="file"' in page
    csrf = __import__("re").search(r'name="csrf" value="([^"]+)"', page).group(1)
    shown = client.post("/admin/surveys/tax/tokens", content_type="multipart/form-data",
                        data={"csrf": csrf, "frame": (io.BytesIO(_frame_csv(rows[:20]).encode()), "sample.csv")})
    assert shown.status_code == 200 and shown.get_data(as_text=True).count("/s/tax?t=") == 20
    assert store.token_counts("tax")["issued"] == 140


def test_flagged_responses_are_left_out_under_the_spec_s_design(db_path, runner, tmp_path):
    """An attention or speed check with a frame: leaving the flagged responses out drops their frame rows too, so the
    design's columns match the responses kept (the frame's rows were read as a one-pass generator, and the estimate
    ended in a length mismatch), in `load()` and `deniable estimate --leave-out-flagged`."""
    survey = Survey.from_dict({**_framed_survey().to_dict(), "quality": {"section_times": True, "min_seconds": 60}})
    rows = _frame_rows()
    with storage.Store(db_path) as store:
        store.add_survey(survey)
        frame_file = tmp_path / "sample.csv"
        frame_file.write_text(_frame_csv(rows), encoding="utf-8")
        issued = runner.invoke(main, ["tokens", "tax", "--db", db_path, "--frame", str(frame_file)])
        tokens = issued.stdout.split()
        coins = SeededSource(5)
        for i, token in enumerate(tokens[:60]):
            seconds = 10 if i % 4 == 0 else 120  # every fourth speeds through: flagged
            store.submit("tax", survey.hash, f"key-{i:04d}", survey.randomize(ANSWERS, rng=coins), token,
                         paradata={"seconds": {"all": seconds}})
        assert store.quality_flags("tax")["flagged"] == 15
    with load(db=db_path, survey_id="tax", leave_out_flagged=True) as kept:
        columns = kept.auxiliary()
        assert kept.n == 45 and len(columns) == 45 and set(columns.columns) == set(FRAME_SAMPLE["frame"])
        result = estimate(kept, "dodged", design=SampleDesign.of(survey))
        assert result.n == 45
    shown = runner.invoke(main, ["estimate", "tax", "--db", db_path, "--question", "dodged", "--leave-out-flagged"])
    assert shown.exit_code == 0 and "Traceback" not in shown.output, shown.output
    assert "Left out: 15 responses flagged" in shown.output, shown.output


def test_a_frame_column_is_a_domain_wherever_a_public_question_is(store, client, runner, db_path):
    """subgroups, compare, --by and the dashboard's download group by a frame column (stratum, area) as by a public
    question; each says the groups are a column's. Without a design a group is its own sample: the same estimate as
    its responses loaded alone. With the design a stratum's point estimate is its own (its weight is one number) and
    its SE the domain's; a comparison of domains is a t test on the design's degrees of freedom."""
    survey = _framed_survey()
    rows = _frame_rows()
    store.add_survey(survey)
    tokens = store.issue_tokens("tax", frame=rows)
    sent = _answer(store, survey, tokens, rows)
    design = SampleDesign.of(survey)
    with load(db=db_path, survey_id="tax") as data:
        assert data.levels("stratum") == ["A", "B", "C"] and data.levels("area") == ["area-1", "area-2"]
        plain = subgroups(data, "dodged", by="stratum")
        domains = subgroups(data, "dodged", by="stratum", design=design)
        everything = data.frame().join(data.auxiliary())
        for stratum in STRATA:
            alone = everything[everything["stratum"] == stratum][list(survey.questions)]
            assert plain[stratum].n == sum(row["stratum"] == stratum for row in sent.values()) == len(alone)
            by_itself = estimate(load(alone, spec=survey), "dodged")
            assert plain[stratum].table["estimate"].tolist() == pytest.approx(by_itself.table["estimate"].tolist(),
                                                                              abs=1e-12)
            assert plain[stratum].table["se"].tolist() == pytest.approx(by_itself.table["se"].tolist(), abs=1e-12)
            assert domains[stratum].table["estimate"].tolist() == pytest.approx(plain[stratum].table["estimate"].tolist(),
                                                                                abs=1e-12)
            assert any("'stratum', a column of the data" in note for note in domains[stratum].notes)
        compared = compare(data, "dodged", "stratum", "A", "C", design=design)
        assert compared.df is not None and f"t = {compared.statistic:.3f} on {compared.df} df" in repr(compared)
        assert "z = " in repr(compare(data, "dodged", "area", "area-1", "area-2"))
        with pytest.raises(LoadError, match="no question or column 'nowhere'.*stratum"):
            subgroups(data, "dodged", by="nowhere")
    shown = runner.invoke(main, ["estimate", "tax", "--db", db_path, "--by", "stratum", "--question", "dodged"])
    assert shown.exit_code == 0, shown.output
    assert "dodged by stratum" in shown.output and "a column of the data" in shown.output
    sign_in(client)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    assert "by=stratum" in page and "stratum (frame)" in page
    # The plan is the design's, sized by the issued invitations' frame, with each question's realised effect beside it.
    assert "Design effect: planned / realised" in page and "from the invitations&#39; frame" in page
    cells = re.findall(r'class="design-effect">([0-9.]+) /\s*([0-9.]+|not yet)', page)
    assert len(cells) == len(survey.private_questions) and all(float(planned) > 1 for planned, _ in cells)
    assert all(realised != "not yet" for _, realised in cells[:1])  # dodged: estimated under the design
    download = client.get("/admin/surveys/tax/versions/1/estimates.csv?by=stratum")
    assert download.status_code == 200 and "by-stratum" in download.headers["Content-Disposition"]
    table = pd.read_csv(io.StringIO(download.get_data(as_text=True)))
    assert sorted(table["group"].unique()) == ["A", "B", "C"]
    refused = client.get("/admin/surveys/tax/versions/1/estimates.csv?by=cash")
    assert refused.status_code == 422 and "randomized" in refused.get_data(as_text=True)
