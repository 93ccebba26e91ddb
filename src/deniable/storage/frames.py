"""The sampling frame carried by invitations: per token, the public design variables of the unit it was sent to
(stratum, PSU, base weight, covariates the spec declares in ``sample.frame``), stored once per distinct row (a
*cell*) and copied onto the response that token sends, so the analysis has them as columns (`Reads.frame_rows`).

What this lets the database say about a respondent, and what it does not. A response carries its cell, and its cell
is shared by at least ``min_cell`` invitations (each upload's rows are refused below that): the database narrows a
response to the invitations of its cell, never to one. Of those, the ones that have answered are what an admin
who also reads the tokens' bitmaps can narrow it to, so a cell with a single answer names its respondent's
(randomized) reports; `Surveys.frame_summary` counts such cells. The bitmap row a response last wrote names a block
of tokens (`tokens.py`): a cell's invitations are given slots inside one block (a cell of more than a block gets
whole blocks of its own), so that block holds the whole cell and narrows nothing further.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import math
import re
import secrets

from deniable.client.sample import NUMERIC_ROLES, frame_roles

from .common import canonical, chunks, digest
from .errors import Conflict, Invalid
from .tokens import SLOTS_PER_ROW

#: The fewest invitations a frame row may share by default (``min_cell``), and the fewest ever.
MIN_CELL = 5
LEAST_MIN_CELL = 2
MAX_VALUE_LENGTH = 200
MAX_ROWS = 100_000
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,256}")
#: Values that look like someone's contact: an e-mail address, a web address, a phone number written as one.
_CONTACT = (re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}"), re.compile(r"(?i)https?://|www\."),
            re.compile(r"^\+\s?\d[\d\s().-]{6,}\d$"), re.compile(r"^\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}$"),
            re.compile(r"^0\d{2,4}\s\d{3,4}\s?\d{3,4}$"))


def rows_from_csv(text: str) -> list[dict]:
    """A frame CSV's rows (a header line, then one row per invitation) as {column: text}."""
    try:
        rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline="")))
    except csv.Error as error:
        raise Invalid(f"frame: not a CSV file ({error})", "frame") from None
    if not rows:
        raise Invalid("frame: no rows under the header line", "frame")
    for number, row in enumerate(rows, start=1):
        if None in row or None in row.values():
            raise Invalid(f"frame row {number}: {'more' if None in row else 'fewer'} cells than the header", "frame")
    return rows


def declared_columns(survey) -> dict:
    """{column: role or None} the survey's spec declares for its frame; `Invalid` when it declares none."""
    roles = frame_roles(survey.sample)
    if not roles:
        raise Invalid(f"frame: survey {survey.id!r} declares no frame columns; publish a version whose spec names them "
                      "(sample: {frame: [stratum, psu, weight], strata: stratum, clusters: psu, weights: weight})",
                      "frame")
    return roles


def checked_rows(survey, rows, min_cell: int = MIN_CELL) -> tuple[list, list[str]]:
    """(token supplied or None, the row's canonical frame text) per row, in order, once every row is valid: only the
    declared columns (and an optional ``token``), every value given, weights and fpc positive numbers, no value that
    looks like contact data, no token twice, and every distinct row shared by at least ``min_cell`` rows."""
    roles = declared_columns(survey)
    if isinstance(min_cell, bool) or not isinstance(min_cell, int) or min_cell < LEAST_MIN_CELL:
        raise Invalid(f"min_cell: a whole number of at least {LEAST_MIN_CELL}: a frame row unique to one invitation "
                      "would name its respondent's response", "min_cell")
    if not isinstance(rows, list) or not rows:
        raise Invalid("frame: one row per invitation, with the columns " + ", ".join(roles), "frame")
    if len(rows) > MAX_ROWS:
        raise Invalid(f"frame: at most {MAX_ROWS} rows at a time, got {len(rows)}", "frame")
    with_tokens = isinstance(rows[0], dict) and "token" in rows[0]
    tokens: list = []
    texts: list[str] = []
    first_row_of: dict = {}
    for number, row in enumerate(rows, start=1):
        where = f"frame row {number}"
        if not isinstance(row, dict):
            raise Invalid(f"{where}: a mapping of column to value", "frame")
        extra = sorted(set(row) - set(roles) - {"token"})
        if extra:
            raise Invalid(f"{where}: column {extra[0]!r} is not declared in the survey's sample.frame (declared: "
                          f"{', '.join(roles)}); the frame holds design variables, never names or contacts", extra[0])
        if ("token" in row) != with_tokens:
            raise Invalid(f"{where}: give a token in every row or in none", "token")
        values = {}
        for column, role in roles.items():
            values[column] = _value(row.get(column), column, role, where)
        if with_tokens:
            token = row["token"]
            if not isinstance(token, str) or not TOKEN.fullmatch(token):
                raise Invalid(f"{where}: token must be 16 to 256 letters, digits, '-' or '_'", "token")
            if token in first_row_of:
                raise Invalid(f"{where}: token is the same as frame row {first_row_of[token]}'s; each invitation has "
                              "its own", "token")
            first_row_of[token] = number
            tokens.append(token)
        else:
            tokens.append(None)
        texts.append(canonical(values))
    _check_cells(texts, list(roles), min_cell)
    return tokens, texts


