"""Which frame row a response carries out of the database: its cell's, judged by the cell's answers, not its
invitations.

A frame row reaches analysis and exports with each response its invitation sent (`frames.py`). Issuing requires
every row to be shared by ``min_cell`` invitations, but a row that few of them answer names its respondents all the
same: 40 cells of 5 invitations answered at random left 29% of respondents alone in their cell at a 20% response
rate. So when rows are read the cells are judged by their answers (across the survey's versions), as statistical
disclosure control does it (sdcMicro's k-anonymity, strata collapsed as survey statisticians collapse them):

* a cell with at least `RELEASE_AT` answers is released as issued;
* the smaller cells of one stratum are pooled: when the pool has `RELEASE_AT` answers or more they are released as
  merged PSUs of their stratum (`MERGED_PSU` 1, 2, …: consecutive cells grouped until each group has `RELEASE_AT`
  answers, so a stratum keeps PSUs to estimate a variance from), each with its group's mean weight, covariates
  withheld;
* a pool smaller than that joins its stratum's smallest released cell, whose row its responses then carry;
* a stratum with no cell to join is withheld: those responses carry no frame row.

Every released row is then shared by at least `RELEASE_AT` answers. What was done is counted (`Release.counts`) and
said by `survey show`.
"""

from __future__ import annotations

import collections
import json
import math
from dataclasses import dataclass

from deniable.client.sample import frame_roles

from .frames import MIN_CELL

#: The fewest answers a released frame row is shared by (the issuing bound's default): also the fewest responses any
#: group a reader without the export scope sees holds (grouped counts, the quasi-identifiers' small groups).
RELEASE_AT = MIN_CELL
#: The PSU label of a stratum's pooled small cells (numbered).
MERGED_PSU = "(merged)"


@dataclass(frozen=True)
class Release:
    """Per cell, the frame row its responses carry out (None: withheld), and how many answers were released each
    way: ``as issued``, ``merged``, ``joined`` (to a neighbouring cell), ``withheld``."""

    rows: dict
    counts: dict

    def describe(self) -> str:
        """One sentence for `survey show` and the analysis's notes (empty when every cell was released as issued)."""
        changed = {way: count for way, count in self.counts.items() if way != "as issued" and count}
        if not changed:
            return ""
        said = {"merged": "in merged PSUs of their stratum (mean weight, covariates withheld)",
                "joined": "with a neighbouring cell's row", "withheld": "without a frame row"}
        return (f"frame rows judged by answers (at least {RELEASE_AT} a row): "
                + "; ".join(f"{count} answers {said[way]}" for way, count in changed.items())
                + f"; {self.counts['as issued']} as issued")


def release(sample: dict, cells: dict, answers: dict) -> Release:
    """The rows released for ``cells`` ({cell: frame row}) given each cell's ``answers`` ({cell: count}), under the
    spec's ``sample`` roles (which column is the stratum, the PSU, the weight)."""
    roles = frame_roles(sample)
    role_of = {role: column for column, role in roles.items() if role is not None}
    stratum, psu, weight = role_of.get("strata"), role_of.get("clusters"), role_of.get("weights")
    covariates = [column for column, role in roles.items() if role is None]
    rows, counts = {}, collections.Counter({"as issued": 0, "merged": 0, "joined": 0, "withheld": 0})
    small = collections.defaultdict(list)
    for cell, row in cells.items():
        if answers.get(cell, 0) >= RELEASE_AT:
            rows[cell] = row
            counts["as issued"] += answers[cell]
        else:
            small[None if stratum is None else row.get(stratum)].append(cell)
    for level, pooled in small.items():
        answered = [cell for cell in pooled if answers.get(cell, 0)]
        total = sum(answers.get(cell, 0) for cell in answered)
        rows.update({cell: None for cell in pooled if not answers.get(cell, 0)})  # nothing of theirs is read
        if total >= RELEASE_AT:
            for number, group in enumerate(_groups_of_enough(answered, answers, psu and (lambda c: str(cells[c][psu])))):
                merged = dict(cells[group[0]])
                if psu is not None:
                    merged[psu] = f"{MERGED_PSU} {number + 1}"
                if weight is not None:
                    merged[weight] = (sum(float(cells[cell][weight]) * answers[cell] for cell in group)
                                      / sum(answers[cell] for cell in group))
                for column in covariates:
                    merged[column] = None
                rows.update({cell: merged for cell in group})
            counts["merged"] += total
            continue
        released = [cell for cell, row in cells.items() if answers.get(cell, 0) >= RELEASE_AT
                    and (stratum is None or row.get(stratum) == level)]  # its stratum's cells released as issued
        if released:
            neighbour = min(released, key=lambda cell: (answers[cell], cell))
            rows.update({cell: cells[neighbour] for cell in answered})
            counts["joined"] += total
        else:
            rows.update({cell: None for cell in answered})
            counts["withheld"] += total
    return Release(rows, dict(counts))


def _groups_of_enough(answered: list, answers: dict, label) -> list[list]:
    """A stratum's small cells (by their PSU label's order) in consecutive groups of at least `RELEASE_AT` answers
    each, the last short one joined to the one before: as many merged PSUs as the answers allow, so the stratum keeps
    a variance to estimate where it can."""
    ordered = sorted(answered, key=lambda cell: (label(cell) if label else "", cell))
    groups, current, held = [], [], 0
    for cell in ordered:
        current.append(cell)
        held += answers[cell]
        if held >= RELEASE_AT:
            groups.append(current)
            current, held = [], 0
    if current:
        groups[-1].extend(current)
    return groups


def row_sizes(frame: list[dict]) -> list[int]:
    """How many of a frame file's rows (a supplied token aside) each distinct row is."""
    return list(collections.Counter(json.dumps({k: v for k, v in row.items() if k != "token"}, sort_keys=True)
                                    for row in frame).values())


def expected_merging(sizes, rate: float) -> tuple[float, float]:
    """At a response rate ``rate``, for cells of ``sizes`` invitations each answered independently: the expected
    number of cells answered by 1 to `RELEASE_AT` − 1 (released merged or joined, not as issued), and the expected
    share of answers in them (what issuing says beside the frame, before anyone has answered)."""
    cells = answers_in_small = answers = 0.0
    for size in sizes:
        for count in range(1, min(size, RELEASE_AT - 1) + 1):
            chance = math.comb(size, count) * rate**count * (1 - rate) ** (size - count)
            cells += chance
            answers_in_small += chance * count
        answers += size * rate
    return cells, answers_in_small / answers if answers else 0.0
