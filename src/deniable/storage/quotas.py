"""Quota counts (`client.quotas`): per survey, quota and cell, the responses stored in it, kept in the transaction that
stores each response, so a cell never holds more than its limit however many submissions race.

A cell's row is taken with one upsert that adds one only while the count is below the limit (``ON CONFLICT DO UPDATE
... WHERE count < limit``): on PostgreSQL the row lock makes racing submissions to one cell queue, and each sees the
count its predecessor committed; SQLite writes one transaction at a time. A response that finds its cell full is rolled
back with everything it wrote. The counts are of public answers, which the reports table holds beside each response
already: they tell nothing it does not.

A quota's counts cover every stored response of the survey, whichever version it answered; they are counted afresh
from the stored reports when a version adds a quota (or brings one back), and by `recount_quotas` after a bulk load.
"""

from __future__ import annotations

import json

from deniable.client.json_text import canonical_json
from deniable.client.quotas import Quota

from .common import chunks
from .errors import Conflict


def cell_text(texts) -> str:
    """A cell as stored: the JSON list of its answers, from their stored (canonical) texts, as a report is kept."""
    return "[" + ",".join(texts) + "]"


def count_response(engine, survey_id: str, quotas: tuple[Quota, ...], reports: dict[str, str]) -> None:
    """Add one stored response to the cells it falls in, or raise `Conflict` (field ``quota``) when one is full.
    ``reports``: question id → the stored (canonical) text of its report. Cells in one order for every writer."""
    found = []
    for quota in quotas:
        texts = [reports.get(qid) for qid in quota.questions]
        if any(text is None for text in texts):
            continue
        cell = tuple(json.loads(text) for text in texts)
        found.append((quota.key, cell_text(texts), quota.limit_of(cell), quota, cell))
    for key, text, limit, quota, cell in sorted(found, key=lambda entry: entry[:2]):
        if limit is None:
            engine.execute("INSERT INTO quota_counts (survey_id, quota, cell, count) VALUES (?, ?, ?, 1) "
                           "ON CONFLICT (survey_id, quota, cell) DO UPDATE SET count = quota_counts.count + 1",
                           [survey_id, key, text])
            continue
        taken = limit > 0 and engine.execute(
            "INSERT INTO quota_counts (survey_id, quota, cell, count) VALUES (?, ?, ?, 1) "
            "ON CONFLICT (survey_id, quota, cell) DO UPDATE SET count = quota_counts.count + 1 "
            "WHERE quota_counts.count < ? RETURNING count", [survey_id, key, text, limit]).fetchone() is not None
        if not taken:
            named = ", ".join(f"{qid} = {value}" for qid, value in zip(quota.questions, cell))
            raise Conflict(f"quota: the quota of survey {survey_id!r} for {named} is full ({limit} responses); this "
                           "response was not stored", "quota")


def counts(engine, survey_id: str, quotas: tuple[Quota, ...]) -> list[dict]:
    """Every cell with a limit or a response, per quota: questions, cell (answers), count, limit, full."""
    stored: dict = {}
    for key, text, count in engine.execute("SELECT quota, cell, count FROM quota_counts WHERE survey_id = ?",
                                           [survey_id]).fetchall():
        stored[(key, text)] = int(count)
    found = []
    for quota in quotas:
        cells = {tuple(json.loads(text)) for key, text in stored if key == quota.key}
        cells |= {cell for cell, _ in quota.limits}
        for cell in sorted(cells):
            count = stored.get((quota.key, cell_text(canonical_json(value) for value in cell)), 0)
            limit = quota.limit_of(cell)
            found.append({"questions": list(quota.questions), "cell": list(cell), "count": count, "limit": limit,
                          "full": limit is not None and count >= limit})
    return found


def recount(engine, survey_id: str, quotas: tuple[Quota, ...]) -> None:
    """Count the named quotas' cells afresh from the survey's stored reports (every version)."""
    for quota in quotas:
        engine.execute("DELETE FROM quota_counts WHERE survey_id = ? AND quota = ?", [survey_id, quota.key])
        marks = ", ".join("?" * len(quota.questions))
        rows = engine.execute(
            "SELECT r.response_id, r.question_id, r.value FROM reports r JOIN responses s "
            "ON s.spec_hash = r.spec_hash AND s.id = r.response_id "
            f"WHERE s.survey_id = ? AND r.question_id IN ({marks})", [survey_id, *quota.questions]).fetchall()
        answers: dict = {}
        for response_id, qid, value in rows:
            answers.setdefault(response_id, {})[qid] = value
        tally: dict = {}
        for given in answers.values():
            if len(given) == len(quota.questions):
                text = cell_text(given[qid] for qid in quota.questions)
                tally[text] = tally.get(text, 0) + 1
        for chunk in chunks(sorted(tally.items()), 500):
            engine.execute("INSERT INTO quota_counts (survey_id, quota, cell, count) VALUES "
                           + ", ".join(["(?, ?, ?, ?)"] * len(chunk)),
                           [x for text, count in chunk for x in (survey_id, quota.key, text, count)])
