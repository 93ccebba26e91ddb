"""Repeated surveys: the memo, the two layers, and the guarantee over waves."""

from __future__ import annotations

import itertools
import os
import stat
from fractions import Fraction

import pytest

from deniable.client import AnswerError, SpecError, Survey
from deniable.client.memo import Memo, MemoError, message
from deniable.client.panels import InstantLayer, memoized, redrawn_questions
from tests.conftest import SeededSource

COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}
CDM = {"design": "cheating_detection", "groups": {
    "a": {"yes": "1/3", "randomizer": "If your birthday is in January to April, answer yes; otherwise the truth."},
    "b": {"yes": "2/3", "randomizer": "If your birthday is in January to August, answer yes; otherwise the truth."}}}


def panel(*questions, repeated=True, **top):
    return Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": repeated, "questions": list(questions), **top})


def question(qid="q", qtype="yes_no", privacy=None, **extra):
    return {"id": qid, "type": qtype, "text": f"{qid}?", "privacy": privacy or COIN, **extra}


FAMILIES = {
    "coin": question(),
    "warner": question(privacy={"design": "warner", "p": "3/4"}),
    "krr": question(qtype="choice", privacy={"design": "k_rr", "epsilon": "ln 3"}, options=["a", "b", "c"]),
    "ordinal": question(qtype="ordinal", privacy={"design": "ordinal", "epsilon": 1}, options=["1", "2", "3", "4"]),
    "unary": question(qtype="multi_select", privacy={"design": "unary", "epsilon": 2}, options=["a", "b", "c"]),
    "laplace": question(qtype="number", privacy={"design": "laplace", "epsilon": 1}, min=0, max=3, step=1),
    "crosswise": question(privacy={"design": "crosswise", "p": "1/4", "companion": "Were you born on a Sunday?"}),
    "triangular": question(privacy={"design": "triangular", "p": "1/4", "companion": "Were you born on a Sunday?"}),
    "cdm": question(privacy=CDM),
}


def instant_matrix(mechanism, layer: InstantLayer):
    """The instantaneous layer written out as a matrix over the reports (I[r'][r] = P(r' | permanent r))."""
    reports = mechanism.reports
    if layer.per_bit:
        def bit(kept_bit, bit_value):
            return layer.keep if kept_bit == bit_value else layer.other
        return [[_product(bit(o in after, o in before) for o in mechanism.options) for before in reports]
                for after in reports]

    def block(r):
        return r["group"] if isinstance(r, dict) else None
    return [[Fraction(0) if block(after) != block(before) else layer.keep if after == before else layer.other
             for before in reports] for after in reports]


def _product(values):
    result = Fraction(1)
    for value in values:
        result *= value
    return result


def worst_ratio(rows):
    worst = Fraction(1)
    for row in rows:
        if min(row) == 0:
            return None if max(row) > 0 else worst
        worst = max(worst, max(row) / min(row))
    return worst


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("repeated", [True, {"instant_epsilon": "ln 9"}, {"instant_epsilon": 0.5}])
def test_the_composite_channel_is_the_matrix_product_and_its_epsilon_is_enumerated(family, repeated):
    q = panel(FAMILIES[family], repeated=repeated).questions["q"]
    permanent, composite = q.permanent, q.mechanism
    layer = composite.instant
    instant = instant_matrix(permanent, layer)
    channel = permanent.channel()
    product = [[sum(instant[i][j] * channel[j][a] for j in range(len(channel))) for a in range(len(channel[0]))]
               for i in range(len(instant))]
    assert composite.channel() == product
    assert composite.exp_epsilon == worst_ratio(product)
    assert composite.exp_epsilon is not None  # the instantaneous layer bounds even a one-sided design's report
    assert q.epsilon <= q.epsilon_all_waves + 1e-12
    assert all(sum(column) == 1 for column in zip(*product))
    if hasattr(permanent, "latent_classes"):  # the analysis channel's columns go through the same layer
        for (label, column), (_, before) in zip(composite.latent_classes, permanent.latent_classes):
            assert column == [sum(instant[i][j] * before[j] for j in range(len(before))) for i in range(len(instant))], label


def test_the_default_layer_keeps_nine_tenths_of_the_signal():
    q = panel(question()).questions["q"]
    assert (q.mechanism.instant.keep, q.mechanism.instant.other) == (Fraction(19, 20), Fraction(1, 20))
    assert q.mechanism.channel() == [[Fraction(29, 40), Fraction(11, 40)], [Fraction(11, 40), Fraction(29, 40)]]
    assert q.mechanism.exp_epsilon == Fraction(29, 11)  # ε₁ = ln(29/11) = 0.969 under ε∞ = ln 3 = 1.099


