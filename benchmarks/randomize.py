"""Python randomization throughput per design (answers per second): one answer per call, a batch of
100,000 through `randomize_many`, and whole surveys.

    python benchmarks/randomize.py [--seconds 1.0]

Prints one line per design and one for the demo survey. Figures vary with machine load;
compare designs within one run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from deniable.client import Survey

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("forced_response (coin flip)", dict(type="yes_no"), "yes"),
    ("warner p=3/4", dict(type="yes_no", privacy={"design": "warner", "p": "3/4"}), "yes"),
    ("unrelated_question", dict(type="yes_no", privacy={"design": "unrelated_question", "p": "2/3", "innocuous_yes": "1/12"}), "yes"),
    ("k_rr k=4 eps=ln3", dict(type="choice", options=list("abcd"), privacy={"design": "k_rr", "epsilon": "ln 3"}), "c"),
    ("ordinal k=5 eps=1", dict(type="ordinal", options=list("12345"), privacy={"design": "ordinal", "epsilon": 1}), "3"),
    ("unary m=4 eps=2 symmetric", dict(type="multi_select", options=list("abcd"), privacy={"design": "unary", "epsilon": 2}), ["a", "c"]),
    ("unary m=4 eps=2 optimized", dict(type="multi_select", options=list("abcd"),
                                        privacy={"design": "unary", "epsilon": 2, "variant": "optimized"}), ["a", "c"]),
    ("laplace 0..40 step 5 eps=1", dict(type="number", min=0, max=40, step=5, privacy={"design": "laplace", "epsilon": 1}), 15),
    ("laplace 0..100 step 1 eps=1", dict(type="number", min=0, max=100, privacy={"design": "laplace", "epsilon": 1}), 37),
]


BATCH = 100_000


def rate(function, seconds: float, repeat: int = 100) -> float:
    """Calls per second."""
    function()  # warm caches (column thresholds)
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(repeat):
            function()
        count += repeat
    return count / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    seconds = parser.parse_args().seconds
    print(f"{'design':<32} {'answers/s':>12} {'batch':>12}")
    for name, question, answer in CASES:
        mechanism = Survey.from_dict({"id": "b", "title": "b", "questions": [{"id": "q", "text": "?", **question}]}).questions["q"].mechanism
        batch = [answer] * BATCH
        print(f"{name:<32} {rate(lambda: mechanism.randomize(answer), seconds):>12,.0f} "
              f"{BATCH * rate(lambda: mechanism.randomize_many(batch), seconds, repeat=1):>12,.0f}")
    survey = Survey.from_file(ROOT / "examples/tax.yaml")
    answers = {"dodged": "yes", "region": "North", "cash": "Cash in hand", "fairness": "Agree",
               "undeclared": ["Tips"], "hours": 10}
    print(f"{'whole demo survey (6 questions)':<32} {rate(lambda: survey.randomize(answers), seconds):>12,.0f}  surveys/s")


if __name__ == "__main__":
    main()
