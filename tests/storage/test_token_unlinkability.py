"""Nothing in the database joins an invitation token to the response it sent: not a column, and on PostgreSQL not
the rows' metadata either (xmin, cmin, ctid, commit timestamps), right after submission and after `compact`. The
attacker is whoever issued the links and can read every table: they know each token, so its hash and slot."""

import random
import threading

import pytest

from deniable import storage
from tests.databases import ANSWERS

pytestmark = pytest.mark.both_engines

TOKENS = 160


def _answer_every_token(store, survey, tokens, order_seed=7, threads=1, db_path=None):
    """Each token sends one response, in an order unrelated to the order of issue (a seeded permutation): the truth
    the order statistics below are measured against. With ``threads``, that many stores submit concurrently through
    one group commit, as a server's request threads do."""
    record = store.get_survey("tax")
    order = list(range(len(tokens)))
    random.Random(order_seed).shuffle(order)
    if threads == 1:
        for i in order:
            store.submit("tax", record.hash, f"key-{i:06d}", survey.randomize(ANSWERS), tokens[i])
        return
    committer, queue, failures = storage.GroupCommit(), list(order), []
    lock = threading.Lock()

    def work():
        with storage.Store(db_path, migrate=False, group_commit=committer) as own:
            while True:
                with lock:
                    if not queue:
                        return
                    i = queue.pop(0)
                try:
                    own.submit("tax", record.hash, f"key-{i:06d}", survey.randomize(ANSWERS), tokens[i])
                except Exception as error:  # noqa: BLE001 - reported below
                    failures.append(error)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not failures


def _metadata(store, table: str, key: str) -> dict:
    """Each row's key → (xmin, cmin, ctid's place, commit time): everything PostgreSQL keeps beside a row."""
    rows = store.execute(f"SELECT {key}, xmin::text::bigint, cmin::text::bigint, ctid::text, "
                         f"pg_xact_commit_timestamp(xmin) FROM {table}").fetchall()
    return {row[0]: row[1:] for row in rows}


def _place(ctid: str) -> tuple:
    block, offset = ctid.strip("()").split(",")
    return int(block), int(offset)


def _rank_correlation(xs: list, ys: list) -> float:
    """Spearman's ρ; 0 when either side has a single value (an order that orders nothing)."""
    from scipy import stats

    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return 0.0

    def ranks(values):  # places (block, offset) and timestamps order as they are; spearmanr wants numbers
        order = {value: rank for rank, value in enumerate(sorted(set(values)))}
        return [order[value] for value in values]

    return float(stats.spearmanr(ranks(xs), ranks(ys)).statistic)


def _links(store, tokens) -> dict:
    """What the row metadata says about which response each token sent, scored against the truth (the response
    stored with idempotency key ``key-i`` was sent by token i)."""
    from deniable.storage.common import digest

    token_rows = _metadata(store, "tokens", "token_hash")
    responses = {key: meta for key, meta in
                 ((row[0], row[1:]) for row in store.execute(
                     "SELECT idempotency_key, xmin::text::bigint, cmin::text::bigint, ctid::text, "
                     "pg_xact_commit_timestamp(xmin) FROM responses").fetchall())}
    pairs = [(token_rows[digest(token)], responses[f"key-{i:06d}"]) for i, token in enumerate(tokens)]
    same_transaction = sum(t[0] == r[0] for t, r in pairs)
    same_commit_time = sum(t[3] is not None and t[3] == r[3] for t, r in pairs)
    # Any join of the two tables on a transaction id or a commit time, true pair or not.
    joined = store.execute("SELECT COUNT(*) FROM responses r JOIN tokens t ON t.xmin = r.xmin").fetchone()[0]
    joined_time = store.execute("SELECT COUNT(*) FROM responses r JOIN tokens t ON "
                                "pg_xact_commit_timestamp(t.xmin) = pg_xact_commit_timestamp(r.xmin)").fetchone()[0]
    orders = {}
    for name, token_side, response_side in (
            ("xmin", lambda m: m[0], lambda m: m[0]),
            ("ctid", lambda m: _place(m[2]), lambda m: _place(m[2])),
            ("cmin", lambda m: m[1], lambda m: m[1]),
            ("commit time", lambda m: m[3], lambda m: m[3]),
            ("token ctid, response xmin", lambda m: _place(m[2]), lambda m: m[0])):
        xs = [token_side(t) for t, _ in pairs]
        ys = [response_side(r) for _, r in pairs]
        orders[name] = _rank_correlation(xs, ys)
    return {"same transaction": same_transaction, "same commit time": same_commit_time, "join on xmin": joined,
            "join on commit time": joined_time, "orders": orders}


