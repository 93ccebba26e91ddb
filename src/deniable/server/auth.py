"""Credentials, in one place: the deployment's admin token, API tokens presented as bearer tokens,
admin browser sessions (`signed_in`) and the one CSRF check every form uses.

Admins sign in with a name and password (`deniable admin add NAME`) or paste the admin token into
the sign-in form; credentials never travel in a URL. The session cookie holds a random id (its
hash is stored with the session), is HttpOnly, SameSite=Strict, scoped to /admin, and Secure over
HTTPS. Every state-changing form carries the session's CSRF secret; the sign-in form and the
respondents' no-JavaScript form a double-submit one.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import threading

from flask import abort, current_app, g, redirect, request, url_for

from deniable import storage
from deniable.client.errors import DeniableError

from .db import get_store

#: The admin session cookie, and the sign-in form's double-submit CSRF cookie.
SESSION_COOKIE = "deniable_session"
LOGIN_COOKIE = "deniable_login_csrf"


#: Password hashes (scrypt, ~60 ms of CPU each) checked at once in this process: a flood of sign-ins waits
#: for none of them but gets 429 at once, so respondents' pages never queue behind the hashing.
PASSWORD_CHECKS = threading.BoundedSemaphore(2)


def check_password_bounded(store: storage.Store, name: str, password: str) -> bool | None:
    """`Store.check_password`, or None at once when `PASSWORD_CHECKS` are all busy (the caller answers 429)."""
    if not PASSWORD_CHECKS.acquire(blocking=False):
        return None
    try:
        return store.check_password(name, password)
    finally:
        PASSWORD_CHECKS.release()


class NotAuthorized(DeniableError):
    """An admin endpoint called without a valid admin or API token."""

    status = 401


def ensure_admin_token(store: storage.Store) -> str | None:
    """Create the admin token on first run: returns it (to print once) or None if one exists."""
    if store.get_setting("admin_token_hash"):
        return None
    token = secrets.token_urlsafe(24)
    store.set_setting("admin_token_hash", hashlib.sha256(token.encode()).hexdigest())
    return token


def rotate_admin_token(store: storage.Store) -> str:
    """Replace the admin token (the demo prints a fresh working link every time)."""
    store.set_setting("admin_token_hash", "")
    return ensure_admin_token(store)


def admin_token_valid(store: storage.Store, presented: str | None, configured: str | None) -> bool:
    """The deployment's admin token: ``$DENIABLE_ADMIN_TOKEN`` if set, else the stored hash."""
    if not presented:
        return False
    if configured:
        return secrets_match(presented, configured)
    stored = store.get_setting("admin_token_hash")
    return bool(stored) and secrets_match(hashlib.sha256(presented.encode()).hexdigest(), stored)


class OutOfScope(DeniableError):
    """An API token used for something its scopes do not allow."""

    status = 403


def api_caller(store: storage.Store, presented: str | None, configured: str | None) -> tuple[str, tuple] | None:
    """(who a bearer token belongs to, for the audit log; what it may do), or None: the admin token, which keeps
    working as an API token with every scope, or a named, revocable API token (`deniable admin token`) with its own."""
    if admin_token_valid(store, presented, configured):
        return "admin token", storage.SCOPES
    return store.api_token_caller(presented)


def bearer_caller(scope: str) -> str:
    """The caller of an admin API endpoint that needs ``scope``, for the audit log; `NotAuthorized` without a valid
    admin or API token in ``Authorization: Bearer …``, `OutOfScope` (403, audited) when the token lacks the scope."""
    return bearer_caller_and_scopes(scope)[0]


def bearer_caller_and_scopes(scope: str) -> tuple[str, tuple]:
    """`bearer_caller`, with every scope the token has (an endpoint that gives more to a token that may export)."""
    header = request.headers.get("Authorization", "")
    presented = header[7:].strip() if header.lower().startswith("bearer ") else None
    store = get_store()
    found = api_caller(store, presented, current_app.config.get("ADMIN_TOKEN"))
    if found is None and presented:
        raise NotAuthorized("token rejected: it is neither the admin token nor a live API token", "Authorization")
    if found is None:
        raise NotAuthorized("admin endpoints need 'Authorization: Bearer <admin token or API token>'", "Authorization")
    caller, scopes = found
    if scope not in scopes:
        store.audit(caller, "refused: out of scope", request.view_args.get("survey_id") if request.view_args else None,
                    f"{request.method} {request.path} needs {scope!r}; the token has {', '.join(scopes)}")
        raise OutOfScope(f"scope: {caller} may {', '.join(scopes)}; this needs {scope!r} (make a token with it: "
                         f"deniable admin token NAME --scope {scope})", "scope")
    return caller, tuple(scopes)


def secrets_match(presented: str | None, expected: str | None) -> bool:
    """Whether a presented secret equals the expected one, compared in constant time."""
    return bool(expected) and hmac.compare_digest((presented or "").encode(), expected.encode())


def check_csrf(expected: str | None):
    """403 unless the form's ``csrf`` field equals the expected secret: the one CSRF check of every
    admin form."""
    if not secrets_match(request.form.get("csrf", ""), expected):
        abort(403, "The form has expired or came from another site. Reload the page and try again.")


def current_session() -> dict | None:
    """{admin, csrf} of the request's signed-in admin session, or None."""
    if "admin_session" not in g:
        g.admin_session = get_store().session(request.cookies.get(SESSION_COOKIE))
    return g.admin_session


def signed_out():
    return redirect(url_for("admin.login"), code=303)


def signed_in(view):
    """Only for a signed-in admin (others go to the sign-in page); a form sent to it (POST) must
    also carry the session's CSRF secret. The view finds the admin in ``current_session()``."""

    @functools.wraps(view)
    def guarded(*args, **kwargs):
        session = current_session()
        if session is None:
            return signed_out()
        if request.method == "POST":
            check_csrf(session["csrf"])
        return view(*args, **kwargs)

    return guarded


def set_cookie(response, name: str, value: str, path: str, max_age: int | None = None):
    response.set_cookie(name, value, httponly=True, samesite="Strict", path=path, secure=request.is_secure,
                        max_age=max_age)
