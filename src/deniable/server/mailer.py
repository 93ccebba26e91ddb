"""Invitations and reminders by e-mail, through an SMTP server (``DENIABLE_SMTP_URL``), each sent at most once.

    smtp://user:password@mail.example.org:587      STARTTLS, required (the default port 587)
    smtps://user:password@mail.example.org:465     TLS from the first byte (the default port 465)
    smtp+insecure://127.0.0.1:2525                 no TLS: a relay on this machine only
    ...?cafile=/etc/ssl/our-ca.pem&timeout=30      a CA to trust besides the system's; seconds to wait

`send_all` claims a contact (storage commits the claim), hands its message to the server step by step (MAIL FROM,
RCPT TO, DATA) and records what the server said: accepted (sent), refused before DATA (nothing sent: released, or
recorded as a bounce when refused for good), or lost during DATA (uncertain: the claim is kept, the run stops, and
the next run reports it rather than sending it twice). Sends are spaced to the rate asked for.
"""

from __future__ import annotations

import email.policy
import smtplib
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from deniable.client.errors import DeniableError
from deniable.client.invitations import message as invitation_text

SCHEMES = {"smtp": ("starttls", 587), "smtps": ("ssl", 465), "smtp+insecure": ("none", 25)}


class MailError(DeniableError):
    """The SMTP server cannot be used (unreachable, refuses the sender or the credentials, or ``DENIABLE_SMTP_URL``
    does not say how to reach it): the run stops. Its field is ``smtp``."""

    def __init__(self, message: str):
        super().__init__(message, "smtp")


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    security: str  # starttls, ssl or none
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    cafile: str | None = None
    timeout: float = 30.0

    @classmethod
    def from_url(cls, url: str | None) -> "SmtpSettings":
        if not url:
            raise MailError("no SMTP server: set DENIABLE_SMTP_URL (e.g. smtp://user:password@mail.example.org:587)")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in SCHEMES or not parts.hostname:
            raise MailError(f"DENIABLE_SMTP_URL: smtp://, smtps:// or smtp+insecure:// and a host, got "
                            f"{parts.scheme or '(none)'}://{parts.hostname or ''}")
        security, port = SCHEMES[parts.scheme]
        if security == "none" and parts.hostname not in ("127.0.0.1", "::1", "localhost"):
            raise MailError("DENIABLE_SMTP_URL: smtp+insecure:// (no TLS) only to a relay on this machine; the "
                            "addresses and links would cross the network in the clear")
        query = urllib.parse.parse_qs(parts.query)
        unknown = sorted(set(query) - {"cafile", "timeout"})
        if unknown:
            raise MailError(f"DENIABLE_SMTP_URL: unknown parameter {unknown[0]!r} (cafile, timeout)")
        try:
            timeout = float(query.get("timeout", ["30"])[0])
        except ValueError:
            raise MailError("DENIABLE_SMTP_URL: timeout is a number of seconds") from None
        return cls(parts.hostname, parts.port or port, security,
                   urllib.parse.unquote(parts.username) if parts.username else None,
                   urllib.parse.unquote(parts.password) if parts.password else None,
                   query.get("cafile", [None])[0], timeout)


class Mailer:
    """One connection to the SMTP server, opened when first needed and again after it drops between messages."""

    def __init__(self, settings: SmtpSettings, sender: str):
        self.settings, self.sender, self.connection = settings, sender, None

    def _connect(self):
        s = self.settings
        context = ssl.create_default_context(cafile=s.cafile)
        connection = None
        try:
            if s.security == "ssl":
                connection = smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout, context=context)
            else:
                connection = smtplib.SMTP(s.host, s.port, timeout=s.timeout)
            connection.ehlo()
            if s.security == "starttls":
                if not connection.has_extn("starttls"):
                    raise MailError(f"{s.host}:{s.port} does not offer STARTTLS; use smtps:// or a server that does")
                connection.starttls(context=context)
                connection.ehlo()
            if s.username:
                connection.login(s.username, s.password or "")
        except (OSError, smtplib.SMTPException, MailError) as error:
            if connection is not None:
                connection.close()
            if isinstance(error, MailError):
                raise
            if isinstance(error, smtplib.SMTPAuthenticationError):
                raise MailError(f"{s.host}:{s.port} refused the credentials ({error.smtp_code})") from None
            raise MailError(f"cannot reach the SMTP server {s.host}:{s.port} ({error.__class__.__name__}: "
                            f"{error})") from None
        self.connection = connection

    def send(self, message: EmailMessage, recipient: str) -> tuple[str, str | None]:
        """("sent" | "refused" | "bounced" | "uncertain", what the server said). Raises MailError when the server
        cannot be used at all (nothing was sent)."""
        for attempt in range(2):
            if self.connection is None:
                self._connect()
            try:
                code, reply = self.connection.mail(self.sender)
                if code != 250:
                    self.connection.rset()
                    raise MailError(f"the SMTP server refused the sender {self.sender} ({code} {_text(reply)})")
                code, reply = self.connection.rcpt(recipient)
                if code not in (250, 251):
                    self.connection.rset()
                    return ("bounced" if code >= 500 else "refused"), f"{code} {_text(reply)}"
            except (smtplib.SMTPServerDisconnected, OSError):
                self.close()  # dropped between messages (an idle timeout): nothing of this one was taken; once more
                if attempt:
                    raise MailError("the SMTP server closed the connection before taking a message") from None
                continue
            try:
                code, reply = self.connection.data(message.as_bytes())  # smtplib leaves the final reply to check
            except smtplib.SMTPDataError as error:  # a reply before the message: the server did not take it
                code, reply = error.smtp_code, error.smtp_error
            except (smtplib.SMTPException, OSError, socket.timeout) as error:
                self.close()
                return "uncertain", f"{error.__class__.__name__} while the message was being handed over"
            if code != 250:  # refused after reading it (its content, not its address): not taken
                self.connection.rset()
                return "refused", f"{code} {_text(reply)}"
            return "sent", None
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self):
        if self.connection is not None:
            try:
                self.connection.quit()
            except (smtplib.SMTPException, OSError):
                pass
            self.connection = None


