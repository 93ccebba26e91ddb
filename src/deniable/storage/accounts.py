"""Admin accounts (password hashes), their browser sessions, API tokens for scripts, and the
audit log of admin actions. Only hashes of secrets are kept."""

from __future__ import annotations

import datetime as dt
import re
import secrets

from .common import digest, today, utc_now
from .errors import Conflict, Invalid, NotFound, StorageError
from .part import Part

#: Admin sign-in: minimum password length, failures before a lock, the lock, a session's life.
MIN_PASSWORD_LENGTH = 12
SIGN_IN_FAILURES = 5
SIGN_IN_LOCK = dt.timedelta(minutes=15)
SESSION_LIFETIME = dt.timedelta(hours=8)
#: The audit log's action for refused sign-ins (kept apart from admin actions: see `refused_sign_in`).
REFUSED_SIGN_IN = "sign-in refused"
#: What an admin's name may be; and the actor of refused sign-ins with any other name.
ADMIN_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
NO_SUCH_ADMIN = "(no such admin)"
_DUMMY_HASH = "scrypt:32768:8:1$deniable$" + "0" * 128


#: What an API token may do: read surveys, versions, counts and waves; export per-response reports; write (publish
#: surveys and versions, close and reopen them); manage fieldwork (issue invitation tokens, open and close waves).
SCOPES = ("read", "export", "write", "manage")


def checked_scopes(scopes) -> tuple:
    """The scopes in `SCOPES` order; `Invalid` naming one that is not a scope, or an empty list."""
    if isinstance(scopes, str):
        scopes = [part.strip() for part in scopes.split(",") if part.strip()]
    scopes = list(scopes or [])
    unknown = [scope for scope in scopes if scope not in SCOPES]
    if unknown or not scopes:
        raise Invalid(f"scopes: one or more of {', '.join(SCOPES)}, got {', '.join(map(repr, unknown)) or 'none'}",
                      "scopes")
    return tuple(scope for scope in SCOPES if scope in scopes)


