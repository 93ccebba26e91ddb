"""The request's store, as the Flask tutorial's ``db.py`` gives blueprints their database.

SQLite: one connection per server thread, kept open (opening one per request costs a WAL
checkpoint whenever the last connection closes). PostgreSQL: one from the pool per request.
"""

from __future__ import annotations

import threading

from flask import current_app, g

from deniable import storage


def init_app(app):
    """Create or migrate the schema before the first request, and release each request's store."""
    with storage.Store(app.config["DATABASE"]):
        pass
    app.extensions["deniable_stores"] = threading.local()
    app.extensions["deniable_group_commit"] = storage.GroupCommit()
    app.teardown_appcontext(release_store)


def get_store() -> storage.Store:
    """The request's store, opened on first use and released at teardown."""
    if "store" not in g:
        local = current_app.extensions["deniable_stores"]
        store = getattr(local, "store", None)
        if store is None:
            settings = {"migrate": False, "group_commit": current_app.extensions["deniable_group_commit"]}
            try:
                store = storage.Store(current_app.config["DATABASE"], **settings)
            except storage.Unavailable:  # once more: a connection lost to a restart is replaced by now
                store = storage.Store(current_app.config["DATABASE"], **settings)
            if store.reusable:
                local.store = store
        g.store = store
    return g.store


def release_store(_exc=None):
    store = g.pop("store", None)
    if store is None:
        return
    store.engine.rollback()  # never carry a transaction over
    if not store.reusable:
        store.close()
        local = current_app.extensions["deniable_stores"]
        if getattr(local, "store", None) is store:  # a SQLite connection that turned out read-only: the next opens anew
            local.store = None