def test_the_composite_of_a_wide_number_grid_has_the_enumerated_epsilon():
    for low, high, step, epsilon in [(0, 6, 1, 1), (-1, 1, 0.5, "ln 2"), (0, 10, 2, 3)]:
        q = panel(question(qtype="number", privacy={"design": "laplace", "epsilon": epsilon}, min=low, max=high, step=step),
                  repeated={"instant_epsilon": 1}).questions["q"]
        assert q.mechanism.exp_epsilon == worst_ratio(q.mechanism.channel())


def sequence_probability(survey, qid, answer, sequence):
    """Exact P(reports of every wave | answer) for one respondent of a repeated survey: the sum over the
    permanent report of its probability times each wave's instantaneous probability."""
    q = survey.questions[qid]
    instant = instant_matrix(q.permanent, q.mechanism.instant)
    reports = q.permanent.reports
    total = Fraction(0)
    for j, permanent in enumerate(reports):
        p = q.permanent.probability(permanent, answer)
        for report in sequence:
            p *= instant[reports.index(report)][j]
        total += p
    return total


@pytest.mark.parametrize("family", ["coin", "krr", "unary", "cdm"])
def test_the_whole_sequence_of_reports_never_tells_more_than_epsilon_all_waves(family):
    survey = panel(FAMILIES[family])
    q = survey.questions["q"]
    reports, answers = q.permanent.reports, q.permanent.answers
    bound = q.permanent.exp_epsilon
    waves = {"coin": 6, "krr": 4, "unary": 2, "cdm": 4}[family]
    previous = Fraction(1)
    for count in range(1, waves + 1):
        worst = Fraction(1)
        for sequence in itertools.product(reports, repeat=count):
            probabilities = [sequence_probability(survey, "q", a, sequence) for a in answers]
            if min(probabilities) == 0:
                assert bound is None
                continue
            worst = max(worst, max(probabilities) / min(probabilities))
        assert bound is None or worst <= bound, f"{count} waves: {float(worst)} > {float(bound)}"
        if count == 1:
            assert worst == q.mechanism.exp_epsilon  # one wave: the composite channel's ε₁
        assert worst >= previous  # more waves reveal more, but never beyond e^ε∞
        previous = worst
    if family == "coin":
        assert float(previous) > 0.9 * float(bound)  # and six waves come close to it: the bound is the right one


def seeded_memo(rng) -> Memo:
    return Memo.from_secret(bytes(rng.randbelow(256) for _ in range(32)))


def majority_accuracy(survey, respondents, waves, rng, memoize):
    right = 0
    for person in range(respondents):
        truth = "yes" if person % 2 else "no"
        memo = seeded_memo(rng) if memoize else None
        yes = sum(survey.simulate({"q": truth}, rng, memo=memo)["q"] == "yes" for _ in range(waves))
        guess = "yes" if yes * 2 > waves else "no" if yes * 2 < waves else ("yes", "no")[rng.randbelow(2)]
        right += guess == truth
    return right / respondents


def test_a_majority_vote_over_forty_waves_recovers_answers_without_a_memo_and_not_with_one():
    rng = SeededSource(40)
    fresh = Survey.from_dict({"id": "pulse", "title": "Pulse", "questions": [question()]})
    remembered = panel(question())
    without = majority_accuracy(fresh, 1000, 40, rng, memoize=False)
    with_memo = majority_accuracy(remembered, 1000, 40, rng, memoize=True)
    bound = 3 / 4  # e^ε∞ / (1 + e^ε∞) for ε∞ = ln 3
    assert without >= 0.99
    assert with_memo <= bound + 3 * (bound * (1 - bound) / 1000) ** 0.5, with_memo


def test_the_same_memo_gives_the_same_permanent_report_in_every_wave(tmp_path):
    survey = panel(question(), FAMILIES["krr"] | {"id": "k"}, FAMILIES["unary"] | {"id": "u"})
    first = Memo(tmp_path / "memo")
    again = Memo(tmp_path / "memo")
    for qid, answer in (("q", "yes"), ("k", "b"), ("u", ["a", "c"])):
        permanent = survey.questions[qid].permanent
        position = permanent.answer_position(answer)
        draws = {repr(permanent.randomize(answer, memo.stream("pulse", qid, "report", position))) for memo in (first, again)}
        assert len(draws) == 1
    # and reports differ between waves through the instantaneous layer only
    memo = Memo.from_secret(bytes(32))
    waves = [survey.randomize({"k": "b"}, memo=memo)["k"] for _ in range(2000)]
    permanent = survey.questions["k"].permanent.randomize("b", memo.stream("pulse", "k", "report", 1))
    share = waves.count(permanent) / len(waves)
    assert abs(share - float(survey.questions["k"].mechanism.instant.keep)) < 0.03


