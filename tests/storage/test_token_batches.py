"""A batch to a token survey or a repeated one: every item judged exactly as one-by-one submission judges it, in a
number of statements that does not grow with the batch (one by one, a 1000-item batch made ~8,000 round trips on
PostgreSQL)."""

import secrets

import pytest

from deniable import storage
from deniable.client import Survey
from deniable.client.memo import Memo
from deniable.storage.errors import StorageError
from tests.conftest import EXAMPLES
from tests.databases import ANSWERS, table_rows

pytestmark = pytest.mark.both_engines


def _outcome(result):
    if isinstance(result, StorageError):
        return type(result).__name__, result.field
    acknowledgement, created = result
    return "stored", created, acknowledgement.get("wave")


def _mixed_batch(survey, tokens, used_before):
    """Items whose answers a one-by-one store must give: new tokens; an unknown token; a token spent earlier in the
    batch under another key; a token spent before the batch; a retry of a response stored before (its token spent,
    which a retry does not need again); the same key twice; no token; a key reused with other answers."""
    answers = survey.randomize(ANSWERS)
    items = [(survey.hash, f"new-{i:04d}-key", survey.randomize(ANSWERS), tokens[i]) for i in range(6)]
    items += [(survey.hash, "unknown-token-key", answers, "no-such-token"),
              (survey.hash, "again-token-key", answers, tokens[0]),
              (survey.hash, "spent-before-key", answers, used_before[1]),
              (survey.hash, "stored-before-key", used_before[2], used_before[0]),
              (survey.hash, "twice-in-batch", answers, tokens[6]),
              (survey.hash, "twice-in-batch", answers, tokens[6]),
              (survey.hash, "no-token-at-all", answers, None),
              (survey.hash, "twice-different", answers, tokens[7]),
              (survey.hash, "twice-different", survey.randomize({**ANSWERS, "dodged": "no"}), tokens[8])]
    return items


def _prepared_store(db_path, survey):
    store = storage.Store(db_path)
    store.add_survey(survey)
    tokens = store.issue_tokens(survey.id, 20)
    answers = survey.randomize(ANSWERS)
    store.submit(survey.id, survey.hash, "stored-before-key", answers, tokens[18])
    store.submit(survey.id, survey.hash, "spent-elsewhere", survey.randomize(ANSWERS), tokens[19])
    return store, tokens[:18], (tokens[18], tokens[19], answers)


def test_a_token_batch_answers_each_item_as_one_by_one_submission_would(db_path, engine, tmp_path, request):
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    store, tokens, used_before = _prepared_store(db_path, survey)
    items = _mixed_batch(survey, tokens, used_before)
    together = [_outcome(result) for result in store.submit_many(survey.id, items)]
    counts_together = store.token_counts(survey.id)
    store.close()
    # The same items, one at a time, on a database prepared the same way.
    other_path = str(tmp_path / "alone.db") if engine == "sqlite" else request.getfixturevalue("postgres").fresh_url()
    alone_store, alone_tokens, alone_used = _prepared_store(other_path, survey)
    alone = []
    for spec_hash, key, reports, token in _mixed_batch(survey, alone_tokens, alone_used):
        try:
            alone.append(_outcome(alone_store.submit(survey.id, spec_hash, key, reports, token)))
        except StorageError as error:
            alone.append(_outcome(error))
    assert together == alone
    assert together[:6] == [("stored", True, None)] * 6
    assert together[6:] == [("Invalid", "token"), ("Conflict", "token"), ("Conflict", "token"), ("stored", False, None),
                            ("stored", True, None), ("stored", False, None), ("Invalid", "token"),
                            ("stored", True, None), ("Invalid", "idempotency_key")]
    assert counts_together == alone_store.token_counts(survey.id) == {"issued": 20, "used": 10, "credentials": 0}
    alone_store.close()


def test_a_batch_of_a_thousand_tokens_takes_a_few_statements(db_path):
    """Statements sent for 1,000 token responses: a handful per 500 (responses, lookups, bitmaps, reports), not
    eight per response."""
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with storage.Store(db_path) as store:
        store.add_survey(survey)
        tokens = store.issue_tokens(survey.id, 1000)
        items = [(survey.hash, secrets.token_hex(12), survey.randomize(ANSWERS), token) for token in tokens]
        sent = []
        execute, executemany = store.engine.execute, store.engine.executemany
        store.engine.execute = lambda sql, params=(): sent.append(sql) or execute(sql, params)
        store.engine.executemany = lambda sql, rows: sent.append(sql) or executemany(sql, rows)
        results = store.submit_many(survey.id, items)
        store.engine.execute, store.engine.executemany = execute, executemany
        assert all(created for _, created in results)
        assert store.token_counts(survey.id) == {"issued": 1000, "used": 1000, "credentials": 0}
        assert len(sent) <= 30, len(sent)


def test_a_repeated_survey_s_batch_joins_the_open_wave_together(db_path):
    """300 responses of a panel's wave in one batch: each joins the open wave; one naming another wave is refused
    alone, as it would be alone."""
    pulse = Survey.from_file(EXAMPLES / "panel.yaml")
    answers = {"team": "Sales", "burnout": "no", "looking": "yes", "workload": "Mostly"}
    with storage.Store(db_path) as store:
        store.add_survey(pulse)
        store.open_wave(pulse.id, "spring")
        items = [(pulse.hash, secrets.token_hex(12), pulse.randomize(answers, memo=Memo.new()), None)
                 for _ in range(300)]
        items.append((pulse.hash, secrets.token_hex(12), pulse.randomize(answers, memo=Memo.new()), None, "autumn"))
        results = store.submit_many(pulse.id, items)
        assert [_outcome(r) for r in results[:300]] == [("stored", True, "spring")] * 300
        assert _outcome(results[300]) == ("Invalid", "wave")
        assert len(table_rows(store, "responses")) == 300
