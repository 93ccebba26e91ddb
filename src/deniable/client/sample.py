"""A spec's ``sample:``: the sample design its analysis uses by default, and the frame its invitations carry.

    sample:
      frame: [stratum, psu, weight, region]   # public columns of the sampling frame, one row per invitation
      weights: weight
      strata: stratum
      clusters: psu

Each role (weights, strata, clusters, fpc) names a public question, whose answer is known, or a declared frame
column. The frame's values are held by the server beside the responses their invitations sent and are never sent to
a respondent's device; its columns are declared here so that nothing else (a name, an address) can be uploaded with
it, and a column named like contact data cannot be declared at all.
"""

from __future__ import annotations

import re

from .errors import SpecError
from .identifiers import identifier

#: What a role may name among the questions: the question types it needs.
SAMPLE_ROLES = {"weights": ("number",), "strata": ("choice", "yes_no", "ordinal", "number"),
                "clusters": ("choice", "yes_no", "ordinal", "number"), "fpc": ("number",)}
#: The roles whose values are numbers (a frame column in one of them must hold positive numbers).
NUMERIC_ROLES = ("weights", "fpc")
#: Names an export already gives its own columns: a frame column cannot take one.
RESERVED_COLUMNS = frozenset({"id", "spec_hash", "received_on", "wave", "version", "reports", "token"})
#: A frame column named like this would hold contact data, which the frame never holds.
CONTACT_NAME = re.compile(r"(^|[_.-])(e-?mail|mail|phone|mobile|tel|telephone|address|addr|street|postcode|zip|"
                          r"name|first-?name|last-?name|surname|contact|ssn|passport|ip)([_.-]|$)", re.IGNORECASE)


def read_sample(raw, questions: dict) -> dict:
    """The checked ``sample`` mapping (``{}`` when the spec has none). ``questions``: the survey's, by id."""
    if raw is None:
        return {}
    allowed = (*SAMPLE_ROLES, "frame")
    if not isinstance(raw, dict) or not raw or set(raw) - set(allowed):
        raise SpecError(f"survey.sample: a mapping of {', '.join(allowed)} (frame: a list of column names; the others "
                        f"a public question id or a frame column), e.g. {{strata: region, clusters: branch}}, got {raw!r}")
    frame = frame_columns(raw.get("frame"), questions)
    for role, name in raw.items():
        if role == "frame":
            continue
        if isinstance(name, str) and name in frame:
            continue
        question = questions.get(name) if isinstance(name, str) else None
        if question is None:
            declared = f" or a column of sample.frame ({', '.join(frame)})" if frame else ""
            raise SpecError(f"survey.sample.{role}: {name!r} is not a question of this survey{declared}")
        if question.is_private:
            raise SpecError(f"survey.sample.{role}: {name!r} is randomized; a design variable is a public question "
                            "(privacy: none), whose answer is known, or a column of the invitations' frame")
        if question.type not in SAMPLE_ROLES[role]:
            raise SpecError(f"survey.sample.{role}: {name!r} is a {question.type} question; {role} needs a "
                            f"{' or '.join(SAMPLE_ROLES[role])} question")
    return dict(raw)


def frame_columns(raw, questions: dict) -> list[str]:
    """The declared frame columns, checked: ids, none twice, none a question's or an export's own column, none named
    like contact data."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        raise SpecError(f"survey.sample.frame: a list of column names, e.g. [stratum, psu, weight], got {raw!r}")
    seen: list[str] = []
    for position, name in enumerate(raw):
        where = f"survey.sample.frame[{position}]"
        identifier(name, where)
        if name in seen:
            raise SpecError(f"{where}: {name!r} is listed twice")
        if name in questions:
            raise SpecError(f"{where}: {name!r} is a question of this survey; a frame column needs a name of its own")
        if name in RESERVED_COLUMNS:
            raise SpecError(f"{where}: {name!r} is the name of an export's own column; choose another")
        if CONTACT_NAME.search(name):
            raise SpecError(f"{where}: {name!r} is named like contact data; the frame holds design variables and "
                            "public covariates (stratum, PSU, weight, region), never who a respondent is")
        seen.append(name)
    return seen


def frame_roles(sample: dict) -> dict:
    """{frame column: the role naming it, or None for a covariate} of a checked ``sample`` mapping."""
    roles = {name: None for name in sample.get("frame", [])}
    for role, name in sample.items():
        if role != "frame" and name in roles:
            roles[name] = role
    return roles
