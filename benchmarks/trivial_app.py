"""The yardstick of benchmarks/ingest.py: the least a Flask + SQLite app can do per POST (parse
JSON, insert one row, commit with synchronous=FULL, answer 201), served by gunicorn like deniable.

    gunicorn -w 2 -k gthread --threads 8 --chdir benchmarks trivial_app:app   (TRIVIAL_DB=path, made by `prepare`)

With TRIVIAL_PG_URL (a PostgreSQL database, made ready by `prepare_postgresql`) instead, the same on PostgreSQL
through psycopg, as deniable speaks to it: a connection per thread, the row inserted in its own transaction.
"""

import os
import secrets
import sqlite3
import threading

from flask import Flask, request

app = Flask(__name__)
_local = threading.local()


def prepare(path: str):
    """The database in WAL mode with its table, made once before the server starts: switching the journal mode
    takes a lock that a busy timeout does not wait for, so sixteen threads doing it at their first request
    answered some of them 500 ("database is locked")."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS rows (id TEXT PRIMARY KEY, body TEXT)")
    db.close()


def prepare_postgresql(url: str):
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE TABLE IF NOT EXISTS rows (id TEXT PRIMARY KEY, body TEXT)")


def _postgresql():
    if getattr(_local, "db", None) is None:
        import psycopg

        _local.db = psycopg.connect(os.environ["TRIVIAL_PG_URL"])
    return _local.db


def _connection():
    if getattr(_local, "db", None) is None:
        db = sqlite3.connect(os.environ["TRIVIAL_DB"], timeout=30, isolation_level=None)
        db.execute("PRAGMA synchronous=FULL")
        _local.db = db
    return _local.db


@app.post("/r")
def insert():
    body = request.get_json()
    row_id = secrets.token_hex(16)
    if "TRIVIAL_PG_URL" in os.environ:
        db = _postgresql()
        with db.transaction():
            db.execute("INSERT INTO rows (id, body) VALUES (%s, %s)", [row_id, str(body)])
        return {"id": row_id}, 201
    db = _connection()
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO rows (id, body) VALUES (?, ?)", [row_id, str(body)])
    db.execute("COMMIT")
    return {"id": row_id}, 201