def test_reports_of_fresh_memos_follow_the_composite_channel():
    from scipy import stats

    survey = panel(FAMILIES["krr"])
    composite = survey.questions["q"].mechanism
    rng = SeededSource(7)
    counts = {r: 0 for r in composite.reports}
    n = 6000
    for _ in range(n):
        counts[survey.randomize({"q": "a"}, rng, memo=seeded_memo(rng))["q"]] += 1
    expected = [n * float(composite.probability(r, "a")) for r in composite.reports]
    assert stats.chisquare(list(counts.values()), expected).pvalue > 0.001


def test_the_memo_file_is_created_private_and_kept(tmp_path):
    path = tmp_path / "panel.memo"
    memo = Memo(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert len(text.strip()) == 64 and "yes" not in text
    Memo(path)
    assert path.read_text() == text  # read, not replaced
    assert memo.stream("s", "q", "report", 0).randbelow(1 << 40) == Memo(path).stream("s", "q", "report", 0).randbelow(1 << 40)


@pytest.mark.parametrize("content, mode, words", [
    ("abc\n", 0o600, "not the 64 hex digits"),
    ("0" * 64 + "\n", 0o644, "readable by other users"),
    ("Z" * 64, 0o600, "not the 64 hex digits"),
    ("0" * 128, 0o600, "not the 64 hex digits"),
])
def test_a_memo_file_that_is_not_one_is_refused(tmp_path, content, mode, words):
    path = tmp_path / "memo"
    path.write_text(content)
    os.chmod(path, mode)
    with pytest.raises(MemoError, match=words) as caught:
        Memo(path)
    assert caught.value.field == "memo"
    assert path.read_text() == content  # never overwritten


def test_an_unreadable_memo_is_refused(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(MemoError, match="not a file"):
        Memo(tmp_path / "dir")
    with pytest.raises(MemoError, match="cannot create"):
        Memo(tmp_path / "missing" / "memo")


def test_a_repeated_survey_needs_a_memo_and_others_refuse_one():
    survey = panel(question())
    with pytest.raises(MemoError, match="repeated: pass memo"):
        survey.randomize({"q": "yes"})
    plain = Survey.from_dict({"id": "once", "title": "Once", "questions": [question()]})
    with pytest.raises(MemoError, match="not repeated"):
        plain.randomize({"q": "yes"}, memo=Memo.new())


def test_arms_and_groups_are_the_memos_in_every_wave():
    survey = panel(question(split_ballot={"direct": "1/2"}), question("c", privacy=CDM))
    memo = Memo.from_secret(bytes(range(32)))
    arm, group = survey.arm_for("q", memo), survey.group_for("c", memo)
    other_arm = "direct" if arm == "randomized" else "randomized"
    with pytest.raises(AnswerError, match="not the arm this device shows"):
        survey.randomize({"q": "yes"}, arms={"q": other_arm}, memo=memo)
    other_group = "a" if group == "b" else "b"
    with pytest.raises(AnswerError, match="not the one this device shows"):
        survey.randomize({"c": {"group": other_group, "report": "yes"}}, memo=memo)
    reports = survey.randomize({"q": "yes", "c": {"group": group, "report": "yes"}}, memo=memo)
    assert reports["q"]["arm"] == arm and reports["c"]["group"] == group


def test_the_spec_field_and_its_epsilons():
    with pytest.raises(SpecError, match="survey.repeated: true, or a mapping"):
        panel(question(), repeated="yes")
    with pytest.raises(SpecError, match="instant_epsilon: must be greater than 0"):
        panel(question(), repeated={"instant_epsilon": 0})
    survey = panel(question(), question("k", "choice", {"design": "k_rr", "epsilon": 1}, options=["a", "b", "c"]),
                   question("pub", privacy="none"))
    assert survey.to_dict()["repeated"] is True
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
    assert survey.hash != Survey.from_dict({**survey.to_dict(), "repeated": False}).hash
    assert survey.epsilon == pytest.approx(survey.questions["q"].epsilon_all_waves + survey.questions["k"].epsilon_all_waves)
    assert survey.epsilon_per_wave < survey.epsilon
    assert survey.questions["pub"].permanent is survey.questions["pub"].mechanism  # a public question stays public
    statement = survey.questions["q"].privacy_statement()
    assert "ε = 0.969" in statement and "ε = 1.1)" in statement and "new answer" in statement


def test_the_budget_counts_every_wave():
    two = [question(), question("r")]
    panel(*two, max_epsilon="ln 9")  # two coin questions: ε∞ = 2 ln 3 exactly
    with pytest.raises(SpecError, match="max_epsilon"):
        panel(*two, max_epsilon=2.19)  # ε₁ totals 1.94 but every wave together is 2.197


def test_the_memo_message_names_positions_only():
    assert message("pulse", "q", "report", 3) == b"deniable memo v1\x00pulse\x00q\x00report\x003"
    assert message("pulse", "q", "arm") == b"deniable memo v1\x00pulse\x00q\x00arm"


def test_a_composite_keeps_what_counting_relies_on():
    for family, spec in FAMILIES.items():
        q = panel(spec).questions["q"]
        assert type(q.mechanism) is type(q.permanent) or family in ("laplace", "ordinal"), family  # ordinal: a written-out channel
        assert q.mechanism.reports == q.permanent.reports and q.mechanism.answers == q.permanent.answers
        assert q.mechanism.respondent_randomizes == q.permanent.respondent_randomizes
        assert memoized(q.permanent, q.mechanism.instant).channel() == q.mechanism.channel()


def test_one_memo_drawing_a_question_under_two_designs_can_reveal_the_answer():
    """Why a running panel keeps each question's design: the permanent reports of two designs are drawn from the same
    memo randomness, so the pair is far more telling than either. A coin design (truth 1/2) and the same question at
    truth 3/4: (no, yes) comes only from "yes" and (yes, no) only from "no", each for one respondent in eight."""
    before, after = (panel(question(privacy=privacy)).questions["q"].permanent
                     for privacy in (COIN, {"design": "forced_response", "truth": "3/4", "yes": "1/8", "no": "1/8"}))
    rng = SeededSource(8)
    pairs = {answer: {} for answer in ("yes", "no")}
    for _ in range(2000):
        memo = seeded_memo(rng)
        for answer in pairs:
            pair = tuple(design.randomize(answer, memo.stream("pulse", "q", "report", design.answer_position(answer)))
                         for design in (before, after))
            pairs[answer][pair] = pairs[answer].get(pair, 0) + 1
    assert ("no", "yes") in pairs["yes"] and ("no", "yes") not in pairs["no"]
    assert ("yes", "no") in pairs["no"] and ("yes", "no") not in pairs["yes"]
    assert 200 < pairs["yes"][("no", "yes")] < 300  # an eighth of 2,000


def test_the_questions_a_new_version_would_draw_afresh_from_the_same_memo():
    base = [question(), FAMILIES["krr"] | {"id": "k"}, FAMILIES["laplace"] | {"id": "n"}, question("open", privacy="none")]
    earlier = panel(*base)

    def changed(*questions, repeated=True):
        return redrawn_questions(earlier, panel(*questions, repeated=repeated))

    reworded = [question() | {"text": "Asked another way?"}, base[1] | {"options": [{"value": "a", "label": "A!"}, "b", "c"]},
                base[2], base[3] | {"privacy": {"design": "warner", "p": "3/4"}}]
    assert changed(*reworded) == []  # wording and labels; a public question made private was never drawn from a memo
    assert changed(question(privacy={"design": "warner", "p": "3/4"}), *base[1:]) == ["q"]
    assert changed(base[0], base[1] | {"options": ["c", "b", "a"]}, *base[2:]) == ["k"]  # the answers' positions move
    assert changed(base[0], base[1] | {"privacy": {"design": "k_rr", "epsilon": 2}}, *base[2:]) == ["k"]
    assert changed(*base[:2], base[2] | {"max": 4}, base[3]) == ["n"]
    assert changed(question() | {"split_ballot": {"direct": "1/4"}}, *base[1:]) == ["q"]
    assert changed(question("q2", privacy={"design": "warner", "p": "3/4"}), *base[1:]) == []  # a new id draws anew
    assert changed(question(privacy={"design": "warner", "p": "3/4"}), *base[1:], repeated={"instant_epsilon": 2}) == ["q"]
    assert changed(question(privacy={"design": "warner", "p": "3/4"}), *base[1:], repeated=None) == []  # no memo


def test_a_memo_behind_a_link_is_refused_and_a_new_one_is_written_to_the_disk(tmp_path, monkeypatch):
    """A symbolic link (to another memo, or dangling) was followed, and a dangling one gave a raw
    FileNotFoundError; the secret was linked into place without fsync, so a crash could leave an empty memo."""
    import os

    real = tmp_path / "real.memo"
    Memo(real)
    for target in (real, tmp_path / "nowhere.memo"):
        link = tmp_path / f"link-to-{target.name}"
        link.symlink_to(target)
        with pytest.raises(MemoError, match="a symbolic link; a memo is a file of its own"):
            Memo(link)
        assert not (tmp_path / "nowhere.memo").exists()
    synced = []
    original = os.fsync
    monkeypatch.setattr(os, "fsync", lambda descriptor: synced.append(descriptor) or original(descriptor))
    Memo(tmp_path / "fresh.memo")
    assert len(synced) >= 2  # the secret's bytes, then the folder's new entry
