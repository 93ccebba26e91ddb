"""The contact list of a survey's e-mail invitations (`deniable invite`, `deniable remind`): each address with its
language, its own invitation token and what was sent to it. Kept in its own table and never joined to responses: the
token links an address to "has started" (answered with the token, a bit of the tokens' bitmap, `tokens.py`; or
received its credential, `credentials.py`) and to nothing else, and
``purge_contacts`` erases the addresses after fieldwork, leaving every response and token as it was.

Sending is at most once per message, even across a crash. Before a message goes, its contact is *claimed* in a
committed transaction (``claim``: what is being sent); once the SMTP server has accepted it, the claim becomes the
record of what was sent. A claim still held when a run starts was interrupted between the two, so its message may or
may not have gone: it is reported as uncertain and never sent again unless the researcher asks
(``release_uncertain``). A refusal the SMTP server gives before accepting a message releases the claim (or, refused
for good, records the bounce)."""

from __future__ import annotations

import datetime as dt
import re
import secrets

from .common import chunks, today
from .errors import Conflict, Invalid, StorageError
from .part import Part
from .tokens import SLOTS_PER_ROW, credentialed_slots, is_spent, read_bitmaps
from .tokens import lookup as token_lookup

#: What an address may be: a plain mailbox (no display name, no comments), ASCII, at most 254 characters.
ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                     r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+")
#: The most contacts one import takes.
MAX_CONTACTS = 100_000
KINDS = ("invite", "remind")


def checked_address(value, where: str) -> str:
    """An address as kept (its domain in lower case), or `Invalid` naming where it is."""
    text = value.strip() if isinstance(value, str) else value
    if not isinstance(text, str) or len(text) > 254 or not ADDRESS.fullmatch(text) or ".." in text:
        raise Invalid(f"{where}: {value!r} is not an e-mail address (a plain address such as ana@example.org, without "
                      "a name or brackets)", "address")
    local, _, domain = text.rpartition("@")
    return f"{local}@{domain.lower()}"