class Accounts(Part):
    """The part of `Store` that keeps admins, sessions, API tokens and the audit log."""

    def _accounts_kept(self):
        # Read-only opens read older schemas as they are; the account tables came with schema 5.
        if self.layout.schema < 5:
            raise StorageError(f"schema version {self.layout.schema} keeps no admin accounts, API tokens or audit log: "
                               "run `deniable init-db` to migrate it", "db")

    def add_admin(self, name: str, password: str):
        """A named admin account; the password is kept only as a salted scrypt hash (werkzeug)."""
        from werkzeug.security import generate_password_hash  # 70 ms off the commands that never touch a password

        if not isinstance(name, str) or not ADMIN_NAME.fullmatch(name):
            raise Invalid("name: 1 to 64 letters, digits or _ . @ -", "name")
        if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
            raise Invalid(f"password: at least {MIN_PASSWORD_LENGTH} characters", "password")
        with self.transaction():
            if self._one("SELECT name FROM admins WHERE name = ?", [name]) is not None:
                raise Conflict(f"name: an admin {name!r} exists already", "name")
            self.execute("INSERT INTO admins (name, password_hash, added_on) VALUES (?, ?, ?)",
                         [name, generate_password_hash(password), today()])
            self.audit(name, "admin added")

    def admins(self) -> list[dict]:
        self._accounts_kept()
        cursor = self.execute("SELECT name, added_on, locked_until FROM admins ORDER BY name")
        return [{"name": n, "added_on": d, "locked_until": locked} for n, d, locked in cursor.fetchall()]

    def check_password(self, name: str, password: str) -> bool:
        """True for the right password. A guess is counted before its password is checked, in one atomic
        increment-and-test: however many arrive at once, from however many processes, at most
        `SIGN_IN_FAILURES` in a row are ever checked; the last of them, if wrong, locks the account for
        `SIGN_IN_LOCK` (in the database, so for every server process). Every name costs one password hash,
        known or unknown, locked or not, so the time of an answer says nothing about which names exist."""
        from werkzeug.security import check_password_hash  # 70 ms off the commands that never touch a password

        now = utc_now()
        # fetchall: the statement must finish (and SQLite's write lock go) before the slow hash below
        rows = self.execute("UPDATE admins SET failed_sign_ins = failed_sign_ins + 1 "
                            "WHERE name = ? AND (locked_until IS NULL OR locked_until <= ?) "
                            "RETURNING password_hash, failed_sign_ins", [name, now.isoformat()]).fetchall()
        counted = {"password_hash": rows[0][0], "failed_sign_ins": rows[0][1]} if rows else None
        if counted is None or counted["failed_sign_ins"] > SIGN_IN_FAILURES:
            check_password_hash(_DUMMY_HASH, password)  # unknown, locked, or over the count: the same work
            if counted is not None:
                self._lock(name, now)
            return False
        if check_password_hash(counted["password_hash"], password):
            self.execute("UPDATE admins SET failed_sign_ins = 0, locked_until = NULL WHERE name = ?", [name])
            return True
        if counted["failed_sign_ins"] == SIGN_IN_FAILURES:
            self._lock(name, now)
        return False

    def _lock(self, name: str, now):
        """Lock an account that reached `SIGN_IN_FAILURES` guesses; its count starts again when the lock ends."""
        with self.transaction():
            locked = self.execute("UPDATE admins SET failed_sign_ins = 0, locked_until = ? WHERE name = ? "
                                  "AND (locked_until IS NULL OR locked_until <= ?)",
                                  [(now + SIGN_IN_LOCK).isoformat(), name, now.isoformat()]).rowcount
            if locked:
                self.audit(name, "account locked", detail=f"{SIGN_IN_FAILURES} failed sign-ins")

    def start_session(self, admin: str) -> tuple[str, str]:
        """A new session (a fresh id at every sign-in: no fixation); returns (id, CSRF secret).
        Only the id's hash is stored."""
        session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.execute("DELETE FROM admin_sessions WHERE expires_at < ?", [utc_now().isoformat()])
        self.execute("INSERT INTO admin_sessions (id_hash, admin, csrf, expires_at) VALUES (?, ?, ?, ?)",
                     [digest(session_id), admin, csrf, (utc_now() + SESSION_LIFETIME).isoformat()])
        return session_id, csrf

    def session(self, session_id: str | None) -> dict | None:
        """{admin, csrf} of a live session, or None."""
        if not session_id or not isinstance(session_id, str) or len(session_id) > 100:
            return None
        row = self._one("SELECT admin, csrf, expires_at FROM admin_sessions WHERE id_hash = ?", [digest(session_id)])
        if row is None or row["expires_at"] < utc_now().isoformat():
            return None
        return {"admin": row["admin"], "csrf": row["csrf"]}

    def end_session(self, session_id: str | None):
        if session_id:
            self.execute("DELETE FROM admin_sessions WHERE id_hash = ?", [digest(session_id)])

    def create_api_token(self, name: str, admin: str | None = None, scopes=("read",)) -> tuple[str, str]:
        """A named token for scripts: returns (id, token). The token is shown once and kept hashed. ``scopes``: what
        it may do (`SCOPES`), read-only unless given more."""
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            raise Invalid("name: 1 to 100 characters saying what the token is for", "name")
        scopes = checked_scopes(scopes)
        token_id, token = secrets.token_hex(4), "dnb_" + secrets.token_urlsafe(32)
        with self.transaction():
            self.execute("INSERT INTO api_tokens (id, name, admin, token_hash, created_on, scopes) VALUES (?, ?, ?, ?, ?, ?)",
                         [token_id, name, admin, digest(token), today(), ",".join(scopes)])
            self.audit(admin or "cli", "API token created", detail=f"{token_id} ({name}), scopes {', '.join(scopes)}")
        return token_id, token

    def api_tokens(self) -> list[dict]:
        self._accounts_kept()
        scopes = "scopes" if self.layout.schema >= 11 else "'read,export,write,manage'"
        cursor = self.execute(f"SELECT id, name, admin, created_on, last_used_on, revoked_on, {scopes} AS scopes "
                              "FROM api_tokens ORDER BY created_on, id")
        names = [c[0] for c in cursor.description]
        return [{**dict(zip(names, row)), "scopes": row[-1].split(",")} for row in cursor.fetchall()]

    def revoke_api_token(self, token_id: str, actor: str = "cli"):
        with self.transaction():
            if self.execute("UPDATE api_tokens SET revoked_on = ? WHERE id = ? AND revoked_on IS NULL",
                            [today(), token_id]).rowcount != 1:
                raise NotFound(f"no live API token {token_id!r}", "id")
            self.audit(actor, "API token revoked", detail=token_id)

    def api_token_caller(self, token: str | None) -> tuple[str, tuple] | None:
        """(the caller's name for the audit log, its scopes) of a live API token (its last use is recorded, to the
        day), or None."""
        if not token or len(token) > 200:
            return None
        scopes = "scopes" if self.layout.schema >= 11 else "'read,export,write,manage' AS scopes"
        row = self._one(f"SELECT id, name, last_used_on, {scopes} FROM api_tokens WHERE token_hash = ? "
                        "AND revoked_on IS NULL", [digest(token)])
        if row is None:
            return None
        if row["last_used_on"] != today() and not self.store.read_only:
            self.execute("UPDATE api_tokens SET last_used_on = ? WHERE id = ?", [today(), row["id"]])
        return f"token {row['id']} ({row['name']})", tuple(row["scopes"].split(","))

    def audit(self, actor: str, action: str, survey_id: str | None = None, detail: str | None = None):
        """One line of the audit log: who did what to which survey, when. Never report content."""
        self.execute("INSERT INTO audit_log (id, at, actor, action, survey_id, detail) VALUES (?, ?, ?, ?, ?, ?)",
                     [secrets.token_hex(8), utc_now().isoformat(timespec="microseconds"), actor, action, survey_id, detail])

    def audit_if(self, actor: str | None, action: str, survey_id: str | None = None, detail: str | None = None):
        if actor is not None:
            self.audit(actor, action, survey_id, detail)

    def refused_sign_in(self, name: str):
        """A refused sign-in, kept as its own kind: one line per name and hour, counting the refusals, so a
        flood of them neither floods the log nor pushes admin actions out of view. A name that is no admin's (and
        the admin token) shares one line an hour, "(no such admin)": fresh names made a line each (3,175 in 20 s),
        and whatever was typed (right-to-left overrides included) was shown as an actor."""
        if name != "admin token" and (not ADMIN_NAME.fullmatch(name or "")
                                      or self._one("SELECT name FROM admins WHERE name = ?", [name]) is None):
            name = NO_SUCH_ADMIN
        now = utc_now()
        hour = now.replace(minute=0, second=0, microsecond=0).isoformat(timespec="microseconds")
        line_id = "refused-" + digest(f"{name}\n{hour}")[:16]
        self.execute("INSERT INTO audit_log (id, at, actor, action, survey_id, detail) VALUES (?, ?, ?, ?, NULL, '1') "
                     "ON CONFLICT (id) DO UPDATE SET detail = CAST(CAST(audit_log.detail AS INTEGER) + 1 AS TEXT)",
                     [line_id, hour, name, REFUSED_SIGN_IN])

    def audit_log(self, limit: int = 200, offset: int = 0, kind: str | None = None) -> list[dict]:
        """The latest lines first. ``kind``: "actions" (what admins did), "refusals" (refused sign-ins,
        one line per name and hour, the count in ``detail``), or None for both."""
        self._accounts_kept()
        if kind not in (None, "actions", "refusals"):
            raise Invalid(f"kind: must be 'actions' or 'refusals', got {kind!r}", "kind")
        where = {None: "", "actions": "WHERE action <> ? ", "refusals": "WHERE action = ? "}[kind]
        cursor = self.execute(f"SELECT at, actor, action, survey_id, detail FROM audit_log {where}"
                              "ORDER BY at DESC, id LIMIT ? OFFSET ?",
                              ([REFUSED_SIGN_IN] if kind else []) + [limit, offset])
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]
