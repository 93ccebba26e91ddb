"""New responses to an open survey in one statement on PostgreSQL (one round trip where each waits on the network):
the same rows and running totals as the step-by-step path, and everything else (a retry, a closed survey, a token, a
quota, a repeated survey) still answered step by step, as before."""

import datetime as dt
import secrets
from concurrent.futures import ThreadPoolExecutor

import pytest

from deniable import storage
from tests.databases import ANSWERS

pytestmark = pytest.mark.both_engines


def statements(store, work):
    """The statements ``work()`` sends on the store's engine."""
    sent = []
    original = store.engine.execute

    def recording(sql, params=()):
        sent.append(sql.split()[0])
        return original(sql, params)

    store.engine.execute = recording
    try:
        work()
    finally:
        store.engine.execute = original
    return sent


def test_a_new_response_is_one_statement_once_the_version_is_known(store, survey, engine):
    store.submit("tax", survey.hash, "warm-up-key-0001", survey.randomize(ANSWERS))  # the version's record, remembered
    reports = survey.randomize(ANSWERS)
    sent = statements(store, lambda: store.submit("tax", survey.hash, "one-statement-01", reports))
    if engine == "postgresql":
        assert sent == ["WITH"]  # the survey checked open at that version inside the one statement
    else:
        assert "BEGIN" in sent and len(sent) > 2  # SQLite: in-process, step by step
    again = statements(store, lambda: store.submit("tax", survey.hash, "one-statement-01", reports))
    assert "INSERT" in again or engine == "sqlite"  # a key already used: answered step by step


def test_one_statement_and_step_by_step_store_the_same(db_path, store, survey, monkeypatch, engine):
    bodies = [survey.randomize(ANSWERS) for _ in range(30)]
    for i, reports in enumerate(bodies[:15]):
        store.submit("tax", survey.hash, f"fast-key-{i:04d}", reports)
    with monkeypatch.context() as slow:
        slow.setattr(storage.writes.Writes, "in_one_statement", lambda self, entries: False)
        for i, reports in enumerate(bodies[15:]):
            store.submit("tax", survey.hash, f"slow-key-{i:04d}", reports)
    rows = list(store.export("tax"))
    assert len(rows) == 30 and sorted(map(str, (r["reports"] for r in rows))) == sorted(map(str, bodies))
    counted = {qid: {str(c["report"]): c["count"] for c in cells if c["count"]}
               for qid, cells in store.counts("tax")["counts"].items()}
    expected: dict = {}
    for reports in bodies:
        for qid, report in reports.items():
            expected.setdefault(qid, {}).setdefault(str(report), 0)
            expected[qid][str(report)] += 1
    assert counted == expected and store.response_count("tax") == 30
    store.rebuild_counts()  # the running totals agree with the rows they count
    assert {qid: {str(c["report"]): c["count"] for c in cells if c["count"]}
            for qid, cells in store.counts("tax")["counts"].items()} == expected
    assert {r["received_on"] for r in rows} == {dt.datetime.now(dt.timezone.utc).date().isoformat()}


def test_retries_closed_surveys_and_week_dates_are_answered_as_before(store, survey):
    reports = survey.randomize(ANSWERS)
    first, created = store.submit("tax", survey.hash, "retry-key-00001", reports)
    again, created_again = store.submit("tax", survey.hash, "retry-key-00001", reports)
    assert created and not created_again and again == first
    with pytest.raises(storage.Invalid, match="already used for a different response"):
        store.submit("tax", survey.hash, "retry-key-00001", survey.randomize({**ANSWERS, "region": "North"}))
    store.set_received_on_granularity("week")
    today = dt.datetime.now(dt.timezone.utc).date()
    ack, _ = store.submit("tax", survey.hash, "week-key-000001", reports)
    assert ack["received_on"] == (today - dt.timedelta(days=today.weekday())).isoformat()
    store.close_survey("tax")
    with pytest.raises(storage.Gone):
        store.submit("tax", survey.hash, "after-close-0001", reports)
    assert store.submit("tax", survey.hash, "retry-key-00001", reports)[0] == first  # its answer, still


def test_a_group_of_concurrent_submissions_goes_in_one_statement(db_path, survey, engine):
    committer = storage.GroupCommit()
    stores = [storage.Store(db_path, migrate=False, group_commit=committer) for _ in range(8)]
    try:
        with ThreadPoolExecutor(8) as pool:
            outcomes = list(pool.map(lambda store: store.submit("tax", survey.hash, secrets.token_hex(16),
                                                                survey.randomize(ANSWERS)), stores))
        assert all(created for _, created in outcomes)
        assert stores[0].response_count("tax") == 8 and committer.responses == 8
    finally:
        for store in stores:
            store.close()


def test_a_remembered_version_lets_nothing_through_the_survey_no_longer_takes(store, survey):
    """The record remembered for the one statement is checked by it as it writes: a survey that has since closed,
    or now takes invitations only, refuses as it would have with the record read afresh; reopened, it takes them."""
    store.submit("tax", survey.hash, "remembered-0001", survey.randomize(ANSWERS))
    store.close_survey("tax")
    with pytest.raises(storage.Gone):
        store.submit("tax", survey.hash, "remembered-0002", survey.randomize(ANSWERS))
    store.reopen_survey("tax")
    assert store.submit("tax", survey.hash, "remembered-0003", survey.randomize(ANSWERS))[1]
    (token,) = store.issue_tokens("tax", count=1)
    with pytest.raises(storage.Invalid, match="needs the respondent token"):
        store.submit("tax", survey.hash, "remembered-0004", survey.randomize(ANSWERS))
    assert store.submit("tax", survey.hash, "remembered-0005", survey.randomize(ANSWERS), token=token)[1]
    assert store.response_count("tax") == 3
