"""The ε audit of the shipped clients, in CI: for every design family's worst-case pair of
answers, the simultaneous lower bound on the ε each client realises never exceeds the stated ε, comes within
10% of it wherever ε ≥ 0.5 (so the audit can see a leak), and the reports fit the stated channel. A sampler
made to leak is caught. The figures are scripts/epsilon_audit.py's (docs/validation.md prints the table)."""

from __future__ import annotations

import math

import pytest

from tests.support import epsilon_audit as audit


def test_every_design_the_device_randomizes_is_audited_from_the_registry():
    """A design added to the registry is audited once it names its question (`Design.audit`); one the device can
    randomize without it fails here. Only a design whose every reference question the respondent randomizes (a
    companion question, a randomizer of their own) has nothing on the device to draw."""
    from deniable.client import Survey
    from deniable.client.designs import DESIGNS

    def respondent_randomizes(privacy) -> bool:
        spec = {"id": "r", "title": "r", "questions": [{"id": "q", "type": "yes_no", "text": "?", "privacy": privacy}]}
        return Survey.from_dict(spec).questions["q"].mechanism.respondent_randomizes

    audited = {case.spec["questions"][0]["privacy"]["design"] for case in audit.registry_cases()}
    for name, design in DESIGNS.items():
        if design.audit is None:
            assert design.references and all(respondent_randomizes(p) for _, p in design.references), name
        assert (name in audited) == (design.audit is not None), name
    assert len(audited) == 7


def test_the_worst_pair_is_found_from_the_exact_channel():
    """The pair and event the audit derives reach the channel's largest ratio: on a 0..4 number at ε 1 the two ends
    and every report at or beyond the lower one; on k_rr any two options and the first's own report."""
    by_name = {case.name: case for case in audit.CASES}
    laplace = by_name["laplace ε = 1, 0..4"]
    assert laplace.pair == (0, 4) and laplace.event == ("-4", "-3", "-2", "-1", "0")
    assert by_name["k_rr ln 3, 4 options"].pair == ("a", "b") and by_name["k_rr ln 3, 4 options"].event == ('"a"',)


def test_each_event_reaches_the_stated_epsilon_exactly():
    for case in audit.CASES:
        stated, at_event = audit.stated(case)
        assert at_event == pytest.approx(stated, rel=1e-12), case.name


@pytest.fixture(scope="module")
def results():
    return audit.run()


@pytest.mark.slow
def test_no_client_realises_more_than_the_stated_epsilon(results):
    assert len(results) == len(audit.CASES) * len(audit.CLIENTS)
    for r in results:
        assert r.lower_bound <= r.stated, f"{r.case} ({r.client}): ε ≥ {r.lower_bound:.4f} > stated {r.stated:.4f}"


def test_the_audit_has_power_where_epsilon_is_at_least_one_half(results):
    for r in results:
        if r.stated >= 0.5:
            assert r.lower_bound >= 0.9 * r.stated, f"{r.case} ({r.client}): bound {r.lower_bound:.4f} of {r.stated:.4f}"


def test_every_client_fits_the_stated_channel(results):
    floor = audit.ALPHA / (2 * len(results))  # two answers per audit, Bonferroni over the run
    for r in results:
        assert r.fit_p > floor, f"{r.case} ({r.client}): χ² p = {r.fit_p:.2e}"


def test_a_sampler_that_leaks_is_caught(monkeypatch):
    """The coin design drawn from a channel that tells the truth 80% of the time (ε = ln 4) in place of 75%."""
    from deniable.client.mechanisms import ChannelMechanism

    case = audit.CASES[0]
    original = ChannelMechanism._sampler

    def leaky(self, a):
        if self.design != "forced_response":
            return original(self, a)
        return 5, [4, 5] if a == 0 else [1, 5]  # P(yes | yes) = 4/5, P(yes | no) = 1/5

    monkeypatch.setattr(ChannelMechanism, "_sampler", leaky)
    found = audit.audit(case, "python", audit.draw_python(case, 7, bulk=False), audits=1)
    assert found.lower_bound > found.stated and found.fit_p < 1e-6
    assert found.lower_bound < math.log(4)  # and still a lower bound of what it does leak