def _assert_unlinked(links: dict):
    assert links["same transaction"] == links["same commit time"] == 0, links
    assert links["join on xmin"] == links["join on commit time"] == 0, links
    # Chance: |ρ| of unrelated orders is about 1/√n; 4/√n leaves a true link (ρ = 1 before) no room.
    for name, rho in links["orders"].items():
        assert abs(rho) < 4 / TOKENS ** 0.5, (name, links)


@pytest.mark.parametrize("threads", [1, 8])
def test_no_row_metadata_joins_a_token_to_its_response(store, survey, engine, db_path, threads):
    """Before: the token's row was updated in its response's transaction, so `JOIN tokens t ON t.xmin = r.xmin`
    named every respondent (all 160 of 160), and the tokens' physical order was the order of use (ρ = 1)."""
    tokens = store.issue_tokens("tax", TOKENS)
    _answer_every_token(store, survey, tokens, threads=threads, db_path=db_path)
    assert store.token_counts("tax") == {"issued": TOKENS, "used": TOKENS, "credentials": 0}
    if engine == "sqlite":
        # SQLite keeps no transaction id with a row; the tokens are ordered by their (random) hash, and their rows
        # were never written after issue: the same bytes as before anyone answered.
        return
    _assert_unlinked(_links(store, tokens))
    # A bitmap row's xmin is the last transaction to spend one of its tokens (one response, or a group commit's or a
    # batch's several): it joins that transaction's responses to a block of tokens (every used one of them a
    # candidate), never one token to one response; there is one such row per 1,024 tokens.
    joined = store.execute("SELECT COUNT(DISTINCT r.xmin::text) FROM responses r JOIN token_use u ON u.xmin = r.xmin")
    assert joined.fetchone()[0] <= store.execute("SELECT COUNT(*) FROM token_use").fetchone()[0]
    store.compact()
    links = _links(store, tokens)
    _assert_unlinked(links)
    assert store.execute("SELECT COUNT(*) FROM responses r JOIN token_use u ON u.xmin = r.xmin").fetchone()[0] == 0
    # compact wrote every response anew in one transaction: their xmin no longer orders them by arrival
    assert store.execute("SELECT COUNT(DISTINCT xmin::text) FROM responses").fetchone()[0] == 1
    assert store.token_counts("tax") == {"issued": TOKENS, "used": TOKENS, "credentials": 0}


def test_a_token_answers_exactly_once_under_concurrent_spending(store, survey, db_path):
    """The bitmap row is the lock: 8 threads send each of 60 tokens twice (a second key each time) at once."""
    tokens = store.issue_tokens("tax", 60)
    record = store.get_survey("tax")
    outcomes, lock = [], threading.Lock()
    work = [(i, attempt) for attempt in range(2) for i in range(len(tokens))]
    random.Random(3).shuffle(work)

    def send():
        with storage.Store(db_path, migrate=False) as own:
            while True:
                with lock:
                    if not work:
                        return
                    i, attempt = work.pop()
                try:
                    own.submit("tax", record.hash, f"key-{i:04d}-{attempt}", survey.randomize(ANSWERS), tokens[i])
                    result = "stored"
                except storage.Conflict:
                    result = "used"
                with lock:
                    outcomes.append((i, result))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(len(tokens)):
        assert sorted(result for j, result in outcomes if j == i) == ["stored", "used"]
    assert store.token_counts("tax") == {"issued": 60, "used": 60, "credentials": 0}
    assert store.response_count("tax") == 60


