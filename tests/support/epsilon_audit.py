"""An ε audit of the shipped clients: draw from their public randomization API for the worst-case pair of
inputs of each design family and bound the ε they realise from below.

For each design, a pair of answers (a, a') and an event S (a set of reports) at which P(S | a) / P(S | a')
equals the stated e^ε (the exact channel says so; `test_epsilon_audit` checks it). Each client draws n reports
for a and n for a'; Clopper–Pearson bounds, simultaneous over every audit at level 1 − ALPHA (Bonferroni), give
ε_low = ln(lower P̂(S | a) / upper P̂(S | a')): a lower confidence bound on the realised ε. A client whose
sampler were wrong in the direction that leaks would push ε_low above the stated ε. Each client's reports are
also tested against the stated channel (χ² goodness of fit, both inputs).

Clients: Python one report at a time (`Survey.randomize`), Python in bulk (`Mechanism.randomize_many`, its
block-read fast path, with the operating system's randomness replaced by a seeded stream so a run is
reproducible), and JS under Node (`Survey.randomize` with a seeded source that offers the same fast paths
as `crypto.getRandomValues`'s pool). Repeated surveys are audited through one wave's report (a fresh memo
per respondent): ε₁ of the composite channel.

``python scripts/validation.py --only audit`` writes the table into docs/validation.md.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
DRAWER = ROOT / "tests" / "audit_draw.mjs"
#: Simultaneous error rate of every bound of one run (a test that cannot fail by chance more than 1 in 1000).
ALPHA = 1e-3
CLIENTS = ("python", "python-bulk", "js")


@dataclass(frozen=True)
class Case:
    name: str
    spec: dict  # a survey with one question "q"
    pair: tuple  # (a, a'): the answers whose report distributions differ most
    event: tuple  # reports in S, as canonical JSON text
    draws: int

    def survey(self):
        from deniable.client import Survey

        return Survey.from_dict(self.spec)


def _spec(qtype, privacy, repeated=None, **extra):
    spec = {"id": "audit", "title": "audit", "questions": [{"id": "q", "type": qtype, "text": "?", "privacy": privacy, **extra}]}
    if repeated is not None:
        spec["repeated"] = repeated
    return spec


def worst_pair(mechanism) -> tuple[tuple, tuple]:
    """(the pair of answers (a, a'), the event S) at which the exact channel reaches its e^ε: the largest ratio
    P(r | a)/P(r | a') over reports r and ordered pairs, S every report at that ratio for that pair (the bound on a
    set's ratio is its reports' largest), and of the pairs that reach it the one whose S is likeliest under a' (the
    fewest draws see it). Exact arithmetic: the channel's probabilities are fractions."""
    from deniable.client.json_text import canonical_json

    answers, reports = mechanism.answers, mechanism.reports
    best, chosen = None, None
    for a in answers:
        for b in answers:
            if a == b:
                continue
            ratios = {}
            for r in reports:
                p, q = mechanism.probability(r, a), mechanism.probability(r, b)
                if q > 0:
                    ratios[canonical_json(r)] = (p / q, q)
            top = max(ratio for ratio, _ in ratios.values())
            event = tuple(key for key, (ratio, _) in ratios.items() if ratio == top)
            weight = sum(ratios[key][1] for key in event)
            if best is None or (top, weight) > best:
                best, chosen = (top, weight), ((a, b), event)
    return chosen


def registry_cases() -> tuple[Case, ...]:
    """A case for each design the device randomizes, from the registry (`designs.Design.audit`): its question, and
    the pair and event its exact channel reaches e^ε at."""
    from deniable.client.designs import DESIGNS

    cases = []
    for design in DESIGNS.values():
        if design.audit is None:
            continue
        label, question, draws = design.audit
        cases.append(_derived(label, _spec(question["type"], question["privacy"], **{
            key: value for key, value in question.items() if key not in ("type", "privacy")}), draws))
    return tuple(cases)


def _derived(label: str, spec: dict, draws: int) -> Case:
    from deniable.client import Survey

    return Case(label, spec, *worst_pair(Survey.from_dict(spec).questions["q"].mechanism), draws)


COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}
#: Beyond one case a design: a variant with its own sampler, and repeated surveys' composite channels (one wave's
#: report), whose pair and event are found the same way.
EXTRA_CASES = (
    _derived("unary optimized ln 4, 2 options", _spec("multi_select", {"design": "unary", "epsilon": "ln 4",
                                                                       "variant": "optimized"}, options=["a", "b"]), 48000),
    _derived("repeated coin, one wave (ε₁)", _spec("yes_no", COIN, repeated=True), 24000),
    _derived("repeated k_rr ln 3, instant ln 9, one wave", _spec("choice", {"design": "k_rr", "epsilon": "ln 3"},
                                                                 repeated={"instant_epsilon": "ln 9"},
                                                                 options=["a", "b", "c"]), 32000),
    # a number's composite: its bulk path once drew the permanent layer alone (caught twice: ε ≥ 1.93 against the
    # stated 1.81, and a fit of p = 9e-97)
    _derived("repeated laplace ε = 2, 0..2, one wave", _spec("number", {"design": "laplace", "epsilon": 2}, repeated=True,
                                                             min=0, max=2, step=1), 30000),
)
CASES = registry_cases() + EXTRA_CASES