def _text(reply) -> str:
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


def build_message(survey, kind: str, contact: dict, sender: str, base_url: str) -> EmailMessage:
    """The e-mail to one contact: in its language, its own link, the opt-out link (also as List-Unsubscribe, RFC 8058
    one-click). No answer, no frame value, nothing about other contacts."""
    language = contact["language"] or survey.default_language
    quoted = urllib.parse.quote(contact["token"], safe="")
    base = f"{base_url.rstrip('/')}/s/{survey.id}"
    link = f"{base}?t={quoted}" + (f"&lang={language}" if survey.languages.declared and language else "")
    opt_out = f"{base}/opt-out?t={quoted}"
    subject, body = invitation_text(survey, kind, language, link, opt_out)
    message = EmailMessage(policy=email.policy.SMTP)  # CRLF line ends: smtplib sends bytes as they are
    message["From"] = sender
    message["To"] = contact["address"]
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    message["List-Unsubscribe"] = f"<{opt_out}>"
    message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(body)
    if language:  # after set_content, which replaces the Content-* headers
        message["Content-Language"] = language
    return message


#: The token a preview's links carry where each contact's e-mail carries the contact's own: it answers nothing.
PREVIEW_TOKEN = "EACH-CONTACT-S-OWN-TOKEN"


def example_message(survey, kind: str, language: str | None, sender: str, base_url: str,
                    recipient: str = "each.contact@example.invalid") -> EmailMessage:
    """The e-mail ``kind`` sends to a contact in ``language`` (None: the survey's default), with `PREVIEW_TOKEN` in
    place of the contact's own token: what a dry run shows and a test e-mail (to ``recipient``) carries."""
    return build_message(survey, kind, {"language": language, "token": PREVIEW_TOKEN, "address": recipient}, sender,
                         base_url)


def preview(survey, kind: str, language: str | None, sender: str, base_url: str) -> str:
    """`example_message` as a researcher reads it before sending: its sender, subject and opt-out header, then its
    text."""
    message = example_message(survey, kind, language, sender, base_url)
    headers = [f"{name}: {message[name]}" for name in ("From", "Subject", "Content-Language", "List-Unsubscribe")
               if message[name] is not None]
    return "\n".join(headers) + "\n\n" + message.get_content().replace("\r\n", "\n").rstrip("\n")


@dataclass
class Run:
    """What one run sent: per outcome, how many; and why it stopped early, if it did."""
    sent: int = 0
    refused: int = 0
    bounced: int = 0
    uncertain: int = 0
    stopped: str | None = None


def send_all(store, survey, kind: str, mailer: Mailer, base_url: str, per_minute: float, max_reminders: int = 0,
             wait_days: int = 0, limit: int | None = None, clock=time.monotonic, sleep=time.sleep) -> Run:
    """Send ``kind`` ("invite" or "remind") to every contact due one, at most ``per_minute`` a minute."""
    run = Run()
    spacing = 60.0 / per_minute
    last = None
    after = ""  # the run goes through the list once, in id order: a passing refusal is tried again by the next run
    try:
        while limit is None or run.sent < limit:
            contact = store.claim_contact(survey.id, kind, max_reminders, wait_days, after=after)
            if contact is None:
                break
            after = contact["id"]
            if last is not None:
                sleep(max(0.0, last + spacing - clock()))
            last = clock()
            try:
                message = build_message(survey, kind, contact, mailer.sender, base_url)
            except (ValueError, TypeError) as error:  # a header that cannot be written (a title stored with a line break)
                store.release_claim(survey.id, contact["id"], None)  # nothing went: not "may or may not have gone"
                raise MailError(f"the {'invitation' if kind == 'invite' else 'reminder'} to contact {contact['id']} cannot "
                                f"be written ({error}); "
                                "nothing was sent to it") from None
            try:
                outcome, said = mailer.send(message, contact["address"])
            except MailError:
                store.release_claim(survey.id, contact["id"], None)  # nothing of it was taken
                raise
            if outcome == "sent":
                store.confirm_sent(survey.id, contact["id"])
                run.sent += 1
            elif outcome == "uncertain":
                run.uncertain += 1  # the claim stays: reported, never sent twice unless asked
                run.stopped = said
                break
            else:
                store.release_claim(survey.id, contact["id"], said, bounced=outcome == "bounced")
                setattr(run, outcome, getattr(run, outcome) + 1)
    finally:
        mailer.close()
    return run