def test_tokens_issued_across_blocks_keep_their_own_bits(store, survey):
    """Slots run on across issues and bitmap rows (1,024 tokens a row): spending one marks it alone."""
    from deniable.storage.tokens import SLOTS_PER_ROW

    record = store.get_survey("tax")
    first = store.issue_tokens("tax", SLOTS_PER_ROW - 1)
    second = store.issue_tokens("tax", 3)  # slots 1023, 1024, 1025: the last of row 0, the first of row 1
    assert store.execute("SELECT COUNT(*) FROM token_use").fetchone()[0] == 2
    for token in (first[0], second[0], second[1]):
        store.submit("tax", record.hash, f"key-{token[:10]}", survey.randomize(ANSWERS), token)
    assert [store.token_status("tax", t) for t in (first[0], first[1], second[0], second[1], second[2])] == [
        "used", "unused", "used", "used", "unused"]
    assert store.token_counts("tax") == {"issued": SLOTS_PER_ROW + 2, "used": 3, "credentials": 0}


def test_schema_8_moves_each_token_s_use_into_the_bitmaps_and_forgets_what_linked_it(db_path, engine, demo,
                                                                                       monkeypatch):
    """A schema-7 database whose tokens were spent the old way (the token's row updated in its response's
    transaction, so on PostgreSQL they shared an xmin): after the migration the same tokens count as used, the
    unused ones still answer, and no token row shares a transaction with a response."""
    from deniable.storage import store as store_module
    from deniable.storage.common import digest

    with monkeypatch.context() as schema_7:
        schema_7.setattr(store_module, "SCHEMA_VERSION", 7)
        with storage.Store(db_path) as old:
            old.add_survey(demo)
            tokens = [f"token-{i:03d}" for i in range(30)]
            old.engine.executemany("INSERT INTO tokens (token_hash, survey_id, issued_on, used_on) VALUES (?, ?, ?, NULL)",
                                   [(digest(t), "tax", "2026-11-01") for t in tokens])
            old.execute("UPDATE surveys SET access = 'token' WHERE id = 'tax'")
            for i, token in enumerate(tokens[:20]):  # what schema 7's submit did, in one transaction each
                with old.transaction():
                    old.execute("INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, "
                                "fingerprint) VALUES (?, 'tax', ?, '2026-11-02', ?, 'f')", [f"r{i:03d}", demo.hash, f"k{i}"])
                    old.execute("UPDATE tokens SET used_on = '2026-11-02' WHERE token_hash = ?", [digest(token)])
            if engine == "postgresql":
                assert old.execute("SELECT COUNT(*) FROM responses r JOIN tokens t ON t.xmin = r.xmin").fetchone()[0] == 20
    with storage.Store(db_path) as new:
        assert new.schema_version() == storage.SCHEMA_VERSION
        assert new.token_counts("tax") == {"issued": 30, "used": 20, "credentials": 0}
        assert {new.token_status("tax", t) for t in tokens[:20]} == {"used"}
        assert {new.token_status("tax", t) for t in tokens[20:]} == {"unused"}
        assert sorted(r[0] for r in new.execute("SELECT slot FROM tokens").fetchall()) == list(range(30))
        if engine == "postgresql":
            assert new.execute("SELECT COUNT(*) FROM responses r JOIN tokens t ON t.xmin = r.xmin").fetchone()[0] == 0
            assert new.execute("SELECT COUNT(*) FROM responses r JOIN token_use u ON u.xmin = r.xmin").fetchone()[0] == 0
        record = new.get_survey("tax")
        new.submit("tax", record.hash, "after-migration", demo.randomize(ANSWERS), tokens[25])
        with pytest.raises(storage.Conflict):
            new.submit("tax", record.hash, "again-after", demo.randomize(ANSWERS), tokens[0])
        assert new.token_counts("tax") == {"issued": 30, "used": 21, "credentials": 0}
