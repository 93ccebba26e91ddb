"""The write path: one response or a batch, validated by the client's rules, stored with its
running totals in the same transaction (invariant 6: nothing is acknowledged before the commit)."""

from __future__ import annotations

import collections
import dataclasses
import secrets
import threading
from typing import NamedTuple

from deniable.client.quality import ParadataError, checked_paradata
from deniable.client.reports import ReportError, validate_reports
from deniable.client.schedule import written

from .common import canonical, canonical_report, chunks, digest, today
from .credentials import Credential
from .errors import Conflict, Gone, Invalid, StorageError, Unavailable
from .part import Part
from .quotas import count_response
from .quotas import recount as recount_quotas
from .schema import SCHEMA_VERSION, rebuild_counts
from .tokens import CREDENTIALED, SLOTS_PER_ROW, credentialed_slots, is_spent, lock_bitmaps, spend_slots
from .tokens import lookup as token_lookup
from .tokens import spend as spend_token
from .transactions import retrying


class Prepared(NamedTuple):
    """One response validated and ready to store (`Writes._prepare`), and where its outcome goes."""
    position: int
    survey_id: str
    spec_hash: str
    key: str
    token: str | None
    record: object
    values: list
    fingerprint: str
    wave: str | None
    paradata: str | None = None  # its section times as stored (`client.quality`), with their sum in ``seconds``
    seconds: int | None = None
    remembered: bool = False  # ``record`` is one read for an earlier response (`Writes._record_for`)
    credential: Credential | None = None  # a blind-signed credential, verified, spent instead of a token


#: Survey records read for submissions on PostgreSQL, by (database, survey, version hash): only of open surveys whose
#: current version it is, with no quota and no waves, whose responses can go in one statement. That statement checks
#: the survey is still open at that version as it writes, so a remembered record costs no round trip and cannot let
#: a response through that the survey no longer takes: whatever the statement does not store goes step by step with
#: the record read afresh (`Writes.refreshed`).
_REMEMBERED: collections.OrderedDict = collections.OrderedDict()
_REMEMBERED_KEPT = 256
_REMEMBERED_LOCK = threading.Lock()


