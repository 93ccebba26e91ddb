"""The running totals a batch through the API leaves equal a full count of the stored reports, after retries and refused items."""

import pytest

from tests.databases import ANSWERS
from tests.storage.test_storage import _scanned_counts

pytestmark = pytest.mark.both_engines



def test_running_totals_equal_a_full_count_after_retries_and_failed_batch_items(client, store, survey):
    record = store.get_survey("tax")
    items = []
    for i in range(40):
        body = {"spec_hash": record.hash, "idempotency_key": f"batch-{i:05d}", "reports": survey.randomize(ANSWERS)}
        if i % 7 == 0:
            body["reports"]["hours"] = 999  # judged on its own and rolled back to its savepoint
        items.append(body)
    client.post("/api/v1/surveys/tax/responses:batch", json={"items": items + items[:5]})  # retries inside
    for body in items[:10]:
        client.post("/api/v1/surveys/tax/responses", json=body)  # retries of stored and refused items
    totals = sorted(store.execute("SELECT question_id, value, SUM(count) FROM report_counts WHERE spec_hash = ? "
                                  "GROUP BY question_id, value", [record.hash]).fetchall())
    assert totals == _scanned_counts(store, record.hash)
    assert store.get_survey("tax").responses == store.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 34
