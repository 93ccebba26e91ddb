"""The red team's attack on blind-signed credentials, repeated before any `compact`: 40 invitations, 35 opened (each
earning its credential), 30 answered; a copy of the live files (SQLite's database and its write-ahead log; on
PostgreSQL every row's transaction id, commit time and place). The attacker issued the links: they know every token,
so its hash and slot, and read every table and every log frame.

What the credential takes away is every join by content: no transaction, log commit or column holds both an
invitation and a response (before, a copy of the SQLite files linked 30 of 30 e-mails to their responses). What it
cannot take away is time: where invitations are opened and answered one after another, the order of issues and the
order of responses pair them, in the logs until `compact` as on the network; `_order_attack` measures that, and
docs/privacy.md says it."""

import pathlib
import random
import shutil
import struct

import pytest

from deniable.storage.common import digest
from tests.databases import ANSWERS
from tests.support.credentials import device_credential

pytestmark = pytest.mark.both_engines

INVITED, OPENED, ANSWERED = 40, 35, 30


def _schedule(kind: str, seed: int = 11) -> list[tuple[str, int]]:
    """The fieldwork's events, ("open" | "answer", invitation) in order. "interleaved": people open their invitations
    over the days of fieldwork and answer later, others opening meanwhile; "one by one": each opens and answers before
    the next opens (a lab session: the worst case for time)."""
    rng = random.Random(seed)
    opened = rng.sample(range(INVITED), OPENED)
    answered = set(rng.sample(opened, ANSWERED))
    if kind == "one by one":
        return [event for i in opened for event in [("open", i)] + ([("answer", i)] if i in answered else [])]
    times = {i: rng.uniform(0, 100) for i in opened}
    events = [(times[i], "open", i) for i in opened]
    events += [(times[i] + rng.expovariate(1 / 30), "answer", i) for i in answered]
    return [(what, i) for _, what, i in sorted(events)]


def _field(store, survey, kind: str, db_path: str | None = None) -> tuple[list, dict, tuple | None]:
    """Run the schedule; (tokens, {idempotency key: the invitation that sent it}: the truth, and on SQLite the log's
    header and length when fieldwork began)."""
    tokens = store.issue_tokens("tax", INVITED)
    wal = pathlib.Path(f"{db_path}-wal").read_bytes() if db_path else None
    record, held, truth = store.get_survey("tax"), {}, {}
    for what, i in _schedule(kind):
        if what == "open":
            held[i] = device_credential(store, "tax", tokens[i], random.Random(tokens[i]).randbytes(32))
        else:
            key = f"key-{i:04d}-{random.Random(i).randrange(10**8):08d}"
            store.submit("tax", record.hash, key, survey.randomize(ANSWERS), credential=held.pop(i))
            truth[key] = i
    return tokens, truth, None if wal is None else (wal[:32], len(wal))


def _wal_commits(wal: bytes, start: int = 32) -> list[set]:
    """The pages each commit of a SQLite write-ahead log wrote, from the frame at ``start`` on (its valid frames: the
    header's salts)."""
    page_size = struct.unpack(">I", wal[8:12])[0]
    salts = wal[16:24]
    commits, pages, offset = [], set(), start
    while offset + 24 + page_size <= len(wal):
        page, size_after = struct.unpack(">II", wal[offset:offset + 8])
        if wal[offset + 8:offset + 16] != salts:
            break
        pages.add(page)
        if size_after:  # a commit frame
            commits.append(pages)
            pages = set()
        offset += 24 + page_size
    return commits


ISSUE_SIDE = {"tokens", "token_use", "credential_issues", "credential_keys"}
RESPONSE_SIDE = {"responses", "reports", "spent_serials"}


def _sqlite_links(db_path: str, tmp_path, start: tuple) -> dict:
    """From a copy of the live files: the log's commits since fieldwork began (``start``: the log's header and length
    then; pages written before may belong to other tables since) that wrote pages of both an invitation's tables and a
    response's, and any digest an invitation's rows hold that a response's rows hold too."""
    import sqlite3

    copy = tmp_path / "copy.db"
    shutil.copyfile(db_path, copy)
    shutil.copyfile(f"{db_path}-wal", f"{copy}-wal")
    wal = (tmp_path / "copy.db-wal").read_bytes()
    header, start = start
    assert wal[:32] == header  # no checkpoint reset the log during fieldwork: its frames are all there
    connection = sqlite3.connect(copy)
    owner = {page: name for name, page in connection.execute("SELECT name, pageno FROM dbstat")}
    commits = [{owner.get(page, "?") for page in pages} for pages in _wal_commits(wal, start)]
    both = sum(bool(tables & ISSUE_SIDE) and bool(tables & RESPONSE_SIDE) for tables in commits)
    answers = sum(bool(tables & {"spent_serials"}) for tables in commits)
    issued = {blinded for (blinded,) in connection.execute("SELECT blinded FROM credential_issues")}
    issued |= {token_hash for (token_hash,) in connection.execute("SELECT token_hash FROM tokens")}
    shared = sum(v in issued for table in RESPONSE_SIDE
                 for row in connection.execute(f"SELECT * FROM {table}") for v in row if isinstance(v, str))
    connection.close()
    return {"commits with both": both, "response commits": answers, "shared values": shared}


