"""The read path: counts (from the running totals, or grouped by a public question), report rows
for per-response analysis, and exports. Every reader, the analysis included, reads through here,
on either engine and any schema from 1 on (`schema.Layout`)."""

from __future__ import annotations

import json

from deniable.client import Survey
from deniable.client.reports import WAVES, ReportError, grouping_question

from .common import canonical, chunks, decoded_report
from .errors import Invalid
from .part import Part
from .release import Release, release


class Reads(Part):
    """The part of `Store` that reads reports."""

    def response_count(self, survey_id: str) -> int:
        """Responses to every version of a survey."""
        return sum(int(row[3]) for row in self.execute(self.layout.versions, [survey_id]).fetchall())

    def counts(self, survey_id: str, spec_hash: str | None = None, by: str | None = None, version=None,
               leave_out_flagged: bool = False) -> dict:
        """Per question, how many of each report value (for one version); optionally per level of a
        public question ``by``. Aggregated in SQL; the running totals' shards are summed. ``leave_out_flagged``: the
        responses the spec's quality checks flag (`flagged`) are left out, and ``left_out`` says how many and why."""
        record = self.store.surveys.find_version(survey_id, spec_hash, version)
        flagged, flagged_params = self._flagged(record) if leave_out_flagged else ("", [])
        keep = f" AND r.response_id NOT IN ({flagged})" if flagged else ""
        if by == WAVES:
            rows = [(canonical(wave), qid, value, n) for wave, qid, value, n in self._wave_counts(record, keep,
                                                                                                  flagged_params)]
        elif by is not None:
            try:
                grouping_question(record.survey, by)
            except ReportError as error:
                raise Invalid(error.message, error.field) from None
            rows = self.execute(
                "SELECT g.value, r.question_id, r.value, COUNT(*) FROM reports r "
                "JOIN reports g ON g.spec_hash = r.spec_hash AND g.response_id = r.response_id AND g.question_id = ? "
                f"WHERE r.spec_hash = ?{keep} GROUP BY g.value, r.question_id, r.value",
                [by, record.hash, *flagged_params]).fetchall()
        elif flagged:
            rows = [(None, *row) for row in self.execute(
                f"SELECT r.question_id, r.value, COUNT(*) FROM reports r WHERE r.spec_hash = ?{keep} "
                "GROUP BY r.question_id, r.value", [record.hash, *flagged_params]).fetchall()]
        else:
            rows = [(None, *row) for row in self.execute(self.layout.report_totals, [record.hash]).fetchall()]
        table: dict = {}  # group (canonical JSON text, or None) → question → [{report, count}]
        for group, qid, value, count in rows:
            table.setdefault(group, {}).setdefault(qid, []).append({"report": json.loads(value), "count": int(count)})
        result = {"survey_id": survey_id, "spec_hash": record.hash, "version": record.version,
                  "responses": record.responses}
        if leave_out_flagged:
            left_out = self.quality_flags(survey_id, record.hash)
            result["responses"] -= left_out["flagged"]
            result["left_out"] = left_out
        if by is None:
            result["counts"] = ordered_counts(record.survey, table.get(None, {}))
        else:
            levels = ([w["label"] for w in self.store.surveys.waves(survey_id)] if by == WAVES
                      else record.survey.questions[by].mechanism.reports)
            result["by"] = by
            result["groups"] = [{"value": level, "counts": ordered_counts(record.survey, table[canonical(level)])}
                                for level in levels if canonical(level) in table]
        return result

    def _flagged(self, record, kind: str | None = None) -> tuple[str, list]:
        """A query of the version's responses that its spec's quality checks flag (``kind``: "failed_check" or
        "too_fast" only), with its parameters; ("", []) when the spec flags nothing (`client.quality`)."""
        parts, params = [], []
        quality = record.survey.quality
        if kind in (None, "too_fast") and quality is not None and quality.min_seconds and self.layout.has_paradata:
            parts.append("SELECT id FROM responses WHERE spec_hash = ? AND seconds < ?")
            params += [record.hash, quality.min_seconds]
        if kind in (None, "failed_check"):
            for qid, question in record.survey.questions.items():
                if question.check is not None:  # answered, and not as instructed
                    parts.append("SELECT response_id FROM reports WHERE spec_hash = ? AND question_id = ? AND value <> ?")
                    params += [record.hash, qid, canonical(question.check)]
        return " UNION ".join(parts), params

    def flagged_responses(self, survey_id: str, spec_hash: str | None = None, version=None) -> set[str]:
        """The ids of a version's responses that its spec's quality checks flag."""
        record = self.store.surveys.find_version(survey_id, spec_hash, version)
        query, params = self._flagged(record)
        return {row[0] for row in self.execute(query, params).fetchall()} if query else set()

    def quality_flags(self, survey_id: str, spec_hash: str | None = None, version=None) -> dict:
        """How many of a version's responses its spec's quality checks flag: ``flagged`` in all, ``failed_check``
        (answered an instructed item otherwise), ``too_fast`` (under quality.min_seconds in all); one may be both."""
        record = self.store.surveys.find_version(survey_id, spec_hash, version)
        found = {"flagged": 0, "failed_check": 0, "too_fast": 0}
        for kind in found:
            query, params = self._flagged(record, None if kind == "flagged" else kind)
            if query:
                found[kind] = int(self.execute(f"SELECT COUNT(*) FROM ({query}) flagged", params).fetchone()[0])
        return found

    def _wave_counts(self, record, keep: str = "", params=()):
        """(wave, question id, value, count) of one version's reports: a response keeps the wave it arrived in."""
        if record.survey.repeated is None or not self.layout.has_waves:
            raise Invalid(f"by: survey {record.id!r} is not repeated; only a repeated survey's responses have waves", "by")
        return self.execute("SELECT p.wave, r.question_id, r.value, COUNT(*) FROM reports r JOIN responses p "
                            "ON p.spec_hash = r.spec_hash AND p.id = r.response_id "
                            f"WHERE r.spec_hash = ? AND p.wave IS NOT NULL{keep} "
                            "GROUP BY p.wave, r.question_id, r.value", [record.hash, *params]).fetchall()

    def responses_per_day(self, survey_id: str) -> list[tuple[str, int]]:
        """(date received, responses) per day with any, oldest first: daily counts only, as the server keeps
        no time of day (a week or a month when received_on is kept that coarsely)."""
        self.store.surveys.get_survey(survey_id)
        return [(day, int(n)) for day, n in self.execute(
            "SELECT received_on, COUNT(*) FROM responses WHERE survey_id = ? GROUP BY received_on ORDER BY received_on",
            [survey_id]).fetchall()]

    def response_ids(self, spec_hash: str) -> str:
        """The ids of one version's responses, joined by commas in one text (no id holds a comma): one row, where a
        row per id cost a million responses 1 s of CPU to read, this 0.3 s."""
        join = "string_agg(id, ',')" if self.engine.dialect == "postgresql" else "group_concat(id, ',')"
        return self.execute(f"SELECT {join} FROM responses WHERE spec_hash = ?", [spec_hash]).fetchone()[0] or ""

    def report_rows(self, spec_hash: str, question_ids: list[str]):
        """(response id, question id, canonical value) of the given questions of one version, streamed (a million
        responses' rows never sit in memory at once: the reader builds its frame as they come)."""
        marks = ",".join("?" * len(question_ids))
        yield from self.engine.stream(f"SELECT response_id, question_id, value FROM reports WHERE spec_hash = ? "
                                      f"AND question_id IN ({marks})", [spec_hash, *question_ids])

    def export(self, survey_id: str, spec_hash: str | None = None, version=None):
        """Yield one dict per response of a version: id, spec_hash, received_on, (a repeated survey's) wave, the
        columns of its invitation's frame row (when its token carried one), reports; in the order of the random
        response ids, which says nothing about when anyone answered."""
        record = self.store.surveys.find_version(survey_id, spec_hash, version)
        wave = "r.wave" if self.layout.has_waves else "NULL"
        frame = "r.frame_cell" if self.layout.has_frames else "NULL"
        released = self.released_frames(record.id, record.survey.sample).rows if self.layout.has_frames else {}
        times = "r.paradata" if self.layout.has_paradata else "NULL"
        rows = self.engine.stream(
            f"SELECT r.id, r.received_on, {wave}, {frame}, {times}, p.question_id, p.value FROM responses r "
            "LEFT JOIN reports p ON p.spec_hash = r.spec_hash AND p.response_id = r.id WHERE r.spec_hash = ? ORDER BY r.id", [record.hash])
        order = list(record.survey.questions)

        def ordered(row):
            row["reports"] = {qid: row["reports"][qid] for qid in order if qid in row["reports"]}
            return row

        current = None
        timed = record.survey.quality is not None and record.survey.quality.section_times
        decoded: dict = {}  # `decoded_report`
        for response_id, received_on, wave_label, frame_cell, paradata, qid, value in rows:
            if current is None or current["id"] != response_id:
                if current is not None:
                    yield ordered(current)
                current = {"id": response_id, "spec_hash": record.hash, "received_on": received_on}
                if record.survey.repeated is not None:
                    current["wave"] = wave_label
                frame_row = released.get(frame_cell)  # its invitation's, as released (`release.py`)
                if frame_row is not None:  # named apart from the own fields (`frames.py`)
                    current.update(frame_row)
                if timed:  # seconds per section (`client.quality`); {} from a client that sent none
                    current["seconds"] = json.loads(paradata)["seconds"] if paradata else {}
                current["reports"] = {}
            if qid is not None:
                report = decoded.get(value)
                current["reports"][qid] = report if report is not None else decoded_report(decoded, value)
        if current is not None:
            yield ordered(current)

    def response_waves(self, spec_hash: str) -> list[tuple[str, str | None]]:
        """(response id, wave label) of one version's responses (None before waves existed)."""
        if not self.layout.has_waves:
            return [(row[0], None) for row in self.execute("SELECT id FROM responses WHERE spec_hash = ?",
                                                          [spec_hash]).fetchall()]
        return [tuple(row) for row in self.execute("SELECT id, wave FROM responses WHERE spec_hash = ?",
                                                   [spec_hash]).fetchall()]

    def frame_rows(self, spec_hash: str) -> list[tuple[str, dict]]:
        """(response id, its invitation's frame row as released, `release.py`) of one version's responses that carry
        one (`frames.py`)."""
        if not self.layout.has_frames:
            return []
        found = self.execute("SELECT r.id, r.frame_cell, r.survey_id FROM responses r WHERE r.spec_hash = ? AND "
                             "r.frame_cell IS NOT NULL", [spec_hash]).fetchall()
        if not found:
            return []
        record = self.store.surveys.find_version(found[0][2], spec_hash)
        released = self.released_frames(record.id, record.survey.sample).rows
        return [(response_id, released[cell]) for response_id, cell, _ in found if released.get(cell) is not None]

    def released_frames(self, survey_id: str, sample: dict) -> Release:
        """The frame rows the survey's responses carry out, each cell judged by its answers (`release.py`)."""
        cells = {cell: json.loads(frame) for cell, frame in self.execute(
            "SELECT cell, frame FROM frame_cells WHERE survey_id = ?", [survey_id]).fetchall()}
        answers = {cell: int(count) for cell, count in self.execute(
            "SELECT frame_cell, COUNT(*) FROM responses WHERE survey_id = ? AND frame_cell IS NOT NULL GROUP BY "
            "frame_cell", [survey_id]).fetchall()}
        return release(sample, cells, answers)

    def export_all_versions(self, survey_id: str):
        """`export`'s rows of every version, oldest first, each with its ``version`` number after its spec hash."""
        for entry in self.store.surveys.versions(survey_id):
            for row in self.export(survey_id, entry["hash"]):
                yield {"id": row.pop("id"), "spec_hash": row.pop("spec_hash"), "version": entry["version"], **row}

    def stored_responses(self, survey_id: str, keys: list[str]) -> dict:
        """{idempotency key: its stored response row} for the keys already stored (a retry is answered from it)."""
        found = {}
        for chunk in chunks(keys, 500):
            cursor = self.execute("SELECT id, survey_id, spec_hash, received_on, fingerprint, wave, idempotency_key "
                                  f"FROM responses WHERE survey_id = ? AND idempotency_key IN ({', '.join('?' * len(chunk))})",
                                  [survey_id, *chunk])
            names = [c[0] for c in cursor.description]
            found.update({row[-1]: dict(zip(names, row)) for row in cursor.fetchall()})
        return found



def ordered_counts(survey: Survey, table: dict) -> dict:
    """Counts per question in report-alphabet order, zeros included, so every value is listed."""
    result = {}
    for qid, question in survey.questions.items():
        seen = {canonical(item["report"]): item["count"] for item in table.get(qid, [])}
        alphabet = question.report_space.reports if len(question.mechanism.answers) <= 4096 else []
        listed = [{"report": r, "count": seen.pop(canonical(r), 0)} for r in alphabet]
        result[qid] = listed + [{"report": json.loads(k), "count": n} for k, n in seen.items()]
    return result
