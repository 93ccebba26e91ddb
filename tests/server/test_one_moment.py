"""A loaded survey, and an export, are one moment of the database while responses keep arriving: the answers, the frame
rows they carry, the grouped counts and the number said all describe the same respondents (`analysis.stored`,
`Store.snapshot`). Fieldwork is exactly when a researcher watches the dashboard and runs estimates."""

import io
import json
import random
import threading

import pandas as pd
import pytest

from deniable import storage
from deniable.analysis import LoadError, SampleDesign, estimate, load, subgroups
from deniable.client import Survey
from deniable.server.cli import main
from tests.conftest import EXAMPLES, SeededSource
from tests.server.conftest import ANSWERS

pytestmark = pytest.mark.both_engines

FRAME_SAMPLE = {"frame": ["stratum", "psu", "weight"], "weights": "weight", "strata": "stratum", "clusters": "psu"}
REGIONS = ["North", "South", "East", "West"]


def _framed() -> Survey:
    return Survey.from_dict({**Survey.from_file(EXAMPLES / "tax.yaml").to_dict(), "sample": FRAME_SAMPLE})


def _fielded(db_path, invitations: int = 300):
    """A framed survey with ``invitations`` tokens (2 strata × 6 PSUs), and a function that answers the next k."""
    survey = _framed()
    rows = [{"stratum": s, "psu": f"{s}{i % 6}", "weight": str(w)} for i in range(invitations)
            for s, w in [(("A", 2.0), ("B", 5.0))[i % 2]]]
    with storage.Store(db_path) as store:
        store.add_survey(survey)
        tokens = store.issue_tokens("tax", frame=rows)
    rng, coins, sent = random.Random(11), SeededSource(11), []

    def answer(store, k: int):
        for _ in range(k):
            i = len(sent)
            answers = {**ANSWERS, "dodged": rng.choice(["yes", "no"]), "region": rng.choice(REGIONS)}
            store.submit("tax", survey.hash, f"key-{i:05d}", survey.randomize(answers, rng=coins), tokens[i])
            sent.append(i)

    return survey, answer


def test_reads_after_the_load_see_the_responses_the_load_saw(db_path):
    survey, answer = _fielded(db_path)
    with storage.Store(db_path) as store:
        answer(store, 60)
    with load(db=db_path, survey_id="tax") as during:
        # Grouped counts by the database, read before anything arrives: what the rows of ``during`` must give later.
        with load(db=db_path, survey_id="tax") as reference:
            by_database = {level: reference.question_counts("dodged", by="region", level=level).tolist()
                           for level in reference.levels("region")}
        with storage.Store(db_path) as store:
            answer(store, 25)  # arrive after the load and before any of its rows are read
        with load(db=db_path, survey_id="tax") as after:
            assert after.n == 85
        assert during.n == 60
        assert len(during.frame()) == 60 and len(during.auxiliary()) == 60
        with storage.Store(db_path) as store:
            answer(store, 5)
        assert set(during.frame().index) == set(during.auxiliary().index)
        from_rows = {level: during.question_counts("dodged", by="region", level=level).tolist()
                     for level in during.levels("region")}
        assert from_rows == by_database and sum(map(sum, from_rows.values())) == 60
        # The design's figures: 60 responses, every one with its weight (the answers and the frame rows of one moment).
        assert estimate(during, "dodged", design=SampleDesign.of(survey)).n == 60
        domains = subgroups(during, "dodged", by="region", design=SampleDesign.of(survey))
        assert sum(result.n for result in domains.values()) == 60


def test_a_survey_closed_at_the_load_and_answered_after_says_load_again(db_path):
    _, answer = _fielded(db_path, invitations=40)
    with storage.Store(db_path) as store:
        answer(store, 20)
        store.close_survey("tax")
    with load(db=db_path, survey_id="tax") as data:
        with storage.Store(db_path) as store:
            store.reopen_survey("tax")
            answer(store, 3)
        with pytest.raises(LoadError, match="reopened.*load it again"):
            data.frame()


def test_loads_and_exports_while_responses_arrive_count_what_they_hold(db_path, runner, tmp_path):
    """A writer stores responses one by one while the test loads, estimates with the design and exports (CSV and JSON
    lines): each export's stated count equals the rows written and the rows read back, and each load's answers, frame
    rows and n agree."""
    survey, answer = _fielded(db_path, invitations=600)
    with storage.Store(db_path) as store:
        answer(store, 100)
    stop, failures = threading.Event(), []

    def write():
        try:
            with storage.Store(db_path, migrate=False) as store:
                while not stop.is_set() and len(failures) == 0:
                    answer(store, 1)
        except IndexError:  # every invitation answered
            pass
        except Exception as error:  # noqa: BLE001 - said by the test below
            failures.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    seen = []
    try:
        for attempt in range(4):
            with load(db=db_path, survey_id="tax") as data:
                result = estimate(data, "dodged", design=SampleDesign.of(survey))
                assert result.n == data.n == len(data.auxiliary()) == len(data.frame())
                seen.append(data.n)
            for fmt in ("csv", "jsonl"):
                target = tmp_path / f"tax-{attempt}.{fmt}"
                shown = runner.invoke(main, ["export", "tax", "--db", db_path, "--format", fmt, "--output", str(target)])
                assert shown.exit_code == 0, shown.output
                said = int(shown.stderr.split("Wrote ")[1].split(" responses")[0])
                if fmt == "csv":
                    written = pd.read_csv(target, dtype=str, keep_default_na=False)
                    assert len(written) == said and written["id"].is_unique
                    assert written["weight"].ne("").all()  # every row carries its frame row
                else:
                    lines = [json.loads(line) for line in io.StringIO(target.read_text()) if line.strip()]
                    assert len(lines) == said
                with load(str(target), spec=survey) as back:
                    assert back.n == said
                seen.append(said)
    finally:
        stop.set()
        writer.join()
    assert not failures, failures
    assert seen == sorted(seen) and seen[-1] > seen[0], seen  # responses did arrive while all this was read


@pytest.mark.sqlite_only
def test_a_roster_of_ids_of_any_lengths_reads_back_whole():
    from deniable.analysis.stored import _sorted_ids

    even = ["b" * 32, "a" * 32, "c" * 32]
    assert _sorted_ids(",".join(even), 3).tolist() == [s.encode() for s in sorted(even)]
    uneven = ["ab", "c", "abc"]  # 6 characters and commas over 3 ids, cut at fixed places, would be wrong
    assert _sorted_ids(",".join(uneven), 3).tolist() == [b"ab", b"abc", b"c"]
    assert _sorted_ids(",".join(even), 5).tolist() == [s.encode() for s in sorted(even)]  # a count off: split
    assert len(_sorted_ids("", 0)) == 0