def stated(case: Case) -> tuple[float, float]:
    """(the stated ε, the exact ln P(S | a)/P(S | a') of the event): equal for a well-chosen event."""
    from deniable.client.json_text import canonical_json

    mechanism = case.survey().questions["q"].mechanism
    a, b = case.pair
    inside = [r for r in mechanism.reports if canonical_json(r) in case.event]
    first = sum(mechanism.probability(r, a) for r in inside)
    second = sum(mechanism.probability(r, b) for r in inside)
    return mechanism.epsilon, math.log(first / second)


def _seeded_urandom(seed: int):
    stream = random.Random(seed)
    return lambda size: stream.randbytes(size)


def draw_python(case: Case, seed: int, bulk: bool) -> dict:
    """{answer (as JSON): {report (as JSON): count}} from the Python client's public API."""
    from deniable.client.json_text import canonical_json
    from deniable.client.memo import Memo

    survey = case.survey()
    question = survey.questions["q"]
    rng = random.Random(seed)
    counts = {}
    for answer in case.pair:
        seen: dict = {}
        if bulk:  # the block-read fast path, fed a seeded stream in place of the OS's
            with mock.patch("deniable.client.randomness.os.urandom", _seeded_urandom(rng.randrange(2**63))):
                reports = question.mechanism.randomize_many([answer] * case.draws)
        else:
            source = _Seeded(rng)
            memo = (lambda: Memo.from_secret(rng.randbytes(32))) if survey.repeated else (lambda: None)
            reports = [survey.randomize({"q": answer}, source, memo=memo())["q"] for _ in range(case.draws)]
        for report in reports:
            key = canonical_json(report)
            seen[key] = seen.get(key, 0) + 1
        counts[canonical_json(answer)] = seen
    return counts


class _Seeded:
    def __init__(self, rng):
        self._rng = rng

    def randbelow(self, n):
        return self._rng.randrange(n)


def draw_js(cases, seed: int) -> list[dict]:
    """The JS client under Node: one process draws every case."""
    jobs = [{"spec": c.spec, "pair": list(c.pair), "draws": c.draws} for c in cases]
    done = subprocess.run(["node", str(DRAWER)], input=json.dumps({"seed": seed, "jobs": jobs}), capture_output=True,
                          text=True, check=True, timeout=600)
    return json.loads(done.stdout)


@dataclass(frozen=True)
class Audit:
    case: str
    client: str
    stated: float
    lower_bound: float
    event: tuple  # (P̂(S|a), P̂(S|a'))
    fit_p: float  # the smaller χ² p-value of the two inputs' report distributions

    @property
    def tight(self) -> float:
        return self.lower_bound / self.stated


