"""Split ballot: a share of respondents answers a private yes/no question directly, the rest through its design.

``split_ballot: {direct: 1/4}`` on a question: the device puts each respondent in the *direct* arm with that
probability (`SplitBallot.assign_arm`, a CSPRNG draw, public and independent of every answer) before the
question is shown. The direct arm sees the plain question with a notice that the answer is sent as given;
the randomized arm sees the question's own design, unchanged. Comparing the two arms is the classic check
of a randomized-response design ("more is better": a design that makes people more willing to admit a
sensitive behaviour yields a higher share than asking directly).

A report carries its arm: ``{"arm": "direct", "report": "yes"}``, or ``{"arm": "randomized", ...}`` with the
design's own fields (``"report"``, and ``"group"`` for a design whose reports carry a group). The question's
mechanism, channel and ε are those of the randomized arm: the arm is known before the answer, so a respondent
in the randomized arm has exactly the design's guarantee, and one in the direct arm is told there is none.
"""

from __future__ import annotations

import json

from .exact import parse_fraction
from .json_text import canonical_json
from .randomness import default_source

ARMS = ("direct", "randomized")


class SplitBallot:
    """The arms of one question: ``reports`` (the whole alphabet a report of the question may take) and
    ``validate_report`` work like a mechanism's, so counting and validation treat both alike."""

    def __init__(self, spec, where: str, question_type: str, mechanism):
        if question_type != "yes_no":
            raise ValueError(f"{where}: only yes/no questions have a split ballot (the direct arm's share is "
                             f"compared with the randomized arm's), got a {question_type} question")
        if mechanism.design == "none":
            raise ValueError(f"{where}: a public question is asked directly already; a split ballot compares a "
                             "randomized design with asking directly")
        if not isinstance(spec, dict) or set(spec) != {"direct"}:
            raise ValueError(f"{where}: a mapping with the one key 'direct' (the share of respondents asked "
                             f"directly, e.g. {{direct: 1/4}}), got {spec!r}")
        self.direct = parse_fraction(spec["direct"], f"{where}.direct")
        if not 0 < self.direct < 1:
            raise ValueError(f"{where}.direct: must be above 0 and below 1 (both arms need respondents), "
                             f"got {spec['direct']!r}")
        self.mechanism = mechanism
        self.answers = list(mechanism.answers)

    def to_dict(self) -> dict:
        return {"direct": str(self.direct)}

    def assign_arm(self, rng=None) -> str:
        """The arm a new respondent is shown: "direct" with probability ``direct``, from a CSPRNG (or ``rng``);
        the same integer draw as the JS twin."""
        draw = (rng or default_source()).randbelow(self.direct.denominator)
        return "direct" if draw < self.direct.numerator else "randomized"

    @staticmethod
    def wrap(arm: str, report):
        """The report of ``arm`` carrying its arm marker."""
        if isinstance(report, dict):
            return {"arm": arm, **report}
        return {"arm": arm, "report": report}

    @staticmethod
    def unwrap(report) -> tuple[str, object]:
        """(arm, the report without its marker) of a validated report."""
        rest = {key: value for key, value in report.items() if key != "arm"}
        return report["arm"], rest["report"] if set(rest) == {"report"} else rest

    @property
    def reports(self) -> list:
        return ([self.wrap("direct", answer) for answer in self.answers]
                + [self.wrap("randomized", report) for report in self.mechanism.reports])

    def validate_report(self, report):
        if not isinstance(report, dict) or "arm" not in report:
            raise ValueError(f"report {report!r} must be an object with the respondent's 'arm' (direct or randomized) "
                             "beside the report, e.g. {\"arm\": \"direct\", \"report\": \"yes\"}")
        arm = report["arm"]
        if not isinstance(arm, str) or arm not in ARMS:
            raise ValueError(f"arm {arm!r} is not one of {', '.join(ARMS)}")
        rest = {key: value for key, value in report.items() if key != "arm"}
        if arm == "direct":
            if set(rest) != {"report"}:
                raise ValueError("a direct-arm report holds only 'arm' and 'report' (the answer as given)")
            answer = rest["report"]
            if answer not in self.answers or isinstance(answer, bool):
                raise ValueError(f"direct answer {answer!r} is not one of {', '.join(self.answers)}")
            return {"arm": "direct", "report": answer}
        inner = rest["report"] if set(rest) == {"report"} else rest  # the design's own report, as it has it
        return self.wrap("randomized", self.mechanism.validate_report(inner))

    def split_counts(self, counts) -> tuple[list, list]:
        """Counts over `reports` split into (randomized arm, over the mechanism's reports; direct arm, over answers)."""
        counts = list(counts)
        return counts[len(self.answers):], counts[:len(self.answers)]

    def key_of(self, canonical: str) -> tuple[str, str]:
        """(arm, canonical JSON of the report without its marker) from a stored report's canonical JSON."""
        arm, rest = self.unwrap(json.loads(canonical))
        return arm, canonical_json(rest)