class Writes(Part):
    """The part of `Store` that stores responses."""

    def submit(self, survey_id: str, spec_hash, idempotency_key, reports, token=None,
               answerable=None, wave=None, paradata=None, credential=None) -> tuple[dict, bool]:
        """Validate and store one response. Returns (acknowledgement, created).

        A retry with the same idempotency key returns the first acknowledgement (created False),
        even when it races the first attempt from another process. Nothing is written unless
        everything is valid; the token is spent in the same transaction as the response is
        stored, and accepted exactly once however many processes race for it. ``answerable``
        limits the required questions to those a client could answer (the no-JavaScript form).
        A repeated survey's response joins the open wave; ``wave`` (the label the client was served) must
        be that wave, so a response that arrives after its wave closed is refused, not counted in the next.
        ``paradata``: the section times of a survey that asks for them (`client.quality`); paradata it would refuse
        are dropped and the response stored without them, the acknowledgement saying why (``paradata_dropped``):
        the answers matter more than their timing, and a page that sends the same times again would fail forever.
        ``credential``: a token survey's blind-signed credential ({"key", "serial", "signature"}, `credentials.py`),
        sent instead of the token and spent in the response's transaction as the token would be.
        """
        record, values, fingerprint, kept, dropped = self._prepare(survey_id, spec_hash, idempotency_key, reports,
                                                                   token, answerable, wave, paradata)
        entry = Prepared(0, survey_id, spec_hash, idempotency_key, token, record, values, fingerprint, wave, *kept,
                         credential=self.store.credentials.for_response(survey_id, record, token, credential))
        if self.store.group_commit is not None:
            return _saying_dropped(self.store.group_commit.submit(self.store, entry), dropped)
        return _saying_dropped(self.store_one(entry), dropped)

    def store_one(self, entry: Prepared) -> tuple[dict, bool]:
        if self.in_one_statement([entry]):
            [stored] = retrying(lambda: self.store_in_one_statement([entry]))
            if stored is not None:
                return stored
        entry = self.refreshed(entry)
        return retrying(lambda: self._store_response(entry))

    def in_one_statement(self, entries: list[Prepared]) -> bool:
        """Whether these responses (to one survey) can be stored by `store_in_one_statement`: on PostgreSQL, where
        each round trip waits on the network, new responses to an open survey asked once, with no token, no quota and
        its current version's window open. Anything else goes step by step (and a response the one statement does
        not store, too: a retry, a survey closed meanwhile)."""
        if self.engine.dialect != "postgresql" or self.engine.in_transaction or self.layout.schema != SCHEMA_VERSION:
            return False
        first = entries[0].record
        if first.current_hash is None or any(e.record.access != "open" or e.token is not None or e.wave is not None
                                             or e.record.survey.repeated is not None or e.survey_id != first.id
                                             or e.record.current_hash != first.current_hash for e in entries):
            return False
        current = self.store.surveys.spec_of(first.current_hash)
        return not current.quotas and current.repeated is None and current.schedule.state() == "open"

    def store_in_one_statement(self, entries: list[Prepared]) -> list:
        """Store new responses to one open survey with one statement (one round trip, its own transaction): the
        survey read for being open at the version seen, the date setting, the responses, their reports, the running
        totals and the version's count, each a data-modifying part of one WITH. Per entry, (acknowledgement, True)
        or None when it was not stored (its key is taken, or the survey closed or changed version meanwhile): the
        step-by-step path then answers it as it answers everything else."""
        survey_id, current = entries[0].survey_id, entries[0].record.current_hash
        ids = [secrets.token_hex(16) for _ in entries]
        shard = secrets.randbelow(self.engine.counter_shards)
        new = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(entries))
        params = [survey_id, current,
                  *[x for entry, response_id in zip(entries, ids)
                    for x in (response_id, survey_id, entry.spec_hash, entry.key, entry.fingerprint, entry.seconds,
                              entry.paradata)]]
        reports = [(response_id, *value) for entry, response_id in zip(entries, ids) for value in entry.values]
        written = ""
        if reports:
            written = (
                f", rep (response_id, spec_hash, question_id, value) AS (VALUES {', '.join(['(?, ?, ?, ?)'] * len(reports))}), "
                "r AS (INSERT INTO reports (response_id, spec_hash, question_id, value) "
                "SELECT rep.response_id, rep.spec_hash, rep.question_id, rep.value FROM rep JOIN ins ON ins.id = "
                "rep.response_id), "
                "c AS (INSERT INTO report_counts (spec_hash, question_id, value, shard, count) "
                "SELECT rep.spec_hash, rep.question_id, rep.value, ?::integer, COUNT(*) FROM rep JOIN ins ON ins.id = "
                "rep.response_id GROUP BY rep.spec_hash, rep.question_id, rep.value ORDER BY 1, 2, 3 "
                "ON CONFLICT (spec_hash, question_id, value, shard) DO UPDATE SET count = report_counts.count + "
                "excluded.count)")
            params += [x for row in reports for x in row] + [shard]
        params.append(shard)
        rows = self.execute(
            "WITH s AS (SELECT 1 FROM surveys WHERE id = ? AND current_hash = ? AND closed_on IS NULL "
            "AND access = 'open'), "
            "day AS (SELECT to_char(CASE COALESCE((SELECT value FROM settings WHERE key = 'received_on'), 'day') "
            "WHEN 'week' THEN date_trunc('week', now() AT TIME ZONE 'UTC') "
            "WHEN 'month' THEN date_trunc('month', now() AT TIME ZONE 'UTC') ELSE now() AT TIME ZONE 'UTC' END, "
            "'YYYY-MM-DD') AS received_on), "
            f"new (id, survey_id, spec_hash, idempotency_key, fingerprint, seconds, paradata) AS (VALUES {new}), "
            "ins AS (INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint, seconds, "
            "paradata) SELECT new.id, new.survey_id, new.spec_hash, day.received_on, new.idempotency_key, "
            "new.fingerprint, new.seconds::integer, new.paradata FROM new, s, day "
            "ON CONFLICT (survey_id, idempotency_key) DO NOTHING RETURNING id, spec_hash, received_on)"
            f"{written}, "
            "v AS (INSERT INTO version_counts (spec_hash, shard, responses) SELECT spec_hash, ?::integer, COUNT(*) "
            "FROM ins GROUP BY spec_hash ORDER BY 1 ON CONFLICT (spec_hash, shard) DO UPDATE SET responses = "
            "version_counts.responses + excluded.responses) "
            "SELECT id, received_on FROM ins", params).fetchall()
        stored = dict(rows)
        return [None if response_id not in stored else
                ({"id": response_id, "survey_id": survey_id, "spec_hash": entry.spec_hash,
                  "received_on": stored[response_id]}, True)
                for entry, response_id in zip(entries, ids)]

    def _prepare(self, survey_id, spec_hash, idempotency_key, reports, token, answerable=None, wave=None,
                 paradata=None):
        """Everything about one response that needs no write: (record, sorted report rows, fingerprint, (paradata
        text, seconds, remembered), why its paradata were dropped or None)."""
        if not isinstance(spec_hash, str) or not spec_hash:
            raise Invalid("spec_hash: required, the hash of the spec the answers were randomized under", "spec_hash")
        if not isinstance(idempotency_key, str) or not 8 <= len(idempotency_key) <= 128:
            raise Invalid("idempotency_key: required, a random string of 8 to 128 characters", "idempotency_key")
        if token is not None and (not isinstance(token, str) or not 1 <= len(token) <= 256):
            raise Invalid("token: must be a string", "token")
        if wave is not None and (not isinstance(wave, str) or not 1 <= len(wave) <= 64):
            raise Invalid("wave: must be the label of a wave (a string)", "wave")
        record, remembered = self._record_for(survey_id, spec_hash)
        if wave is not None and record.survey.repeated is None:
            raise Invalid(f"wave: survey {survey_id!r} is not repeated; a response to it names no wave", "wave")
        try:
            clean = validate_reports(record.survey, reports, answerable)
        except ReportError as error:
            raise Invalid(error.message, error.field) from None
        try:
            times, dropped = checked_paradata(record.survey, paradata), None
        except ParadataError as error:
            times, dropped = None, error.message
        body = {"spec_hash": spec_hash, "reports": clean, **({"paradata": times} if times else {})}
        fingerprint = digest(canonical(body))
        kept = (None, None) if times is None else (canonical(times), sum(times["seconds"].values()))
        # Counter rows in one order for everyone: two transactions never wait on each other crosswise.
        values = sorted((spec_hash, qid, canonical_report(value)) for qid, value in clean.items())
        return record, values, fingerprint, (*kept, remembered), dropped

    def _record_for(self, survey_id: str, spec_hash: str):
        """The survey's record at ``spec_hash``, and whether it is one remembered from an earlier response
        (`_REMEMBERED`: on PostgreSQL, outside a transaction, for the one-statement path)."""
        remembering = self.engine.dialect == "postgresql" and not self.engine.in_transaction
        key = self._remembered_key(survey_id, spec_hash)
        if remembering:
            with _REMEMBERED_LOCK:
                record = _REMEMBERED.get(key)
            if record is not None:
                return record, True
        record = self._in_transaction("record", (survey_id, spec_hash),
                                      lambda: self.store.surveys.get_survey(survey_id, spec_hash))
        survey = record.survey
        if remembering and record.access == "open" and not record.closed and record.current_hash == spec_hash \
                and survey.repeated is None and not survey.quotas:
            with _REMEMBERED_LOCK:
                # Without its response counter, which holds this store (and its connection) for as long as it is kept.
                _REMEMBERED[key] = dataclasses.replace(record, _count=None)
                while len(_REMEMBERED) > _REMEMBERED_KEPT:
                    _REMEMBERED.popitem(last=False)
        return record, False

    def _remembered_key(self, survey_id: str, spec_hash: str) -> tuple:
        return getattr(self.engine, "url", None), survey_id, spec_hash

    def refreshed(self, entry: Prepared) -> Prepared:
        """``entry`` with its survey record read now, if it was a remembered one (forgotten too: the survey may have
        changed): what the step-by-step path judges a response by."""
        if not entry.remembered:
            return entry
        with _REMEMBERED_LOCK:
            _REMEMBERED.pop(self._remembered_key(entry.survey_id, entry.spec_hash), None)
        return entry._replace(record=self.store.surveys.get_survey(entry.survey_id, entry.spec_hash), remembered=False)

    def submit_many(self, survey_id: str, items: list[tuple]) -> list:
        """Store a batch of responses, each judged on its own as `submit` would judge it alone:
        ``items`` are (spec_hash, idempotency_key, reports, token[, wave[, paradata[, credential]]]); per item:
        (acknowledgement, created) or the StorageError it earned. One transaction. Responses to an
        open survey go in with a handful of multi-row statements for the whole batch; a token
        survey's go one by one (each spends its own token in its own savepoint)."""
        results: list = [None] * len(items)

        def store():
            with self.transaction():
                self._submit_many(survey_id, items, results)
            return results

        return retrying(store)

    def _submit_many(self, survey_id: str, items: list[tuple], results: list):
        prepared = []  # Prepared, each at its item's position
        dropped = {}  # position -> why its paradata were dropped
        for position, (spec_hash, key, reports, token, *named) in enumerate(items):
            wave, paradata, credential = (list(named) + [None, None, None])[:3]
            try:
                record, values, fingerprint, kept, dropped[position] = self._prepare(
                    survey_id, spec_hash, key, reports, token, wave=wave, paradata=paradata)
                credential = self.store.credentials.for_response(survey_id, record, token, credential)
            except StorageError as error:
                results[position] = error
                continue
            prepared.append(Prepared(position, survey_id, spec_hash, key, token, record, values, fingerprint, wave,
                                     *kept, credential=credential))
        self.store_batch(survey_id, prepared, results)
        for position, why in dropped.items():
            if isinstance(results[position], tuple):
                results[position] = _saying_dropped(results[position], why)

    def store_batch(self, survey_id: str, entries: list[Prepared], results: list):
        """Store validated responses to one survey inside the caller's transaction; each one's outcome goes to
        ``results[entry.position]``. Open surveys' responses go in with a handful of multi-row statements; a
        token survey's or a repeated one's one by one, each in its own savepoint (undone alone on refusal); a survey
        with quotas one at a time, each counted in its cells before the next (`quotas.py`)."""
        if entries and self._quotas(survey_id):
            for entry in entries:
                self._store_alone(entry, results)
            return
        prepared, together = [], []  # an open survey's entries; a token or repeated survey's
        for entry in entries:
            (together if entry.record.access == "token" or entry.record.survey.repeated is not None
             else prepared).append(entry)
        if together:
            self._store_together(survey_id, together, results)
        if not prepared:
            return
        refusal = self._refusal(survey_id)
        received_on = today(self._in_transaction("setting", "received_on", self.store.surveys.received_on_granularity))
        first = {}  # key -> the batch's first item with it (a later one is a retry of it)
        for entry in prepared:
            first.setdefault(entry.key, entry)
        ids = {key: secrets.token_hex(16) for key in first}
        inserted = set()
        times = self.layout.has_paradata
        columns = "id, survey_id, spec_hash, received_on, idempotency_key, fingerprint" + (", seconds, paradata" * times)
        marks = "(" + ", ".join("?" * (8 if times else 6)) + ")"
        for chunk in chunks([] if refusal else first.values(), 500):
            cursor = self.execute(
                f"INSERT INTO responses ({columns}) VALUES " + ", ".join([marks] * len(chunk))
                + " ON CONFLICT (survey_id, idempotency_key) DO NOTHING RETURNING idempotency_key",
                [x for entry in chunk
                 for x in (ids[entry.key], survey_id, entry.spec_hash, received_on, entry.key, entry.fingerprint,
                           *((entry.seconds, entry.paradata) if times else ()))])
            inserted.update(r[0] for r in cursor.fetchall())
        # Keys stored before this batch (retries) get their first acknowledgement.
        previous = self.store.reads.stored_responses(survey_id, sorted(set(first) - inserted))
        for key in inserted:
            previous[key] = {"id": ids[key], "survey_id": survey_id, "spec_hash": first[key].spec_hash,
                             "received_on": received_on, "fingerprint": first[key].fingerprint}
        written = []  # (response id, spec hash, values) of the responses inserted now
        for entry in prepared:
            position, key = entry.position, entry.key
            stored = previous.get(key)
            if stored is None:
                results[position] = (refusal if refusal else
                                     Unavailable("idempotency_key: stored by another request meanwhile; send it again",
                                                 "idempotency_key"))
            elif key in inserted and first[key] is entry:
                results[position] = (self._acknowledgement(stored), True)
                written.append((ids[key], entry.spec_hash, entry.values))
            else:  # a retry, in this batch or of a response stored before it
                results[position] = self._answer_retry(stored, entry)
        self._write_reports(written)

    def _store_alone(self, entry: Prepared, results: list):
        """One entry in its own savepoint (undone alone on refusal), its outcome to ``results``."""
        try:
            with self.transaction():
                results[entry.position] = self._store_response(entry)
        except StorageError as error:
            results[entry.position] = error

    def _store_together(self, survey_id: str, entries: list[Prepared], results: list):
        """A token or repeated survey's entries of one batch, each judged as `_store_response` would judge it alone,
        in a few statements for the whole batch: the retries read at once, every token looked up at once, the
        bitmap rows it spends locked in block order, the new responses inserted in one multi-row statement, each
        changed bitmap row written once, the reports in `_write_reports`. One by one, each in a savepoint, a
        1000-item batch made about 8,000 round trips on PostgreSQL (~3 s). What is rare goes one by one still: a
        closed survey, a wave refused."""
        if self._refusal(survey_id):
            for entry in entries:
                self._store_alone(entry, results)
            return
        waiting = []
        for entry in entries:
            if entry.credential is not None:  # rare in a batch: one by one, as `_store_response` spends it
                self._store_alone(entry, results)
                continue
            try:
                waiting.append(entry._replace(wave=self._wave_for(survey_id, entry.record, entry.wave)))
            except StorageError:
                self._store_alone(entry, results)  # its exact refusal, or the acknowledgement of a retry
        received_on = today(self._in_transaction("setting", "received_on", self.store.surveys.received_on_granularity))
        stored = self.store.reads.stored_responses(survey_id, sorted({entry.key for entry in waiting}))
        first: dict = {}  # key -> the batch's first new entry with it; a later one is its retry
        retries = []
        for entry in waiting:
            if entry.key in stored:
                results[entry.position] = self._answer_retry(stored[entry.key], entry)
            elif entry.key in first:
                retries.append(entry)
            elif entry.record.access == "token" and entry.token is None:
                results[entry.position] = Invalid("token: this survey needs the respondent token from your invitation "
                                                  "link", "token")
            else:
                first[entry.key] = entry
        tokens = [entry.token for entry in first.values() if entry.record.access == "token"]
        found = token_lookup(self.engine, survey_id, tokens) if tokens else {}
        bitmaps = lock_bitmaps(self.engine, survey_id, {slot // SLOTS_PER_ROW for slot, _ in found.values()})
        credentialed = credentialed_slots(self.engine, survey_id, [slot for slot, _ in found.values()]) \
            if self.layout.has_credentials and found else set()
        spending: dict = {}  # slot -> key of the entry that spends it
        new = []
        for key, entry in list(first.items()):
            cell = None
            if entry.record.access == "token":
                if entry.token not in found:
                    results[entry.position] = Invalid("token: not a token of this survey", "token")
                    del first[key]
                    continue
                slot, cell = found[entry.token]
                if is_spent(bitmaps[slot // SLOTS_PER_ROW], slot) or slot in spending:
                    results[entry.position] = Conflict("token: already used; each invitation answers once", "token")
                    del first[key]
                    continue
                if slot in credentialed:
                    results[entry.position] = Conflict(CREDENTIALED, "token")
                    del first[key]
                    continue
                spending[slot] = key
            new.append((entry, secrets.token_hex(16), cell))
        frames, times = self.layout.has_frames, self.layout.has_paradata
        columns = "id, survey_id, spec_hash, received_on, idempotency_key, fingerprint, wave" + \
            (", frame_cell" if frames else "") + (", seconds, paradata" if times else "")
        marks = "(" + ", ".join("?" * (7 + frames + 2 * times)) + ")"
        inserted = set()
        for chunk in chunks(new, 500):
            cursor = self.execute(
                f"INSERT INTO responses ({columns}) VALUES " + ", ".join([marks] * len(chunk))
                + " ON CONFLICT (survey_id, idempotency_key) DO NOTHING RETURNING idempotency_key",
                [x for entry, response_id, cell in chunk
                 for x in (response_id, survey_id, entry.spec_hash, received_on, entry.key, entry.fingerprint, entry.wave,
                           *((cell,) if frames else ()), *((entry.seconds, entry.paradata) if times else ()))])
            inserted.update(row[0] for row in cursor.fetchall())
        spend_slots(self.engine, survey_id, bitmaps, [slot for slot, key in spending.items() if key in inserted])
        written = []
        for entry, response_id, _ in new:
            if entry.key not in inserted:  # stored by another request meanwhile: its token was not spent here
                results[entry.position] = Unavailable("idempotency_key: stored by another request meanwhile; send it "
                                                      "again", "idempotency_key")
                continue
            row = {"id": response_id, "survey_id": survey_id, "spec_hash": entry.spec_hash, "received_on": received_on,
                   "fingerprint": entry.fingerprint, "wave": entry.wave}
            results[entry.position] = (self._acknowledgement(row), True)
            stored[entry.key] = row
            written.append((response_id, entry.spec_hash, entry.values))
        for entry in retries:  # a key twice in the batch: the second is a retry of the first, if that was stored
            if entry.key in stored:
                results[entry.position] = self._answer_retry(stored[entry.key], entry)
            else:
                self._store_alone(entry, results)
        self._write_reports(written)

    def _answer_retry(self, stored: dict, entry: Prepared):
        if stored["fingerprint"] != entry.fingerprint:
            return Invalid("idempotency_key: already used for a different response", "idempotency_key")
        return self._acknowledgement(stored), False

    def _previous(self, survey_id: str, idempotency_key: str, fingerprint: str) -> dict | None:
        previous = self._one("SELECT id, survey_id, spec_hash, received_on, fingerprint, wave FROM responses "
                             "WHERE survey_id = ? AND idempotency_key = ?", [survey_id, idempotency_key])
        if previous is not None and previous["fingerprint"] != fingerprint:
            raise Invalid("idempotency_key: already used for a different response", "idempotency_key")
        return previous

    def _wave_for(self, survey_id: str, record, wave: str | None) -> str | None:
        """The wave a response joins: None for a survey asked once; else the open wave, which a named one must be."""
        if record.survey.repeated is None:
            return None

        def read_open_wave():
            self.store.surveys.lock(survey_id, shared=True)  # held to the commit: the wave cannot close under this response
            return self.store.surveys.open_wave_label(survey_id)

        open_label = self._in_transaction("wave", survey_id, read_open_wave)
        if wave is not None and wave != open_label:
            if self._one("SELECT label FROM waves WHERE survey_id = ? AND label = ?", [survey_id, wave]) is None:
                raise Invalid(f"wave: survey {survey_id!r} has no wave {wave!r}", "wave")
            now = f"wave {open_label!r} is open now" if open_label else "no wave is open now"
            raise Gone(f"wave: wave {wave!r} of survey {survey_id!r} is closed ({now}); this response was not stored", "wave")
        if open_label is None:
            raise Conflict(f"wave: survey {survey_id!r} is repeated and no wave is open; its researchers open one "
                           f"(deniable survey wave {survey_id} --open LABEL) before responses are accepted", "wave")
        return open_label

    def _store_response(self, entry: Prepared):
        survey_id, spec_hash, idempotency_key, token = entry.survey_id, entry.spec_hash, entry.key, entry.token
        record, values, fingerprint, wave = entry.record, entry.values, entry.fingerprint, entry.wave
        # Few round trips (each costs a network wait on PostgreSQL): the survey row and the date
        # setting are read once per transaction (once per batch), the response row is inserted
        # first and stands for the idempotency check, reports and counters go in one statement each.
        with self.transaction():
            refusal = self._refusal(survey_id)
            if refusal:
                previous = self._previous(survey_id, idempotency_key, fingerprint)
                if previous is not None:  # stored before it closed: the answer the client missed
                    return self._acknowledgement(previous), False
                raise refusal
            try:
                wave = self._wave_for(survey_id, record, wave)
            except (Gone, Conflict):
                previous = self._previous(survey_id, idempotency_key, fingerprint)
                if previous is not None:  # stored before its wave closed: the answer the client missed
                    return self._acknowledgement(previous), False
                raise
            received_on = today(self._in_transaction("setting", "received_on", self.store.surveys.received_on_granularity))
            row = {"id": secrets.token_hex(16), "survey_id": survey_id, "spec_hash": spec_hash, "received_on": received_on,
                   "idempotency_key": idempotency_key, "fingerprint": fingerprint}
            if wave is not None:
                row["wave"] = wave
            # A token's frame row (`frames.py`) goes with its response, read in the same statement (no round trip).
            column, cell, frame = ", frame_cell", ", (SELECT frame_cell FROM tokens WHERE token_hash = ? AND " \
                "survey_id = ?)", [None if token is None or record.access != "token" else digest(token), survey_id]
            if entry.credential is not None:  # the cell its key binds
                cell, frame = ", ?", [entry.credential.cell]
            if not self.layout.has_frames:  # an older schema kept open as it is (a migration's own tests)
                column, cell, frame = "", "", []
            if self.layout.has_paradata:
                column, cell, frame = column + ", seconds, paradata", cell + ", ?, ?", [*frame, entry.seconds,
                                                                                      entry.paradata]
            inserted = self.execute(
                f"INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint, wave"
                f"{column}) VALUES (?, ?, ?, ?, ?, ?, ?{cell}) ON CONFLICT (survey_id, idempotency_key) DO NOTHING "
                "RETURNING id", [row["id"], survey_id, spec_hash, received_on, idempotency_key, fingerprint, wave,
                                 *frame]).fetchone()
            if inserted is None:  # a retry (perhaps racing its first attempt, which has committed now)
                previous = self._previous(survey_id, idempotency_key, fingerprint)
                if previous is None:  # pragma: no cover - the conflicting row cannot vanish inside a transaction
                    raise StorageError("idempotency_key: conflicting response not found", "idempotency_key")
                return self._acknowledgement(previous), False
            if entry.credential is not None:
                self.store.credentials.spend(survey_id, entry.credential, wave)
            elif record.access == "token":
                if token is None:
                    raise Invalid("token: this survey needs the respondent token from your invitation link", "token")
                # Spent in the same transaction: a refusal rolls the response back with it. The token's own row is
                # not written: its use is a bit in a bitmap row, which joins it to no response (`tokens.py`).
                refused = spend_token(self.engine, survey_id, token, self.layout.has_credentials)
                if refused == "unknown":
                    raise Invalid("token: not a token of this survey", "token")
                if refused == "used":
                    raise Conflict("token: already used; each invitation answers once", "token")
                if refused == "credentialed":
                    raise Conflict(CREDENTIALED, "token")
            if self._quotas(survey_id):
                self._count_in_quotas(survey_id, values)
            self._write_reports([(row["id"], spec_hash, values)])
        return self._acknowledgement(row), True

    def _quotas(self, survey_id: str) -> tuple:
        """The quotas of the survey's current version (none on a schema older than quotas)."""
        if not self.layout.has_quotas:
            return ()
        row = self._in_transaction("survey", survey_id, lambda: self.store.surveys.row(survey_id))
        return self.store.surveys.spec_of(row["current_hash"]).quotas

    def _count_in_quotas(self, survey_id: str, values: list):
        """Count a stored response in its quota cells, or refuse it (Conflict, field quota) when one is full. The survey
        row is held shared first, so a version that changes the quotas (which takes it exclusively to count them
        afresh) waits for this response, and this response then counts under the version published."""
        self.store.surveys.lock(survey_id, shared=True)
        quotas = self.store.surveys.spec_of(self.store.surveys.row(survey_id)["current_hash"]).quotas
        count_response(self.engine, survey_id, quotas, {qid: text for _, qid, text in values})

    def _write_reports(self, responses: list[tuple]):
        """The report rows of newly stored responses — (response id, spec hash, sorted values) —
        and their running totals, in one multi-row statement per table (per 1000 rows), all on one
        random counter shard, sent together (pipelined) on PostgreSQL."""
        if not responses:
            return
        rows = [(response_id, *value) for response_id, _, values in responses for value in values]
        counts = collections.Counter(value for _, _, values in responses for value in values)
        versions = collections.Counter(spec_hash for _, spec_hash, _ in responses)
        shard = secrets.randbelow(self.engine.counter_shards)
        with self.engine.pipeline():
            for chunk in chunks(rows, 1000):
                self.execute("INSERT INTO reports (response_id, spec_hash, question_id, value) VALUES "
                             + ", ".join(["(?, ?, ?, ?)"] * len(chunk)), [x for row in chunk for x in row])
            for chunk in chunks(sorted(counts.items()), 1000):  # sorted: every writer locks in one order
                self.execute("INSERT INTO report_counts (spec_hash, question_id, value, shard, count) VALUES "
                             + ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
                             + " ON CONFLICT (spec_hash, question_id, value, shard) "
                               "DO UPDATE SET count = report_counts.count + excluded.count",
                             [x for value, n in chunk for x in (*value, shard, n)])
            for spec_hash, n in sorted(versions.items()):
                self.execute("INSERT INTO version_counts (spec_hash, shard, responses) VALUES (?, ?, ?) "
                             "ON CONFLICT (spec_hash, shard) DO UPDATE SET responses = version_counts.responses + excluded.responses",
                             [spec_hash, shard, n])

    def _refusal(self, survey_id: str) -> StorageError | None:
        """Why the survey takes no response now, or None: closed by an admin (410), past the closing instant of its
        current spec (410), or before its opening instant (409). Read once per transaction; the window is the spec's
        (`client.schedule`), cached by hash, so an open survey's submission costs no extra statement."""
        row = self._in_transaction("survey", survey_id, lambda: self.store.surveys.row(survey_id))
        if row["closed_on"] is not None:
            return Gone(f"survey {survey_id!r} is closed", "survey_id")
        schedule = self.store.surveys.spec_of(row["current_hash"]).schedule
        state = schedule.state()
        if state == "closed":
            return Gone(f"survey {survey_id!r} closed at {written(schedule.closes)}: it takes no more responses",
                        "survey_id")
        if state == "not open":
            return Conflict(f"survey {survey_id!r} opens at {written(schedule.opens)}: it takes no responses before",
                            "survey_id")
        return None

    def _in_transaction(self, kind: str, key, read):
        """``read()`` once per outer transaction (a batch reads the survey row once, not per item);
        outside a transaction, every time."""
        if not self.engine.in_transaction:
            return read()
        memo = self.engine.memo
        if (kind, key) not in memo:
            memo[(kind, key)] = read()
        return memo[(kind, key)]

    @staticmethod
    def _acknowledgement(row: dict) -> dict:
        acknowledgement = {"id": row["id"], "survey_id": row["survey_id"], "spec_hash": row["spec_hash"],
                           "received_on": row["received_on"]}
        if row.get("wave") is not None:
            acknowledgement["wave"] = row["wave"]
        return acknowledgement

    def rebuild_counts(self):
        """Recompute the running totals and the quota counts from the stored rows (after a bulk load)."""
        with self.transaction():
            rebuild_counts(self.engine)
            if self.layout.has_quotas:
                self.execute("DELETE FROM quota_counts")
                for record in self.store.surveys.list_surveys():
                    recount_quotas(self.engine, record.id, record.survey.quotas)


def _saying_dropped(outcome: tuple[dict, bool], why: str | None) -> tuple[dict, bool]:
    """(acknowledgement, created), the acknowledgement saying why the response's paradata were dropped, if they were."""
    acknowledgement, created = outcome
    return ({**acknowledgement, "paradata_dropped": why} if why else acknowledgement), created
