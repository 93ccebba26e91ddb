"""Invitation tokens, kept so that nothing in the database joins a token to the response it sent.

A token's row is written once, when it is issued, and never again. Whether it has answered is one bit in a
bitmap row of ``token_use`` (one row per survey and per block of `SLOTS_PER_ROW` tokens), set in the transaction
that stores the response, so a token still answers exactly once. Why not a column of the token's own row: on
PostgreSQL every row version carries the id of the transaction that wrote it (``xmin``), which ``CLUSTER`` and
``VACUUM FREEZE`` keep, so a token updated in its response's transaction named that response to anyone who could
read both tables (``JOIN tokens t ON t.xmin = r.xmin`` found 30 of 30), and the tokens' physical order became the
order of use. Here a token row's ``xmin`` and place are those of its issue; a bitmap row's ``xmin`` is that of the
last response to spend one of its tokens, which narrows nothing (every used token of the row is a candidate), and
``deniable compact`` rewrites the bitmap rows in a transaction of their own, so it names no response at all.
"""

from __future__ import annotations

from .common import digest, today

#: Tokens per bitmap row: a row is 128 bytes (256 hex digits), and submissions spending tokens of different rows
#: never wait on each other's row lock.
SLOTS_PER_ROW = 1024
_EMPTY = "00" * (SLOTS_PER_ROW // 8)


def _bit(slot: int) -> tuple[int, int]:
    """(byte, mask) of a slot inside its bitmap row."""
    offset = slot % SLOTS_PER_ROW
    return offset // 8, 1 << (offset % 8)


def is_spent(bitmap: str, slot: int) -> bool:
    byte, mask = _bit(slot)
    return bool(bytes.fromhex(bitmap)[byte] & mask)


def with_spent(bitmap: str, slot: int) -> str:
    data = bytearray.fromhex(bitmap)
    byte, mask = _bit(slot)
    data[byte] |= mask
    return data.hex()


def spent_count(bitmaps) -> int:
    return sum(int(bitmap, 16).bit_count() for bitmap in bitmaps)


def add_tokens(engine, survey_id: str, token_hashes: list[str], slots: list[int] | None = None,
               cells: list[int] | None = None):
    """Rows for newly issued tokens, each with the next free slot (or the ``slots`` given, all past the highest
    taken: `first_free_slot`) and its frame cell (`frames.py`), and the bitmap rows their slots need. The caller holds
    the survey row's lock (two issuers never take the same slots)."""
    if slots is None:
        first = first_free_slot(engine, survey_id)
        slots = [first + i for i in range(len(token_hashes))]
    issued_on = today()
    engine.executemany("INSERT INTO tokens (token_hash, survey_id, issued_on, slot, frame_cell) VALUES (?, ?, ?, ?, ?)",
                       [(token_hash, survey_id, issued_on, slot, None if cells is None else cells[i])
                        for i, (token_hash, slot) in enumerate(zip(token_hashes, slots))])
    rows = sorted({slot // SLOTS_PER_ROW for slot in slots})
    engine.executemany("INSERT INTO token_use (survey_id, block, used) VALUES (?, ?, ?) "
                       "ON CONFLICT (survey_id, block) DO NOTHING", [(survey_id, row, _EMPTY) for row in rows])


def first_free_slot(engine, survey_id: str) -> int:
    # after the highest slot, not the count: slots stay unique should tokens ever be removed
    return engine.execute("SELECT COALESCE(MAX(slot), -1) + 1 FROM tokens WHERE survey_id = ?", [survey_id]).fetchone()[0]


_SLOT_AND_BITMAP = (f"SELECT t.slot, u.used FROM tokens t JOIN token_use u ON u.survey_id = t.survey_id "
                    f"AND u.block = t.slot / {SLOTS_PER_ROW} WHERE t.token_hash = ? AND t.survey_id = ?")


def token_status(engine, survey_id: str, token: str) -> str | None:
    """"unused" or "used" for a token of this survey, None for any other string."""
    row = engine.execute(_SLOT_AND_BITMAP, [digest(token), survey_id]).fetchone()
    return None if row is None else "used" if is_spent(row[1], row[0]) else "unused"


def spend(engine, survey_id: str, token: str, credentials: bool = True) -> str | None:
    """Mark the token used, inside the caller's transaction; None if done, else "unknown", "used" or "credentialed"
    (``credentials``: the schema has them, `has_credential`). The bitmap row is locked until that transaction ends
    (PostgreSQL: FOR UPDATE; SQLite writes one at a time)."""
    row = engine.execute(_SLOT_AND_BITMAP + engine.lock_rows("u"), [digest(token), survey_id]).fetchone()
    if row is None:
        return "unknown"
    slot, bitmap = row
    if is_spent(bitmap, slot):
        return "used"
    if credentials and has_credential(engine, survey_id, slot):
        return "credentialed"
    engine.execute("UPDATE token_use SET used = ? WHERE survey_id = ? AND block = ?",
                   [with_spent(bitmap, slot), survey_id, slot // SLOTS_PER_ROW])
    return None


#: Why a token with a credential is not spent itself: its response comes with the credential, unlinkable.
CREDENTIALED = ("token: this invitation has its credential (the survey page asked for it): the response is sent "
                "with the credential, not the token")


def has_credential(engine, survey_id: str, slot: int) -> bool:
    """Whether the token in ``slot`` has received a blind-signed credential (`credentials.py`): it is then spent as
    a credential, never as itself (that would answer twice)."""
    return engine.execute("SELECT 1 FROM credential_issues WHERE survey_id = ? AND slot = ?",
                          [survey_id, slot]).fetchone() is not None


def credentialed_slots(engine, survey_id: str, slots) -> set:
    """The slots among ``slots`` whose tokens have received a credential (`has_credential`), in one statement per 500."""
    found: set = set()
    for part in _parts(sorted(set(slots))):
        found.update(row[0] for row in engine.execute(
            f"SELECT slot FROM credential_issues WHERE survey_id = ? AND slot IN ({', '.join('?' * len(part))})",
            [survey_id, *part]).fetchall())
    return found


def token_counts(engine, survey_id: str) -> dict:
    issued = engine.execute("SELECT COUNT(*) FROM tokens WHERE survey_id = ?", [survey_id]).fetchone()[0]
    used = spent_count(row[0] for row in engine.execute("SELECT used FROM token_use WHERE survey_id = ?", [survey_id]))
    return {"issued": issued, "used": used}


def lookup(engine, survey_id: str, tokens: list[str]) -> dict:
    """{token: (slot, frame cell)} for the tokens of this survey among ``tokens`` (the others are not its tokens).
    A token's row never changes after issue, so nothing here is locked: `lock_bitmaps` locks what a spend writes."""
    hashes = {digest(token): token for token in tokens}
    found = {}
    for part in _parts(sorted(hashes)):
        rows = engine.execute(f"SELECT token_hash, slot, frame_cell FROM tokens WHERE survey_id = ? AND token_hash IN "
                              f"({', '.join('?' * len(part))})", [survey_id, *part]).fetchall()
        found.update({hashes[token_hash]: (slot, cell) for token_hash, slot, cell in rows})
    return found


def lock_bitmaps(engine, survey_id: str, blocks) -> dict:
    """{block: bitmap} of the given bitmap rows, locked until the caller's transaction ends, in block order (two
    batches wait on each other's rows in one order, never crosswise)."""
    return read_bitmaps(engine, survey_id, blocks, lock=True)


def read_bitmaps(engine, survey_id: str, blocks, lock: bool = False) -> dict:
    """{block: bitmap} of the given bitmap rows (locked, with ``lock``, as `lock_bitmaps` says)."""
    bitmaps = {}
    for part in _parts(sorted(set(blocks))):
        rows = engine.execute(f"SELECT u.block, u.used FROM token_use u WHERE u.survey_id = ? AND u.block IN "
                              f"({', '.join('?' * len(part))}) ORDER BY u.block" + (engine.lock_rows("u") if lock else ""),
                              [survey_id, *part]).fetchall()
        bitmaps.update(dict(rows))
    return bitmaps


def spend_slots(engine, survey_id: str, bitmaps: dict, slots) -> None:
    """Set the ``slots``' bits in ``bitmaps`` (read by `lock_bitmaps`) and write each changed row once."""
    changed = {}
    for slot in slots:
        block = slot // SLOTS_PER_ROW
        changed[block] = with_spent(changed.get(block, bitmaps[block]), slot)
    engine.executemany("UPDATE token_use SET used = ? WHERE survey_id = ? AND block = ?",
                       [(bitmap, survey_id, block) for block, bitmap in sorted(changed.items())])


def _parts(items: list, size: int = 500) -> list:
    return [items[i:i + size] for i in range(0, len(items), size)]