def _value(value, column: str, role: str | None, where: str):
    if value is None or (isinstance(value, str) and not value.strip()):
        raise Invalid(f"{where}: no value in column {column!r}", column)
    if role in NUMERIC_ROLES:
        try:
            number = float(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
            raise Invalid(f"{where}: {column} ({role}) must be a positive, finite number, got {value!r}", column)
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise Invalid(f"{where}: {column} must be a text or a number, got {value!r}", column)
    text = value.strip() if isinstance(value, str) else json.dumps(value)
    if len(text) > MAX_VALUE_LENGTH:
        raise Invalid(f"{where}: {column} is longer than {MAX_VALUE_LENGTH} characters", column)
    if any(pattern.search(text) for pattern in _CONTACT):
        raise Invalid(f"{where}: {column} holds {text!r}, which looks like contact data; the frame never holds "
                      "who a respondent is", column)
    return text


def _check_cells(texts: list[str], columns, min_cell: int):
    sizes = collections.Counter(texts)
    small = [(text, n) for text, n in sizes.items() if n < min_cell]
    if small:
        first_row = {}
        for number, text in enumerate(texts, start=1):
            first_row.setdefault(text, number)
        shown = "; ".join(f"row {first_row[text]}: {', '.join(f'{c}={json.loads(text)[c]}' for c in columns)} ({n})"
                          for text, n in sorted(small, key=lambda item: (item[1], first_row[item[0]]))[:3])
        raise Invalid(f"frame: {len(small)} of {len(sizes)} distinct rows are shared by fewer than {min_cell} "
                      f"invitations, e.g. {shown}; a response carries its row, so a row that few share would narrow it "
                      "to that few. Merge small PSUs or strata, round the weights, or drop a covariate (min_cell "
                      f"lowers the bound, to {LEAST_MIN_CELL} at least)", "frame")


def cell_ids(engine, survey_id: str, texts: list[str]) -> dict:
    """{frame text: cell id} for these rows, adding the cells not stored yet (the caller holds the survey row's lock)."""
    wanted = sorted(set(texts))
    known: dict = {}
    for chunk in chunks(wanted, 500):
        marks = ",".join("?" * len(chunk))
        known.update(engine.execute(f"SELECT frame, cell FROM frame_cells WHERE survey_id = ? AND frame IN ({marks})",
                                    [survey_id, *chunk]).fetchall())
    fresh = [text for text in wanted if text not in known]
    if fresh:
        first = engine.execute("SELECT COALESCE(MAX(cell), -1) + 1 FROM frame_cells WHERE survey_id = ?",
                               [survey_id]).fetchone()[0]
        rows = [(survey_id, first + i, text) for i, text in enumerate(fresh)]
        engine.executemany("INSERT INTO frame_cells (survey_id, cell, frame) VALUES (?, ?, ?)", rows)
        known.update({text: cell for _, cell, text in rows})
    return known


def check_unissued(engine, tokens: list[str]):
    """`Conflict` naming the first supplied token that is already issued (to any survey)."""
    hashes = {digest(token): token for token in tokens}
    for chunk in chunks(sorted(hashes), 500):
        marks = ",".join("?" * len(chunk))
        row = engine.execute(f"SELECT token_hash FROM tokens WHERE token_hash IN ({marks})", chunk).fetchone()
        if row is not None:
            raise Conflict(f"frame: token {hashes[row[0]][:6]}… is already issued; each invitation's token is new",
                           "token")


def slots_by_cell(first_free: int, cells: list[int]) -> list[int]:
    """A slot per invitation such that each cell's invitations share one bitmap block (a cell larger than a block
    gets whole blocks of its own, split evenly): the block a response's bitmap write names then holds its whole cell.
    Cells go in a random order, and invitations in a random order within them."""
    members = collections.defaultdict(list)
    for position, cell in enumerate(cells):
        members[cell].append(position)
    order = list(members)
    secrets.SystemRandom().shuffle(order)
    slots = [0] * len(cells)
    following = first_free
    for cell in order:
        positions = members[cell]
        secrets.SystemRandom().shuffle(positions)
        if len(positions) > SLOTS_PER_ROW:
            parts = -(-len(positions) // SLOTS_PER_ROW)
            following = -(-following // SLOTS_PER_ROW) * SLOTS_PER_ROW
            for part in range(parts):
                share = positions[part * len(positions) // parts:(part + 1) * len(positions) // parts]
                start = following + part * SLOTS_PER_ROW
                for offset, position in enumerate(share):
                    slots[position] = start + offset
            following += parts * SLOTS_PER_ROW
            continue
        if following % SLOTS_PER_ROW + len(positions) > SLOTS_PER_ROW:
            following = -(-following // SLOTS_PER_ROW) * SLOTS_PER_ROW
        for offset, position in enumerate(positions):
            slots[position] = following + offset
        following += len(positions)
    return slots
