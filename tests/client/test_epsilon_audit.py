"""The ε audit of the shipped clients, in CI: for every design family's worst-case pair of
answers, the simultaneous lower bound on the ε each client realises never exceeds the stated ε, comes within
10% of it wherever ε ≥ 0.5 (so the audit can see a leak), and the reports fit the stated channel. A sampler
made to leak is caught. The figures are scripts/epsilon_audit.py's (docs/validation.md prints the table)."""

from __future__ import annotations

import math

import pytest

from tests.support import epsilon_audit as audit


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
