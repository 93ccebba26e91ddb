"""Quotas on public answers, counted in the transaction that stores each response (both engines): no cell ever holds
more than its limit, however many submissions race for it; a full cell refuses with 409 on ``quota`` and stores
nothing; a retry of a stored response is still acknowledged; a version that adds a quota counts what is stored."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from deniable import storage
from deniable.client import Survey

pytestmark = pytest.mark.both_engines

QUESTIONS = [
    {"id": "region", "type": "choice", "text": "Region?", "options": ["north", "south", "east"], "privacy": "none"},
    {"id": "member", "type": "yes_no", "text": "Member?", "privacy": "none", "required": False},
    {"id": "dodged", "type": "yes_no", "text": "Have you dodged taxes?"},
]


def quota_survey(quotas) -> Survey:
    return Survey.from_dict({"id": "field", "title": "Fieldwork", "questions": QUESTIONS, "quotas": quotas})


def answers(region, member="yes"):
    given = {"region": region, "dodged": "no"}
    if member is not None:
        given["member"] = member
    return given


def submit(store, survey, key, region, member="yes"):
    return store.submit("field", survey.hash, f"key-{key:06d}", survey.randomize(answers(region, member)))


def cells(store) -> dict:
    return {(tuple(c["questions"]), tuple(c["cell"])): (c["count"], c["limit"], c["full"])
            for c in store.quota_counts("field")}


def test_a_full_cell_refuses_with_409_on_quota_and_stores_nothing(store):
    survey = quota_survey([{"question": "region", "limit": 2, "limits": {"east": 0}}])
    store.add_survey(survey)
    for key in range(2):
        submit(store, survey, key, "north")
    before = store.response_count("field")
    with pytest.raises(storage.Conflict) as refused:
        submit(store, survey, 2, "north")
    assert refused.value.field == "quota" and "region = north" in refused.value.message
    with pytest.raises(storage.Conflict, match="region = east"):  # a limit of 0 takes none
        submit(store, survey, 3, "east")
    assert store.response_count("field") == before == 2
    submit(store, survey, 4, "south")  # another cell is open
    assert cells(store) == {(("region",), ("east",)): (0, 0, True), (("region",), ("north",)): (2, 2, True),
                            (("region",), ("south",)): (1, 2, False)}
    # A retry of a stored response is acknowledged, not counted again, even with its cell full.
    body = survey.randomize(answers("south"))
    first, created = store.submit("field", survey.hash, "retry-key", body)
    again, created_again = store.submit("field", survey.hash, "retry-key", body)
    assert created and not created_again and again == first
    assert cells(store)[(("region",), ("south",))] == (2, 2, True)
    with pytest.raises(storage.Conflict):
        store.submit("field", survey.hash, "retry-key-2", body)


def test_a_crossed_quota_counts_combinations_and_a_skipped_question_falls_in_no_cell(store):
    survey = quota_survey([{"questions": ["region", "member"], "limit": 1}])
    store.add_survey(survey)
    submit(store, survey, 0, "north", "yes")
    submit(store, survey, 1, "north", "no")
    submit(store, survey, 2, "north", None)  # member left out: in no cell of the crossed quota
    submit(store, survey, 3, "north", None)
    with pytest.raises(storage.Conflict, match="region = north, member = yes"):
        submit(store, survey, 4, "north", "yes")
    assert store.response_count("field") == 4
    assert cells(store) == {(("region", "member"), ("north", "no")): (1, 1, True),
                            (("region", "member"), ("north", "yes")): (1, 1, True)}


def test_a_version_that_adds_a_quota_counts_what_is_stored_and_a_batch_goes_one_at_a_time(store):
    plain = quota_survey(None)
    store.add_survey(plain)
    for key in range(3):
        submit(store, plain, key, "north")
    with_quota = quota_survey([{"question": "region", "limit": 4}])
    store.add_survey(with_quota)
    assert cells(store) == {(("region",), ("north",)): (3, 4, False)}
    # A batch (the API's and group commit's path): judged one at a time against the count the one before left.
    items = [(with_quota.hash, f"batch-key-{i}", with_quota.randomize(answers("north")), None) for i in range(3)]
    items.append((plain.hash, "batch-old-version", plain.randomize(answers("south")), None))
    outcomes = store.submit_many("field", items)
    assert isinstance(outcomes[0], tuple) and outcomes[0][1]
    assert all(isinstance(o, storage.Conflict) and o.field == "quota" for o in outcomes[1:3])
    assert isinstance(outcomes[3], tuple)  # an answer to an older version counts under the current quotas
    assert cells(store) == {(("region",), ("north",)): (4, 4, True), (("region",), ("south",)): (1, 4, False)}
    # Dropped, its counts go; raised again, counted afresh; the bulk loader's rebuild agrees.
    store.add_survey(plain)
    assert store.quota_counts("field") == []
    store.add_survey(quota_survey([{"question": "region", "limit": 10}]))
    assert cells(store) == {(("region",), ("north",)): (4, 10, False), (("region",), ("south",)): (1, 10, False)}
    store.execute("DELETE FROM quota_counts")
    store.rebuild_counts()
    assert cells(store) == {(("region",), ("north",)): (4, 10, False), (("region",), ("south",)): (1, 10, False)}


def test_64_concurrent_submissions_never_overshoot_a_cell(db_path, store):
    """Every submission races for a cell of 10 (north) or 20 (south): exactly the limit is stored, every other is a
    409 on quota, and the count equals the stored responses."""
    survey = quota_survey([{"question": "region", "limits": {"north": 10, "south": 20}}])
    store.add_survey(survey)
    start = threading.Barrier(64)

    def run(i):
        start.wait(60)
        outcomes = []
        for j in range(2):  # a store per submission, as a server's request has (a process pools 32 connections)
            with storage.Store(db_path, migrate=False) as own:
                try:
                    submit(own, survey, i * 10 + j, "north" if (i + j) % 2 else "south")
                    outcomes.append("stored")
                except storage.Conflict as error:
                    outcomes.append(error.field)
        return outcomes

    with ThreadPoolExecutor(64) as pool:
        outcomes = [o for each in pool.map(run, range(64)) for o in each]
    assert outcomes.count("stored") == 30 and outcomes.count("quota") == 98, outcomes
    assert store.response_count("field") == 30
    assert cells(store) == {(("region",), ("north",)): (10, 10, True), (("region",), ("south",)): (20, 20, True)}
    stored = dict(store.execute("SELECT r.value, COUNT(*) FROM reports r WHERE r.question_id = 'region' "
                                "GROUP BY r.value").fetchall())
    assert stored == {'"north"': 10, '"south"': 20}
