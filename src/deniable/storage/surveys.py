"""Surveys and their versions, respondent invitation tokens, and the deployment's settings."""

from __future__ import annotations

import collections
import json
import re
import secrets
import threading
from dataclasses import dataclass

from deniable.client import SpecError, Survey
from deniable.client.panels import redrawn_questions
from deniable.client.sample import frame_roles
from deniable.client.versions import VersionError, changed_randomization, lowered_privacy, resolve_version

from .common import GRANULARITIES, digest, today
from .errors import Conflict, Gone, Invalid, NotFound, StorageError, Unconfirmed
from .frames import MIN_CELL, cell_ids, check_unissued, checked_rows, slots_by_cell
from .part import Part
from .quotas import counts as quota_counts
from .quotas import recount as recount_quotas
from .tokens import add_tokens, first_free_slot, token_counts, token_status

#: What a wave may be called: shown on dashboards and in exports, so plain.
WAVE_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:-]{0,63}")


@dataclass
class SurveyRecord:
    id: str
    hash: str
    version: int
    survey: Survey
    access: str  # "open" or "token"
    closed_on: str | None
    _count: object = None  # counts this version's responses on demand (not on the submit path)
    current_hash: str | None = None  # the survey's current version when this record was read

    @property
    def closed(self) -> bool:
        return self.closed_on is not None

    @property
    def responses(self) -> int:
        return self._count()

    @property
    def state(self) -> str:
        """"closed" (by an admin, or past its spec's ``closes``), "not open" (before ``opens``), or "open"."""
        return "closed" if self.closed else self.survey.schedule.state()



#: Parsed specs by their stored text, the most recently used kept: specs are immutable by hash and building a channel
#: (the ordinal search) is not free, but a worker that served every version of many surveys grew by ~84 KiB a version
#: for ever. `SPEC_CACHE_SIZE` versions cover any survey's current ones.
SPEC_CACHE_SIZE = 256
_SPEC_CACHE: collections.OrderedDict[str, Survey] = collections.OrderedDict()
_SPEC_LOCK = threading.Lock()
#: Each stored version by its hash (`Surveys.spec_of`), as many as `SPEC_CACHE_SIZE`.
_BY_HASH: dict = {}


def load_spec(text: str) -> Survey:
    with _SPEC_LOCK:
        survey = _SPEC_CACHE.get(text)
        if survey is not None:
            _SPEC_CACHE.move_to_end(text)
            return survey
    try:
        survey = Survey.from_json(text)
    except SpecError as error:  # pragma: no cover - stored specs were validated on the way in
        raise StorageError(f"stored spec is invalid: {error}") from None
    remember_spec(text, survey)
    return survey


def remember_spec(text: str, survey: Survey) -> None:
    """Keep ``survey`` as the parse of ``text``, forgetting the least recently used past `SPEC_CACHE_SIZE`."""
    with _SPEC_LOCK:
        _SPEC_CACHE[text] = survey
        _SPEC_CACHE.move_to_end(text)
        while len(_SPEC_CACHE) > SPEC_CACHE_SIZE:
            _SPEC_CACHE.popitem(last=False)


