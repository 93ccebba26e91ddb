"""`Part`: one concern of a `Store` (surveys, writes, reads, accounts), holding the store it belongs to.

Each part reads and writes through the store's one connection, and reaches a sibling concern by name
(``self.store.surveys``), never through ``self``: the path of a report into the database can be read, and followed by
tools, one explicit step at a time."""

from __future__ import annotations


class Part:
    def __init__(self, store):
        self.store = store

    @property
    def engine(self):
        return self.store.engine

    @property
    def layout(self):
        return self.store.layout

    def execute(self, sql: str, params=()):
        return self.store.engine.execute(sql, params)

    def transaction(self):
        return self.store.transaction()

    def _one(self, sql: str, params) -> dict | None:
        return self.store.one(sql, params)
