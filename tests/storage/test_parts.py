"""The store is made of parts (surveys, writes, reads, accounts), each reached by name, over an engine that declares
what the parts ask of it; the facade callers use forwards to the parts and hides nothing they need."""

import inspect

import pytest

from deniable import storage
from deniable.storage.accounts import Accounts
from deniable.storage.contacts import Contacts
from deniable.storage.credentials import Credentials
from deniable.storage.engines import Engine, SQLiteEngine
from deniable.storage.postgresql import PostgresEngine
from deniable.storage.reads import Reads
from deniable.storage.surveys import Surveys
from deniable.storage.writes import Writes

pytestmark = pytest.mark.both_engines

PARTS = {"surveys": Surveys, "writes": Writes, "reads": Reads, "accounts": Accounts, "contacts": Contacts,
         "credentials": Credentials}
#: What parts call on one another (the write path's survey row, lock and fieldwork window, a batch's entry for group
#: commit, an audit line only when an actor is named, the stored responses a retry is answered from, a response's
#: credential checked and spent): storage's own, not the facade's.
WITHIN_STORAGE = {"row", "lock", "spec_of", "store_one", "store_batch", "in_one_statement", "store_in_one_statement", "refreshed",
                  "audit_if", "stored_responses", "for_response", "checked", "spend", "public_key"}


def public_methods(cls) -> set[str]:
    return {name for name, value in vars(cls).items()
            if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, staticmethod))}


def test_the_facade_forwards_every_public_method_of_every_part_to_its_part():
    for cls in PARTS.values():
        for name in public_methods(cls) - WITHIN_STORAGE:
            forwarded = getattr(storage.Store, name)
            assert forwarded.__wrapped__ is getattr(cls, name), f"Store.{name} is not {cls.__name__}.{name}"
            assert inspect.signature(forwarded) == inspect.signature(getattr(cls, name))
    named = {name for name, value in vars(storage.Store).items() if hasattr(value, "__wrapped__")}
    assert named == set().union(*(public_methods(cls) for cls in PARTS.values())) - WITHIN_STORAGE


def test_each_part_is_reached_by_name_and_shares_the_store_s_connection(store, survey):
    for part, cls in PARTS.items():
        assert isinstance(getattr(store, part), cls) and getattr(store, part).store is store
    assert store.surveys.get_survey("tax").hash == store.get_survey("tax").hash == survey.hash
    with store.transaction():
        assert store.reads.engine is store.engine and store.engine.in_transaction


def test_both_engines_declare_what_the_parts_ask_of_them(store):
    assert isinstance(store.engine, Engine)
    members = {name for name in vars(Engine) if not name.startswith("_")} | set(Engine.__annotations__)
    for cls in (SQLiteEngine, PostgresEngine):
        missing = {name for name in members if not hasattr(cls, name) and name != "memo"}
        assert not missing, f"{cls.__name__} lacks {sorted(missing)}"
    assert isinstance(store.engine.memo, dict)