def _postgres_order(store, tokens: list, truth: dict) -> dict:
    """On PostgreSQL: joins on a transaction id or commit time, and the order attack on the rows' xmin
    (`_order_attack`)."""
    slot_of = {slot: i for i, (slot,) in enumerate(store.execute(
        "SELECT slot FROM tokens WHERE token_hash = ?", [digest(token)]).fetchone() for token in tokens)}
    joined = store.execute("SELECT COUNT(*) FROM responses r JOIN credential_issues c ON c.xmin = r.xmin").fetchone()[0]
    joined += store.execute("SELECT COUNT(*) FROM spent_serials s JOIN credential_issues c ON c.xmin = s.xmin").fetchone()[0]
    same_time = store.execute("SELECT COUNT(*) FROM responses r JOIN credential_issues c ON "
                              "pg_xact_commit_timestamp(c.xmin) = pg_xact_commit_timestamp(r.xmin)").fetchone()[0]
    issues = [(int(x), slot_of[slot]) for slot, x in store.execute(
        "SELECT slot, xmin::text::bigint FROM credential_issues WHERE survey_id = 'tax'").fetchall()]
    responses = [(int(x), truth[key]) for key, x in store.execute(
        "SELECT idempotency_key, xmin::text::bigint FROM responses").fetchall()]
    return {"joined": joined, "same commit time": same_time, "order attack": _order_attack(issues, responses)}


def _order_attack(issues: list, responses: list) -> int:
    """How many responses the better of two pairings links to their own invitation (both sides: (order key, truth)):
    each response in order with the earliest issue not yet paired, or with the latest."""
    events = sorted([(x, "issue", i) for x, i in issues] + [(x, "response", i) for x, i in responses])
    found = []
    for latest in (False, True):
        waiting, correct = [], 0
        for _, what, i in events:
            if what == "issue":
                waiting.append(i)
            elif waiting:
                correct += waiting.pop(-1 if latest else 0) == i
        found.append(correct)
    return max(found)


@pytest.mark.parametrize("kind", ["interleaved", "one by one"])
def test_a_copy_of_the_live_files_joins_no_invitation_to_its_response_by_content(store, survey, engine, db_path,
                                                                                 tmp_path, kind):
    store.add_survey(survey, access="token")
    tokens, truth, start = _field(store, survey, kind, db_path if engine == "sqlite" else None)
    assert store.response_count("tax") == ANSWERED and store.credentials_issued("tax") == OPENED
    if engine == "sqlite":
        links = _sqlite_links(db_path, tmp_path, start)
        # every response is in the log (no checkpoint ran: 30 commits that spent a serial), and no commit of them
        # wrote an invitation's page, nor holds a response anything an invitation's rows hold
        assert links["response commits"] == ANSWERED, links
        assert links["commits with both"] == 0 and links["shared values"] == 0, links
        return
    found = _postgres_order(store, tokens, truth)
    assert found["joined"] == found["same commit time"] == 0, found
    # Time: interleaved fieldwork pairs no more than chance (a handful of 30); one by one, the order pairs them all,
    # until `compact` writes every response and every issue anew.
    assert found["order attack"] <= 6 if kind == "interleaved" else found["order attack"] == ANSWERED, found
    store.compact()
    after = _postgres_order(store, tokens, truth)
    assert after["joined"] == 0 and after["order attack"] <= 6, after


@pytest.mark.postgresql_only
def test_postgresqls_own_log_and_dead_tuples_join_nothing(store, survey, request):
    """On PostgreSQL the red team also read the write-ahead log (`pg_waldump`: every record names its transaction and
    the relation it wrote) and every tuple version still on a page, dead ones included (`pageinspect`): no transaction
    wrote both an issue and a response or a spent serial."""
    import subprocess

    cluster = request.getfixturevalue("postgres")
    store.add_survey(survey, access="token")
    start = store.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    _field(store, survey, "interleaved")
    store.execute("SELECT pg_switch_wal()")  # the segment written out, for pg_waldump to read to its end
    end = store.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    nodes = {table: str(store.execute("SELECT pg_relation_filenode(?)", [table]).fetchone()[0])
             for table in ("credential_issues", "responses", "spent_serials", "reports")}
    dump = subprocess.run([str(cluster.bin / "pg_waldump"), "-p", str(cluster.data / "pg_wal"), "-s", start, "-e", end],
                          capture_output=True, text=True)
    records = [line for line in dump.stdout.splitlines() if "tx:" in line and "rel " in line]
    assert records, dump.stderr
    wrote: dict = {}
    for line in records:
        transaction = line.split("tx:")[1].split(",")[0].strip()
        for relation in line.split("rel ")[1:]:
            node = relation.split()[0].split("/")[-1]
            wrote.setdefault(transaction, set()).update(t for t, n in nodes.items() if n == node)
    issued = {t for t, tables in wrote.items() if "credential_issues" in tables}
    answered = {t for t, tables in wrote.items() if tables & {"responses", "spent_serials"}}
    assert len(issued) == OPENED and len(answered) == ANSWERED and not issued & answered, (len(issued), len(answered))
    store.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")

    def versions(table):  # every tuple version on the table's pages, live or dead: its xmin
        pages = store.execute(f"SELECT pg_relation_size('{table}') / current_setting('block_size')::int").fetchone()[0]
        return {row[0] for page in range(pages) for row in store.execute(
            f"SELECT t_xmin::text FROM heap_page_items(get_raw_page('{table}', {page})) WHERE t_xmin IS NOT NULL")}

    assert not versions("credential_issues") & (versions("responses") | versions("spent_serials"))