class Contacts(Part):
    """The part of `Store` that keeps the contact list of e-mail invitations."""

    def _kept(self):
        if self.layout.schema < 13:  # read-only opens read older schemas as they are: none kept contacts
            raise StorageError(f"schema version {self.layout.schema} keeps no contact list; open the database with "
                               "a command that writes (it migrates) before inviting anyone")

    def add_contacts(self, survey_id: str, contacts: list[dict], actor: str | None = None) -> dict:
        """Add contacts ({address, language (None: the survey's default), frame (its sample.frame row, or None)}),
        each with an invitation token of its own (issued with its frame row). An address already on the list is kept
        as it is (an import run again adds only what is new); the same address twice in one list, or an address
        whose language is not the survey's, is refused before anything is written. Returns {added, known}."""
        self._kept()
        rows = self._checked_rows(survey_id, contacts)
        with self.transaction():
            known = self._known(survey_id, rows)
            new = [row for row in rows if row[0].lower() not in known]
            if new:
                tokens = self.store.surveys.issue_tokens(survey_id, len(new), frame=_frames(new))
                added_on = today()
                for chunk in chunks(list(zip(new, tokens)), 500):
                    self.execute("INSERT INTO contacts (survey_id, id, address, language, token, added_on) VALUES "
                                 + ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(chunk)),
                                 [x for (address, language, _), token in chunk
                                  for x in (survey_id, secrets.token_hex(8), address, language, token, added_on)])
            self.store.accounts.audit_if(actor, "contacts added", survey_id, f"{len(new)} new, {len(known)} known")
        return {"added": len(new), "known": len(rows) - len(new)}

    def check_contacts(self, survey_id: str, contacts: list[dict]) -> dict:
        """What `add_contacts` would do with ``contacts``, writing nothing (a dry run; a read-only store will do):
        the same refusals, and {added, known, languages}: how many it would add, how many are on the list already,
        and the added ones per language (None: the survey's default)."""
        self._kept()
        rows = self._checked_rows(survey_id, contacts)
        known = self._known(survey_id, rows)
        new = [row for row in rows if row[0].lower() not in known]
        if new:
            self.store.surveys.check_tokens(survey_id, len(new), frame=_frames(new))
        languages: dict = {}
        for _, language, _ in new:
            languages[language] = languages.get(language, 0) + 1
        return {"added": len(new), "known": len(known), "languages": languages}

    def _checked_rows(self, survey_id: str, contacts: list[dict]) -> list[tuple]:
        """(address as kept, language, frame) per contact, or `Invalid` naming the first that cannot be added."""
        record = self.store.surveys.get_survey(survey_id)
        if not 1 <= len(contacts) <= MAX_CONTACTS:
            raise Invalid(f"contacts: between 1 and {MAX_CONTACTS} per list, got {len(contacts)}", "contacts")
        languages = set(record.survey.page_languages)
        seen: dict[str, int] = {}
        rows = []
        for position, contact in enumerate(contacts):
            where = f"contacts[{position}]"
            address = checked_address(contact.get("address"), f"{where}.address")
            if address.lower() in seen:
                raise Invalid(f"{where}.address: {address} is also contacts[{seen[address.lower()]}] (each address once)",
                              "address")
            seen[address.lower()] = position
            language = contact.get("language") or None
            if language is not None and language not in languages:
                raise Invalid(f"{where}.language: {language!r} is not a language of this survey "
                              f"({', '.join(sorted(languages))})", "language")
            rows.append((address, language, contact.get("frame")))
        return rows

    def _known(self, survey_id: str, rows: list[tuple]) -> set[str]:
        """The addresses among ``rows`` already on the survey's list (in lower case, as they are compared)."""
        known = set()
        for chunk in chunks([address.lower() for address, _, _ in rows], 500):
            known.update(row[0] for row in self.execute(
                f"SELECT LOWER(address) FROM contacts WHERE survey_id = ? AND LOWER(address) IN "
                f"({', '.join('?' * len(chunk))})", [survey_id, *chunk]).fetchall())
        return known

    def claim_contact(self, survey_id: str, kind: str, max_reminders: int = 0, wait_days: int = 0,
                      after: str = "") -> dict | None:
        """Claim the next contact (by id, after ``after``: a run goes through the list once) to send ``kind``
        ("invite" or "remind") to, committed before the message goes: {id, address, language, token, reminders};
        None when there is nobody left. Who is due is `_due`'s rule."""
        self._kept()
        while True:
            with self.transaction():
                due, after = self._due(survey_id, kind, max_reminders, wait_days, after)
                if after is None:
                    return None
                for contact in due:
                    taken = self.execute("UPDATE contacts SET claim = ? WHERE survey_id = ? AND id = ? AND claim IS NULL",
                                         [kind, survey_id, contact["id"]]).rowcount
                    if taken:
                        return contact

    def due_contacts(self, survey_id: str, kind: str, max_reminders: int = 0, wait_days: int = 0) -> dict:
        """How many contacts a run would send ``kind`` to now, per language (None: the survey's default), claiming
        nobody (a dry run; a read-only store will do)."""
        self._kept()
        self.store.surveys.get_survey(survey_id)
        languages: dict = {}
        after = ""
        while True:
            due, after = self._due(survey_id, kind, max_reminders, wait_days, after)
            if after is None:
                return languages
            for contact in due:
                languages[contact["language"]] = languages.get(contact["language"], 0) + 1

    def waiting_for_reminders(self, survey_id: str, max_reminders: int, wait_days: int) -> dict:
        """Why invited contacts are not due a reminder now (a dry run says it): ``waiting``, written to less than
        ``wait_days`` ago (answered or not: answering is not looked up here), and the first day one of them is due;
        ``reminded_enough``, reminded ``max_reminders`` times already."""
        kept = "survey_id = ? AND invited_on IS NOT NULL AND bounced_on IS NULL AND opted_out_on IS NULL"
        waiting, last = self.execute(f"SELECT COUNT(*), MIN(last_sent_on) FROM contacts WHERE {kept} AND reminders < ? "
                                     "AND last_sent_on > ?", [survey_id, max_reminders, _days_ago(wait_days)]).fetchone()
        enough = self.execute(f"SELECT COUNT(*) FROM contacts WHERE {kept} AND reminders >= ?",
                              [survey_id, max_reminders]).fetchone()[0]
        first_due = None if last is None else (dt.date.fromisoformat(last) + dt.timedelta(days=wait_days)).isoformat()
        return {"waiting": int(waiting), "first_due": first_due, "reminded_enough": int(enough)}

    def _due(self, survey_id: str, kind: str, max_reminders: int, wait_days: int, after: str) -> tuple[list, str | None]:
        """The next page of contacts (by id, after ``after``) due ``kind``, and the id to go on after (None: the list
        is done). An invitation goes to a contact not yet invited; a reminder only to a contact invited at least
        ``wait_days`` ago and reminded fewer than ``max_reminders`` times, whose invitation has not started (`_started`); neither
        to a contact claimed by a run, who has opted out or whose address has bounced."""
        if kind not in KINDS:
            raise Invalid(f"kind: one of {', '.join(KINDS)}", "kind")
        due = ("invited_on IS NULL" if kind == "invite" else
               "invited_on IS NOT NULL AND last_sent_on <= ? AND reminders < ?")
        candidates = self.execute(
            "SELECT id, address, language, token, reminders FROM contacts WHERE survey_id = ? AND id > ? AND "
            f"claim IS NULL AND bounced_on IS NULL AND opted_out_on IS NULL AND {due} ORDER BY id LIMIT 200",
            [survey_id, after, *([] if kind == "invite" else [_days_ago(wait_days), max_reminders])]).fetchall()
        if not candidates:
            return [], None
        started = set() if kind == "invite" else self._started(survey_id, [row[3] for row in candidates])
        return [{"id": contact_id, "address": address, "language": language, "token": token,
                 "reminders": int(reminders)}
                for contact_id, address, language, token, reminders in candidates if token not in started], \
            candidates[-1][0]

    def _started(self, survey_id: str, tokens: list[str]) -> set[str]:
        """The tokens among ``tokens`` whose invitation has started: answered the old way (its token spent), or opened
        on a device that received its credential. Who has answered with a credential is known to nobody, so a
        reminder goes only to those who have not yet opened their invitation."""
        started = set()
        for chunk in chunks(tokens, 500):
            found = token_lookup(self.engine, survey_id, chunk)
            bitmaps = read_bitmaps(self.engine, survey_id, {slot // SLOTS_PER_ROW for slot, _ in found.values()})
            credentialed = credentialed_slots(self.engine, survey_id, [slot for slot, _ in found.values()]) \
                if self.layout.has_credentials else set()
            started.update(token for token, (slot, _) in found.items()
                           if is_spent(bitmaps[slot // SLOTS_PER_ROW], slot) or slot in credentialed)
        return started

    def confirm_sent(self, survey_id: str, contact_id: str) -> None:
        """The SMTP server accepted the claimed message: recorded as sent, the claim let go."""
        self._kept()
        with self.transaction():
            row = self._one("SELECT claim FROM contacts WHERE survey_id = ? AND id = ?", [survey_id, contact_id])
            if row is None or row["claim"] is None:
                raise Conflict(f"contact {contact_id}: not claimed", "contact")
            column = "invited_on = ?" if row["claim"] == "invite" else "reminders = reminders + 1"
            params = [today()] if row["claim"] == "invite" else []
            self.execute(f"UPDATE contacts SET {column}, last_sent_on = ?, claim = NULL, problem = NULL "
                         "WHERE survey_id = ? AND id = ?", [*params, today(), survey_id, contact_id])

    def release_claim(self, survey_id: str, contact_id: str, problem: str | None = None, bounced: bool = False) -> None:
        """The SMTP server refused the claimed message before accepting it: nothing was sent. Refused for good
        (``bounced``), the address is recorded as bounced and written to no more."""
        self._kept()
        with self.transaction():
            self.execute("UPDATE contacts SET claim = NULL, problem = ?" + (", bounced_on = ?" if bounced else "")
                         + " WHERE survey_id = ? AND id = ?",
                         [problem, *([today()] if bounced else []), survey_id, contact_id])

    def release_uncertain(self, survey_id: str, actor: str | None = None) -> int:
        """Let go every claim an interrupted run left (their messages may have gone): they are sent again."""
        self._kept()
        with self.transaction():
            count = self.execute("UPDATE contacts SET claim = NULL WHERE survey_id = ? AND claim IS NOT NULL",
                                 [survey_id]).rowcount
            self.store.accounts.audit_if(actor, "uncertain e-mails released", survey_id, f"{count} contacts")
        return count

    def mark_bounced(self, survey_id: str, addresses: list[str], actor: str | None = None) -> int:
        """Record addresses whose mail bounced after the SMTP server took it (a delivery report): written to no
        more. Returns how many of them are on the list."""
        self._kept()
        checked = [checked_address(a, f"addresses[{i}]").lower() for i, a in enumerate(addresses)]
        with self.transaction():
            count = 0
            for chunk in chunks(checked, 500):
                count += self.execute(
                    f"UPDATE contacts SET bounced_on = ? WHERE survey_id = ? AND bounced_on IS NULL AND LOWER(address) "
                    f"IN ({', '.join('?' * len(chunk))})", [today(), survey_id, *chunk]).rowcount
            self.store.accounts.audit_if(actor, "bounces recorded", survey_id, f"{count} addresses")
        return count

    def opt_out(self, survey_id: str, token: str) -> bool:
        """The respondent of this invitation asks for no more e-mails (the link in each one). True when the token is
        a contact's of this survey (whether or not it had opted out before)."""
        self._kept()
        if not isinstance(token, str) or not 1 <= len(token) <= 256:
            return False
        with self.transaction():
            found = self._one("SELECT id FROM contacts WHERE survey_id = ? AND token = ?", [survey_id, token])
            if found is None:
                return False
            self.execute("UPDATE contacts SET opted_out_on = COALESCE(opted_out_on, ?) WHERE survey_id = ? AND id = ?",
                         [today(), survey_id, found["id"]])
        return True

    def contact_summary(self, survey_id: str) -> dict:
        """Counts of the survey's contact list: contacts, invited, reminders sent, started (answered with the token
        itself, or opened on a device that received its credential: who answered with one is known to nobody), not
        yet invited, uncertain (claims an interrupted run left), bounced, opted out."""
        self._kept()
        self.store.surveys.get_survey(survey_id)
        rows = self.execute("SELECT token, invited_on, reminders, claim, bounced_on, opted_out_on FROM contacts "
                            "WHERE survey_id = ?", [survey_id]).fetchall()
        started = self._started(survey_id, [row[0] for row in rows])
        return {"contacts": len(rows), "invited": sum(row[1] is not None for row in rows),
                "reminders_sent": sum(int(row[2]) for row in rows), "started": len(started),
                "not_invited": sum(row[1] is None and row[3] is None and row[4] is None and row[5] is None
                                   for row in rows),
                "uncertain": sum(row[3] is not None for row in rows), "bounced": sum(row[4] is not None for row in rows),
                "opted_out": sum(row[5] is not None for row in rows)}

    def purge_contacts(self, survey_id: str, actor: str | None = None) -> tuple[int, str]:
        """Erase the survey's contact list (addresses and the tokens kept to write to them); responses, tokens'
        hashes and their use stay as they are, so a link already sent still answers once. Then the files are
        scrubbed of them (`Engine.scrub`: SQLite's log reset, PostgreSQL's table rewritten): (how many, what was
        done to the files, in words)."""
        self._kept()
        self.store.surveys.get_survey(survey_id)
        with self.transaction():
            count = self.execute("DELETE FROM contacts WHERE survey_id = ?", [survey_id]).rowcount
            self.store.accounts.audit_if(actor, "contacts purged", survey_id, f"{count} addresses erased")
        return count, self.engine.scrub("contacts")


def _frames(rows: list[tuple]) -> list | None:
    """The frame rows of contacts' invitations (None when no contact has one)."""
    frames = [frame for _, _, frame in rows]
    return frames if any(frame is not None for frame in frames) else None


def _days_ago(days: int) -> str:
    return (dt.date.fromisoformat(today()) - dt.timedelta(days=days)).isoformat()