def audit(case: Case, client: str, counts: dict, audits: int) -> Audit:
    from deniable.client.json_text import canonical_json

    mechanism = case.survey().questions["q"].mechanism
    level = ALPHA / (2 * audits)  # two one-sided bounds per audit, Bonferroni over the run
    a, b = (canonical_json(x) for x in case.pair)
    hits = [sum(n for r, n in counts[x].items() if r in case.event) for x in (a, b)]
    total = [sum(counts[x].values()) for x in (a, b)]
    low = stats.beta.ppf(level, hits[0], total[0] - hits[0] + 1) if hits[0] > 0 else 0.0
    high = stats.beta.ppf(1 - level, hits[1] + 1, total[1] - hits[1]) if hits[1] < total[1] else 1.0
    bound = math.log(low / high) if low > 0 else -math.inf
    fits = []
    for answer, key in zip(case.pair, (a, b)):
        reports = mechanism.reports
        expected = [float(mechanism.probability(r, answer)) * total[0 if key == a else 1] for r in reports]
        observed = [counts[key].get(canonical_json(r), 0) for r in reports]
        keep = [i for i, e in enumerate(expected) if e > 0]
        unexpected = sum(o for o, e in zip(observed, expected) if e == 0)
        if unexpected:
            fits.append(0.0)
            continue
        pooled_o, pooled_e = _pool([observed[i] for i in keep], [expected[i] for i in keep])
        fits.append(float(stats.chisquare(pooled_o, pooled_e).pvalue) if len(pooled_o) > 1 else 1.0)
    return Audit(case.name, client, mechanism.epsilon, bound, (hits[0] / total[0], hits[1] / total[1]), min(fits))


def _pool(observed, expected, floor: float = 5.0):
    """Merge cells with small expectations (in report order) so the χ² approximation holds."""
    out_o, out_e, run_o, run_e = [], [], 0, 0.0
    for o, e in zip(observed, expected):
        run_o, run_e = run_o + o, run_e + e
        if run_e >= floor:
            out_o.append(run_o)
            out_e.append(run_e)
            run_o, run_e = 0, 0.0
    if run_e > 0:
        if out_e:
            out_o[-1] += run_o
            out_e[-1] += run_e
        else:
            out_o.append(run_o)
            out_e.append(run_e)
    return out_o, out_e


def run(seed: int = 20261124, cases=CASES, clients=CLIENTS) -> list[Audit]:
    audits = len(cases) * len(clients)
    results = []
    js = draw_js(cases, seed) if "js" in clients else None
    for position, case in enumerate(cases):
        for client in clients:
            if client == "js":
                counts = js[position]
            else:
                counts = draw_python(case, seed + position, bulk=client == "python-bulk")
            results.append(audit(case, client, counts, audits))
    return results


def section(out, seed: int = 20261124):
    results = run(seed)
    print("\n## An ε audit of the shipped clients\n", file=out)
    print("Drawn from each client's public randomization API for the worst-case pair of answers of each design", file=out)
    print("(`scripts/epsilon_audit.py`, seed 20261124; CI runs the same audit in `tests/client/test_epsilon_audit.py`):", file=out)
    print("Python one report at a time, Python in bulk (`randomize_many`, its block-read path), and the JS client", file=out)
    print("under Node. ε lower bound: ln of the lower Clopper–Pearson bound of P(S | a) over the upper bound of", file=out)
    print(f"P(S | a'), simultaneous over all {len(results)} audits at 99.9%; S is the set of reports at which the", file=out)
    print("stated e^ε is reached. It must never exceed the stated ε (it does not), and it comes within 10% of it", file=out)
    print("wherever ε ≥ 0.5, so the audit could see a leak. Fit: the smaller χ² p-value of the two answers' report", file=out)
    print("distributions against the stated channel. Repeated surveys: one wave's report, a fresh memo each.\n", file=out)
    print("| design | client | stated ε | ε lower bound | bound / stated | P̂(S \\| a) | P̂(S \\| a') | fit p |", file=out)
    print("|---|---|---|---|---|---|---|---|", file=out)
    for r in results:
        print(f"| {r.case} | {r.client} | {r.stated:.4f} | {r.lower_bound:.4f} | {r.tight:.3f} | {r.event[0]:.4f} | "
              f"{r.event[1]:.4f} | {r.fit_p:.3f} |", file=out)