class Surveys(Part):
    """The part of `Store` that keeps surveys, versions, invitation tokens and settings."""

    def row(self, survey_id: str) -> dict | None:
        return self._one("SELECT id, current_hash, access, closed_on FROM surveys WHERE id = ?", [survey_id])

    def spec_of(self, spec_hash: str) -> Survey:
        """A stored version by its hash, read once per process, a version being immutable by its hash: the write
        path asks every submission's current version for its fieldwork window and its quotas."""
        with _SPEC_LOCK:
            known = _BY_HASH.get(spec_hash)
        if known is None:
            text = self.execute("SELECT spec FROM survey_versions WHERE hash = ?", [spec_hash]).fetchone()[0]
            known = load_spec(text)
            with _SPEC_LOCK:
                _BY_HASH[spec_hash] = known
                while len(_BY_HASH) > SPEC_CACHE_SIZE:
                    _BY_HASH.pop(next(iter(_BY_HASH)))
        return known

    def add_survey(self, survey: Survey, access: str | None = None, actor: str | None = None,
                   confirm_lower_privacy: bool = False, confirm_redesign: bool = False) -> tuple[SurveyRecord, str]:
        """Store a spec. Returns the record and what happened: "created", "unchanged" or "new version".

        A survey's spec is never changed in place: a different spec under the same id becomes
        a new version with its own hash, and responses keep the hash they were randomized under. A version that
        lowers a question's privacy (`versions.lowered_privacy`: asked directly, or a larger ε) is refused unless
        ``confirm_lower_privacy``: respondents would be served it at once. One that randomizes or asks an answered
        question differently (`versions.changed_randomization`) is refused unless ``confirm_redesign``: its reports so
        far and those to come would be estimated apart. Both are said in one refusal (`Unconfirmed`), before anything
        is published, not found out at estimate time.
        """
        if access not in (None, "open", "token"):
            raise Invalid(f"access must be 'open' or 'token', got {access!r}", "access")
        try:
            survey.check_fieldable()
        except SpecError as error:
            raise Invalid(str(error), "page_words") from None
        # The stored text reads back to this very survey: remember it, so the record below does not
        # parse and build every mechanism of the spec a second time.
        remember_spec(survey.canonical_json(), survey)
        with self.transaction():
            row = self.row(survey.id)
            if row is not None and row["current_hash"] == survey.hash:
                if access and access != row["access"]:
                    self.execute("UPDATE surveys SET access = ? WHERE id = ?", [access, survey.id])
                return self.get_survey(survey.id), "unchanged"
            if row is not None:
                self._check_panel_designs_kept(survey)
                current = self.get_survey(survey.id).survey
                lowered = lowered_privacy(current, survey)
                redesigned = changed_randomization(current, survey, self._answered(survey.id))
                self._check_confirmed(lowered, confirm_lower_privacy, redesigned, confirm_redesign)
            if self._one("SELECT hash FROM survey_versions WHERE hash = ?", [survey.hash]) is None:
                version = 1 + self.execute("SELECT COALESCE(MAX(version), 0) FROM survey_versions WHERE survey_id = ?",
                                           [survey.id]).fetchone()[0]
                self.execute("INSERT INTO survey_versions (hash, survey_id, version, spec, added_on) VALUES (?, ?, ?, ?, ?)",
                             [survey.hash, survey.id, version, survey.canonical_json(), today()])
            if row is None:
                self.execute("INSERT INTO surveys (id, current_hash, access, closed_on, added_on) VALUES (?, ?, ?, NULL, ?)",
                             [survey.id, survey.hash, access or "open", today()])
                outcome = "created"
            else:
                self.execute("UPDATE surveys SET current_hash = ?, access = COALESCE(?, access) WHERE id = ?",
                             [survey.hash, access, survey.id])
                outcome = "new version"
                self._recount_changed_quotas(current, survey)
            record = self.get_survey(survey.id)
            detail = f"version {record.version} {record.hash[:12]}"
            if row is not None and lowered:
                detail += f"; privacy lowered, confirmed: {'; '.join(lowered)}"
            if row is not None and redesigned:
                detail += f"; answered questions randomized anew, confirmed: {'; '.join(redesigned)}"
            self.store.accounts.audit_if(actor, f"survey {outcome}", survey.id, detail)
        return record, outcome

    def _recount_changed_quotas(self, current: Survey, survey: Survey) -> None:
        """A quota the version adds (or brings back) is counted afresh from the stored reports; a dropped one's counts
        go. Inside the publish, after its update of the survey row: a response being counted in quotas holds that row
        shared, so the count below waits for it, and responses after it count under this version."""
        if not self.layout.has_quotas:
            return
        kept = {quota.key for quota in current.quotas}
        recount_quotas(self.engine, survey.id, tuple(q for q in survey.quotas if q.key not in kept))
        dropped = kept - {quota.key for quota in survey.quotas}
        if dropped:
            self.execute(f"DELETE FROM quota_counts WHERE survey_id = ? AND quota IN ({', '.join('?' * len(dropped))})",
                         [survey.id, *sorted(dropped)])

    def quota_counts(self, survey_id: str) -> list[dict]:
        """The quota cells of the survey's current version: questions, cell (their answers), count, limit (None: no
        limit), full. Every cell with a limit of its own or a response is listed."""
        record = self.get_survey(survey_id)
        if not self.layout.has_quotas:
            return []
        return quota_counts(self.engine, survey_id, record.survey.quotas)

    def _answered(self, survey_id: str) -> set[str]:
        """The questions of a survey with reports stored under any of its versions."""
        return {row[0] for row in self.execute(
            "SELECT DISTINCT c.question_id FROM report_counts c JOIN survey_versions v ON v.hash = c.spec_hash "
            "WHERE v.survey_id = ? AND c.count > 0", [survey_id]).fetchall()}

    @staticmethod
    def _check_confirmed(lowered: list[str], lowered_confirmed: bool, redesigned: list[str], redesign_confirmed: bool):
        """Refuse, in one message, whatever a new version needs confirmed and was not."""
        said, needed = [], []
        if lowered and not lowered_confirmed:
            said.append(f"it lowers privacy ({'; '.join(lowered)}): respondents would be served it at once")
            needed.append("lower-privacy")
        if redesigned and not redesign_confirmed:
            said.append(f"it randomizes or asks answered questions differently ({'; '.join(redesigned)}): their reports "
                        "so far and those to come will be estimated apart, and a figure pooled over versions leaves "
                        "them out")
            needed.append("redesign")
        if needed:
            flags = " ".join(f"--confirm-{kind}" for kind in needed)
            raise Unconfirmed(f"confirm: this version needs your confirmation: {'; and '.join(said)}. Publish it again "
                              f"confirming that (API: ?confirm={','.join(needed)}; CLI: {flags}; dashboard: the "
                              "confirmation box)", tuple(needed))

    def _check_panel_designs_kept(self, survey: Survey) -> None:
        """Refuse a version of a repeated survey that changes how a memo draws a question's permanent report while an
        earlier version holds responses to it (`panels.redrawn_questions`): devices that answered hold the old draw."""
        for entry in self.versions(survey.id):
            if not entry["responses"] or entry["hash"] == survey.hash:
                continue
            changed = redrawn_questions(self.get_survey(survey.id, entry["hash"]).survey, survey)
            if changed:
                raise Conflict(
                    f"questions.{changed[0]}: survey {survey.id!r} is repeated, and its version {entry['version']} "
                    f"({entry['responses']} response(s)) asked {changed[0]!r} with another design, answer list or split "
                    "ballot. Devices that answered it would draw the new permanent report from the same memo randomness "
                    "as the old one, and the two reports together can reveal the answer. Keep the question's design, "
                    "options and split ballot, or ask the changed question under a new id (its reports then spend their "
                    "own ε over all waves, beside the old question's)", f"questions.{changed[0]}")

    #: A survey's row with one of its versions (the current one unless a hash is given) in one statement: every
    #: submission reads both, and on PostgreSQL each statement is a round trip to the server.
    _WITH_VERSION = ("SELECT s.id, s.current_hash, s.access, s.closed_on, v.version, v.spec FROM surveys s "
                     "LEFT JOIN survey_versions v ON v.survey_id = s.id AND v.hash = COALESCE(?, s.current_hash) ")

    def _record(self, row: dict, spec_hash: str | None = None) -> SurveyRecord:
        """The record of a survey row read with its version (`_WITH_VERSION`)."""
        spec_hash = spec_hash or row["current_hash"]
        if row["spec"] is None:
            raise Invalid(f"spec_hash {spec_hash!r} is not a version of survey {row['id']!r}", "spec_hash")

        def count():
            return self.responses_of(spec_hash)

        return SurveyRecord(id=row["id"], hash=spec_hash, version=row["version"], survey=load_spec(row["spec"]),
                            access=row["access"], closed_on=row["closed_on"], _count=count,
                            current_hash=row["current_hash"])

    def responses_of(self, spec_hash: str) -> int:
        """A version's responses now (its running total): responses are only ever added, so the same number read
        twice means the same responses."""
        return int(self.execute(self.layout.responses_of_version, [spec_hash]).fetchone()[0])

    def get_survey(self, survey_id: str, spec_hash: str | None = None) -> SurveyRecord:
        row = self._one(self._WITH_VERSION + "WHERE s.id = ?", [spec_hash, survey_id])
        if row is None:
            raise NotFound(f"no survey {survey_id!r}", "survey_id")
        return self._record(row, spec_hash)

    def find_version(self, survey_id: str, spec_hash: str | None = None, version=None) -> SurveyRecord:
        """A version to read: named by its full hash, a unique prefix of it, or its number (the
        current one when neither is given). Submitting names the full hash (`get_survey`)."""
        if spec_hash is None and version is None:
            return self.get_survey(survey_id)
        try:
            entry = resolve_version(self.versions(survey_id), survey_id, spec_hash, version)  # NotFound: no such survey
        except VersionError as error:
            raise (NotFound if error.missing else Invalid)(error.message, error.field) from None
        return self.get_survey(survey_id, entry["hash"])

    def list_surveys(self) -> list[SurveyRecord]:
        cursor = self.execute(self._WITH_VERSION + "ORDER BY s.id", [None])
        names = [c[0] for c in cursor.description]
        return [self._record(dict(zip(names, row))) for row in cursor.fetchall()]

    def versions(self, survey_id: str) -> list[dict]:
        self.get_survey(survey_id)
        rows = self.execute(self.layout.versions, [survey_id]).fetchall()
        return [{"version": v, "hash": h, "added_on": d, "responses": int(n)} for v, h, d, n in rows]

    def reopen_survey(self, survey_id: str, actor: str | None = None) -> SurveyRecord:
        """Accept responses again (a survey closed by mistake, or a second wave). ``actor``: who,
        for the audit log (written in the same transaction; None writes no line)."""
        self.get_survey(survey_id)
        with self.transaction():
            self.execute("UPDATE surveys SET closed_on = NULL WHERE id = ?", [survey_id])
            self.store.accounts.audit_if(actor, "survey reopened", survey_id)
        return self.get_survey(survey_id)

    def close_survey(self, survey_id: str, actor: str | None = None) -> SurveyRecord:
        record = self.get_survey(survey_id)
        with self.transaction():
            if not record.closed:
                self.execute("UPDATE surveys SET closed_on = ? WHERE id = ?", [today(), survey_id])
            self.store.accounts.audit_if(actor, "survey closed", survey_id)
        return self.get_survey(survey_id)

    # --- waves of a repeated survey -----------------------------------------------------------

    def require_repeated(self, survey_id: str) -> SurveyRecord:
        record = self.get_survey(survey_id)
        if record.survey.repeated is None:
            raise Invalid(f"wave: survey {survey_id!r} is not repeated; waves belong to a survey whose spec says "
                          "repeated: true (each device then keeps its permanent reports from wave to wave)", "wave")
        return record

    def open_wave(self, survey_id: str, label: str, actor: str | None = None) -> dict:
        """Open a new wave of a repeated survey (closing the open one): responses from now on belong to it."""
        self.require_repeated(survey_id)
        if not isinstance(label, str) or not WAVE_LABEL.fullmatch(label):
            raise Invalid(f"wave: a label of 1 to 64 letters, digits, spaces or . _ : - (starting with a letter or "
                          f"digit), such as 2026-11 or wave 2, got {label!r}", "wave")
        with self.transaction():
            self.lock(survey_id)
            if self._one("SELECT label FROM waves WHERE survey_id = ? AND label = ?", [survey_id, label]) is not None:
                raise Conflict(f"wave: survey {survey_id!r} has a wave {label!r} already; choose a new label", "wave")
            self.execute("UPDATE waves SET closed_on = ? WHERE survey_id = ? AND closed_on IS NULL", [today(), survey_id])
            position = self.execute("SELECT COALESCE(MAX(position), 0) + 1 FROM waves WHERE survey_id = ?",
                                    [survey_id]).fetchone()[0]
            self.execute("INSERT INTO waves (survey_id, label, position, opened_on, closed_on) VALUES (?, ?, ?, ?, NULL)",
                         [survey_id, label, position, today()])
            self.store.accounts.audit_if(actor, "wave opened", survey_id, label)
        return next(w for w in self.waves(survey_id) if w["label"] == label)

    def close_wave(self, survey_id: str, actor: str | None = None) -> dict:
        """Close the open wave: no response is accepted until the next one opens."""
        self.require_repeated(survey_id)
        with self.transaction():
            self.lock(survey_id)  # waits for the responses being stored into the wave, then closes it
            open_wave = self.open_wave_label(survey_id)
            if open_wave is None:
                raise Conflict(f"wave: survey {survey_id!r} has no open wave", "wave")
            self.execute("UPDATE waves SET closed_on = ? WHERE survey_id = ? AND label = ?", [today(), survey_id, open_wave])
            self.store.accounts.audit_if(actor, "wave closed", survey_id, open_wave)
        return next(w for w in self.waves(survey_id) if w["label"] == open_wave)

    def lock(self, survey_id: str, shared: bool = False):
        """Inside a transaction, hold the survey's row until it ends (PostgreSQL; SQLite writes one at a time): opening
        and closing a wave take it exclusively, so two of them run one after the other (two concurrent opens left two
        waves open; one label opened twice answered a 500), and a response to a repeated survey takes it shared, so a
        close waits for the responses being stored into its wave (7 were committed into a wave after its close had
        returned)."""
        self.execute("SELECT id FROM surveys s WHERE id = ?" + self.engine.lock_rows("s", shared), [survey_id])

    def open_wave_label(self, survey_id: str) -> str | None:
        if not self.layout.has_waves:
            return None
        row = self._one("SELECT label FROM waves WHERE survey_id = ? AND closed_on IS NULL", [survey_id])
        return None if row is None else row["label"]

    def waves(self, survey_id: str) -> list[dict]:
        """The survey's waves in the order they opened: label, opened_on, closed_on (None while open), responses."""
        self.get_survey(survey_id)
        if not self.layout.has_waves:
            return []
        rows = self.execute("SELECT w.label, w.opened_on, w.closed_on, (SELECT COUNT(*) FROM responses r "
                            "WHERE r.survey_id = w.survey_id AND r.wave = w.label) FROM waves w WHERE w.survey_id = ? "
                            "ORDER BY w.position", [survey_id]).fetchall()
        return [{"label": label, "opened_on": opened, "closed_on": closed, "responses": int(n)}
                for label, opened, closed, n in rows]

    # --- tokens -------------------------------------------------------------------------------

    def check_tokens(self, survey_id: str, count: int | None = None, frame=None,
                     min_cell: int = MIN_CELL) -> tuple[list, list | None]:
        """`issue_tokens`'s refusals, writing nothing (a dry run's): the tokens supplied per invitation (None: one to
        draw) and each invitation's frame row as stored text (None without a frame)."""
        record = self.get_survey(survey_id)
        if record.closed:
            raise Gone(f"survey {survey_id!r} is closed: reopen it first (deniable survey reopen {survey_id})", "survey_id")
        if frame is not None:
            if count is not None and count != len(frame):
                raise Invalid(f"count: {count}, but the frame has {len(frame)} rows (one token per row)", "count")
            return checked_rows(record.survey, frame, min_cell)
        if frame_roles(record.survey.sample):
            raise Invalid(f"frame: survey {survey_id!r} declares a frame (sample.frame: "
                          f"{', '.join(frame_roles(record.survey.sample))}); issue its invitations with one row each, "
                          "so every response carries its design variables", "frame")
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 100_000:
            raise Invalid("count must be between 1 and 100000", "count")
        return [None] * count, None

    def issue_tokens(self, survey_id: str, count: int | None = None, actor: str | None = None, frame=None,
                     min_cell: int = MIN_CELL) -> list[str]:
        """New single-use respondent tokens; only their hashes are stored. Turns token access on.

        ``frame``: one row per invitation ({column: value} of the columns the spec declares in ``sample.frame``,
        and optionally the ``token`` to issue); each row's token carries it, and so does the response that token
        sends (`frames.py`). Returned in the frame's row order. Every distinct row must be shared by ``min_cell``
        rows at least. A survey that declares a frame issues its invitations with one."""
        supplied, texts = self.check_tokens(survey_id, count, frame, min_cell)
        count = len(supplied)
        tokens = [token or secrets.token_urlsafe(16) for token in supplied]
        with self.transaction():
            # First: its row lock keeps a concurrent issue of the same survey from taking the same slots.
            self.execute("UPDATE surveys SET access = 'token' WHERE id = ?", [survey_id])
            hashes = [digest(t) for t in tokens]
            if texts is None:
                add_tokens(self.engine, survey_id, hashes)
            else:
                check_unissued(self.engine, [t for t in supplied if t is not None])
                cell_of = cell_ids(self.engine, survey_id, texts)
                cells = [cell_of[text] for text in texts]
                add_tokens(self.engine, survey_id, hashes, slots_by_cell(first_free_slot(self.engine, survey_id), cells),
                           cells)
            detail = f"{count} tokens" + ("" if texts is None else f" with frame rows ({len(set(texts))} distinct)")
            self.store.accounts.audit_if(actor, "invitation tokens issued", survey_id, detail)
        return tokens

    def frame_summary(self, survey_id: str) -> dict:
        """How the invitations' frame narrows responses: frame rows (cells) in use, invitations with one, and the
        answers per cell (the fewest, and how many cells have a single answer: those name their respondent's
        reports to whoever reads both the frame and the tokens' bitmaps)."""
        if not self.layout.has_frames:
            return {"cells": 0, "invitations": 0, "fewest_invitations": None, "answered_cells": 0,
                    "fewest_answers": None, "cells_with_one_answer": 0}
        invitations = [n for (n,) in self.execute("SELECT COUNT(*) FROM tokens WHERE survey_id = ? AND frame_cell "
                                                   "IS NOT NULL GROUP BY frame_cell", [survey_id]).fetchall()]
        answers = [n for (n,) in self.execute("SELECT COUNT(*) FROM responses WHERE survey_id = ? AND frame_cell "
                                               "IS NOT NULL GROUP BY frame_cell", [survey_id]).fetchall()]
        return {"cells": len(invitations), "invitations": sum(invitations),
                "fewest_invitations": min(invitations, default=None), "answered_cells": len(answers),
                "fewest_answers": min(answers, default=None), "cells_with_one_answer": answers.count(1)}

    def frame_invitations(self, survey_id: str) -> list[tuple[dict, int]]:
        """(frame row, invitations issued with it) per distinct row of the survey's frame: what a plan sizes the
        design from (`analysis.planned_design`)."""
        if not self.layout.has_frames:
            return []
        return [(json.loads(frame), int(count)) for frame, count in self.execute(
            "SELECT f.frame, COUNT(*) FROM tokens t JOIN frame_cells f ON f.survey_id = t.survey_id AND f.cell = "
            "t.frame_cell WHERE t.survey_id = ? GROUP BY f.frame", [survey_id]).fetchall()]

    def token_status(self, survey_id: str, token: str) -> str | None:
        """"unused" or "used" for a token of this survey, None for any other string: what the survey page
        tells a respondent before they answer. Sending still decides, in the transaction that spends it."""
        return token_status(self.engine, survey_id, token)

    def token_counts(self, survey_id: str) -> dict:
        """{issued, used (spent as themselves), credentials (exchanged for a credential: opened on a device, and
        answered or not, which nobody can tell)}."""
        if not self.layout.has_token_use:  # an older schema, read as it is
            issued, used = self.execute("SELECT COUNT(*), COUNT(used_on) FROM tokens WHERE survey_id = ?",
                                        [survey_id]).fetchone()
            return {"issued": issued, "used": used, "credentials": 0}
        counts = token_counts(self.engine, survey_id)
        # opened with a credential: answered or not, nobody can tell (a schema before credentials has none)
        counts["credentials"] = self.store.credentials.credentials_issued(survey_id) if self.layout.has_credentials else 0
        return counts


    # --- settings -----------------------------------------------------------------------------

    def get_setting(self, key: str) -> str | None:
        row = self.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
        return None if row is None else row[0]

    def set_setting(self, key: str, value: str):
        self.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                     [key, value])

    def received_on_granularity(self) -> str:
        """How finely arrival dates are kept: "day" (the default), "week" or "month"."""
        return self.get_setting("received_on") or "day"

    def set_received_on_granularity(self, granularity: str):
        if granularity not in GRANULARITIES:
            raise Invalid(f"received_on: must be one of {', '.join(GRANULARITIES)}, got {granularity!r}", "received_on")
        self.set_setting("received_on", granularity)

