"""Invitations and reminders by e-mail against a real SMTP server on loopback (aiosmtpd), both engines: each contact
gets its own link in its language, once, even across kill -9 mid-list; reminders go only to those who have not
answered, opted out or bounced, at most --max times; refusals, an unreachable server and a timeout leave nothing
marked sent; bad contact lists are refused naming the line; purging erases the addresses and leaves the responses."""

import asyncio
import csv
import datetime
import email
import email.policy
import os
import signal
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller

from deniable import storage
from deniable.client import Survey
from deniable.server.cli import main
from deniable.server.demo import demo_survey
from deniable.server.mailer import PREVIEW_TOKEN
from deniable.storage.common import today
from tests.server.conftest import free_port
from tests.server.test_browser import browser  # noqa: F401 - the module's Chromium fixture

pytestmark = pytest.mark.both_engines

DENIABLE = str(Path(sys.executable).with_name("deniable"))
BASE = "https://survey.example.org"
SENDER = "research@example.org"
ANSWERS = {"region": "North", "worked": "no", "dodged": "no", "fairness": "Agree"}


class Recording:
    """An SMTP server's handler that keeps every message it accepts; ``refuse`` maps an address to the reply its RCPT
    gets; ``hold`` blocks the RCPT of the n-th message until released; ``slow_data`` delays every DATA reply."""

    def __init__(self):
        self.messages, self.refuse, self.hold, self.slow_data = [], {}, None, 0.0
        self.holding, self.release = threading.Event(), threading.Event()
        self.rcpts = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refuse:
            return self.refuse[address]
        self.rcpts += 1
        if self.hold is not None and self.rcpts == self.hold:
            self.holding.set()
            while not self.release.is_set():
                await asyncio.sleep(0.02)
            return "451 try later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.slow_data:
            await asyncio.sleep(self.slow_data)
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append((envelope.rcpt_tos[0], parsed))
        return "250 Message accepted for delivery"

    def to(self, address):
        return [message for recipient, message in self.messages if recipient == address]


@pytest.fixture
def smtp(monkeypatch):
    handler = Recording()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    monkeypatch.setenv("DENIABLE_SMTP_URL", f"smtp+insecure://127.0.0.1:{port}?timeout=5")
    handler.url = f"smtp+insecure://127.0.0.1:{port}"
    yield handler
    handler.release.set()
    controller.stop()


@pytest.fixture
def questionnaire(store):
    survey = demo_survey()
    store.add_survey(survey)
    return survey


def contact_list(tmp_path, count=12, name="contacts.csv", extra=None):
    path = tmp_path / name
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["email", "language", *(extra or {})])
        for i in range(count):
            writer.writerow([f"person{i:02d}@example.net", ["en", "es", "fr"][i % 3], *(extra or {}).values()])
    return str(path)


def invite(runner, db_path, *args):
    return runner.invoke(main, ["invite", "tax", "--base-url", BASE, "--from", SENDER, "--rate", "6000", "--db", db_path,
                                *args])


def _stored_bytes(store, db_path) -> list[bytes]:
    """What a copy of the database's files holds: SQLite's file and its log; PostgreSQL's contacts table file."""
    if store.engine.dialect == "sqlite":
        return [Path(path).read_bytes() for path in (db_path, f"{db_path}-wal") if os.path.exists(path)]
    return [bytes(store.execute("SELECT pg_read_binary_file(pg_relation_filepath('contacts'))").fetchone()[0])]


def token_of(message) -> str:
    link = next(line for line in message.get_content().splitlines() if line.startswith(f"{BASE}/s/tax?t="))
    return urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["t"][0]


def test_each_contact_gets_its_own_link_in_its_language_once(runner, db_path, store, questionnaire, smtp, tmp_path):
    done = invite(runner, db_path, "--contacts", contact_list(tmp_path))
    assert done.exit_code == 0, done.output
    assert "12 invitations sent" in done.output and len(smtp.messages) == 12
    tokens = set()
    for i in range(12):
        [message] = smtp.to(f"person{i:02d}@example.net")
        language = ["en", "es", "fr"][i % 3]
        subject = {"en": "Invitation: ", "es": "Invitación: ", "fr": "Invitation : "}[language]
        assert message["Subject"] == subject + questionnaire.title_in(language)
        assert message["Content-Language"] == language and message["From"] == SENDER
        token = token_of(message)
        assert store.token_status("tax", token) == "unused" and f"lang={language}" in message.get_content()
        assert message["List-Unsubscribe"].strip() == f"<{BASE}/s/tax/opt-out?t={token}>"
        tokens.add(token)
    assert len(tokens) == 12
    again = invite(runner, db_path, "--contacts", contact_list(tmp_path))  # the same list again: nobody twice
    assert again.exit_code == 0 and "0 contacts added (12 already on the list)" in again.output
    assert "0 invitations sent" in again.output and len(smtp.messages) == 12
    assert store.contact_summary("tax") == {"contacts": 12, "invited": 12, "reminders_sent": 0, "started": 0,
                                            "not_invited": 0, "uncertain": 0, "bounced": 0, "opted_out": 0}


def test_kill_9_mid_list_sends_nobody_twice(db_path, store, questionnaire, smtp, tmp_path):
    """The run is killed while the SMTP server holds its sixth message: five were sent and recorded, the sixth was
    claimed and is reported uncertain; a second run sends the other six and not it; --resend-uncertain sends it."""
    contacts = contact_list(tmp_path)
    smtp.hold = 6
    env = {**os.environ, "DENIABLE_SMTP_URL": smtp.url}
    command = [DENIABLE, "invite", "tax", "--contacts", contacts, "--base-url", BASE, "--from", SENDER, "--rate", "6000",
               "--db", db_path]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert smtp.holding.wait(120), process.communicate(timeout=5)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
        process.stdout.close()
    smtp.release.set()
    assert process.returncode == -signal.SIGKILL and len(smtp.messages) == 5
    smtp.hold = None
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "1 e-mails may or may not have gone" in second.stderr and "6 invitations sent" in second.stdout
    delivered = [recipient for recipient, _ in smtp.messages]
    assert len(delivered) == 11 and len(set(delivered)) == 11  # duplicates: 0
    third = subprocess.run([*command, "--resend-uncertain"], env=env, capture_output=True, text=True, timeout=120)
    assert third.returncode == 0 and "1 invitations sent" in third.stdout
    delivered = [recipient for recipient, _ in smtp.messages]
    assert sorted(delivered) == [f"person{i:02d}@example.net" for i in range(12)]  # each exactly once


def test_reminders_go_only_to_those_who_have_not_answered_opted_out_or_bounced(runner, client, db_path, store,
                                                                              questionnaire, smtp, tmp_path):
    assert invite(runner, db_path, "--contacts", contact_list(tmp_path)).exit_code == 0
    token = {f"person{i:02d}@example.net": token_of(smtp.to(f"person{i:02d}@example.net")[0]) for i in range(12)}
    for i in range(4):  # four answer with their links
        reports = questionnaire.randomize(ANSWERS)
        store.submit("tax", questionnaire.hash, f"answer-key-{i:04d}", reports, token[f"person{i:02d}@example.net"])
    for i in (4, 5):  # two follow the opt-out link: a page that asks, then its POST (or a one-click POST)
        page = client.get(f"/s/tax/opt-out?t={token[f'person{i:02d}@example.net']}")
        assert page.status_code == 200 and "Send me no more e-mails" in page.get_data(as_text=True)
        assert store.contact_summary("tax")["opted_out"] == i - 4  # following the link alone changes nothing
        done = client.post(f"/s/tax/opt-out?t={token[f'person{i:02d}@example.net']}",
                           data={"List-Unsubscribe": "One-Click"})
        assert done.status_code == 200 and "no more e-mails" in done.get_data(as_text=True)
    assert client.post("/s/tax/opt-out?t=not-a-token").status_code == 404
    bounced = runner.invoke(main, ["contacts", "bounced", "tax", "person06@example.net", "nobody@example.net",
                                   "--db", db_path])
    assert bounced.exit_code == 0 and "1 of 2 addresses recorded as bounced" in bounced.output
    before = len(smtp.messages)
    reminded = runner.invoke(main, ["remind", "tax", "--wait", "0", "--max", "1", "--base-url", BASE, "--from", SENDER,
                                    "--rate", "6000", "--db", db_path])
    assert reminded.exit_code == 0, reminded.output
    reminders = smtp.messages[before:]
    assert sorted(recipient for recipient, _ in reminders) == [f"person{i:02d}@example.net" for i in range(7, 12)]
    assert all(message["Subject"].startswith(("Reminder", "Recordatorio", "Rappel")) for _, message in reminders)
    assert all(token_of(message) == token[recipient] for recipient, message in reminders)  # the same link again
    again = runner.invoke(main, ["remind", "tax", "--wait", "0", "--max", "1", "--base-url", BASE, "--from", SENDER,
                                 "--rate", "6000", "--db", db_path])
    assert "0 reminders sent" in again.output and len(smtp.messages) == before + 5  # at most --max times
    waiting = runner.invoke(main, ["remind", "tax", "--max", "2", "--base-url", BASE, "--from", SENDER, "--db", db_path])
    assert "0 reminders sent" in waiting.output  # --wait 3 days by default: none is due today
    status = runner.invoke(main, ["contacts", "status", "tax", "--json", "--db", db_path])
    assert '"started": 4' in status.output and '"reminders_sent": 5' in status.output
    assert '"opted_out": 2' in status.output and '"bounced": 1' in status.output

    responses = store.response_count("tax")
    purged = runner.invoke(main, ["contacts", "purge", "tax", "--yes", "--db", db_path])
    assert purged.exit_code == 0 and "12 addresses erased" in purged.output
    assert store.contact_summary("tax")["contacts"] == 0 and store.response_count("tax") == responses
    assert "example.net" not in str(store.execute("SELECT * FROM contacts").fetchall())
    assert store.token_status("tax", token["person11@example.net"]) == "unused"  # a link sent still answers once
    # The red team's method: the files as a copy of the live server would hold them. Before, SQLite's log (and, without
    # secure_delete, the free space of the main file) held all 12 addresses; PostgreSQL's table their dead versions.
    for raw in _stored_bytes(store, db_path):
        assert b"example.net" not in raw
    assert ("log" in purged.output and "reset" in purged.output) if store.engine.dialect == "sqlite" else \
        "VACUUM FULL" in purged.output


def test_a_dry_run_says_what_a_run_would_send_shows_each_language_and_sends_and_changes_nothing(
        runner, db_path, store, questionnaire, smtp, tmp_path, monkeypatch):
    """The dry run counts what the run then sends, per language (no language: the survey's default), needs no SMTP
    server, writes nothing; its e-mails are the run's but for the example token, and --test-to sends them to the
    researcher."""
    first = tmp_path / "first.csv"
    first.write_text("email,language\nperson00@example.net,en\nperson01@example.net,es\n", encoding="utf-8")
    assert invite(runner, db_path, "--contacts", str(first)).exit_code == 0 and len(smtp.messages) == 2
    monkeypatch.delenv("DENIABLE_SMTP_URL")  # a dry run needs no SMTP server
    everyone = tmp_path / "everyone.csv"
    everyone.write_text("email,language\n" + "".join(f"person{i:02d}@example.net,{['en', 'es', 'fr', ''][i % 4]}\n"
                                                     for i in range(12)), encoding="utf-8")
    dry = invite(runner, db_path, "--contacts", str(everyone), "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "10 contacts would be added (2 already on the list)" in dry.output
    assert "a run now would send 10 invitations (en 5, es 2, fr 3); nothing was sent" in dry.output  # '' is en
    assert dry.output.count("--- the e-mail in ") == 3
    assert f"Subject: Invitation: {questionnaire.title_in('en')}" in dry.output
    assert f"Subject: Invitación: {questionnaire.title_in('es')}" in dry.output
    assert f"{BASE}/s/tax?t={PREVIEW_TOKEN}&lang=fr" in dry.output
    assert f"List-Unsubscribe: <{BASE}/s/tax/opt-out?t={PREVIEW_TOKEN}>" in dry.output
    assert len(smtp.messages) == 2 and store.contact_summary("tax")["contacts"] == 2
    assert store.token_counts("tax")["issued"] == 2  # no token issued for the list either

    monkeypatch.setenv("DENIABLE_SMTP_URL", smtp.url)
    tested = invite(runner, db_path, "--contacts", str(everyone), "--test-to", "me@example.org")
    assert tested.exit_code == 0 and "Test e-mail in fr sent to me@example.org." in tested.output, tested.output
    tests = smtp.to("me@example.org")
    assert sorted(message["Content-Language"] for message in tests) == ["en", "es", "fr"]
    assert all(message["Subject"].startswith("[test] Invit") and token_of(message) == PREVIEW_TOKEN for message in tests)
    assert len(smtp.messages) == 5 and store.contact_summary("tax")["contacts"] == 2  # to no contact; nothing kept
    refused = invite(runner, db_path, "--test-to", "not an address")
    assert refused.exit_code == 2 and "Invalid value for --test-to: 'not an address' is not an e-mail" in refused.output

    sent = invite(runner, db_path, "--contacts", str(everyone))
    assert "10 invitations sent" in sent.output and len(smtp.messages) == 15
    _, preview_body = dry.output.split("--- the e-mail in fr", 1)
    [message] = smtp.to("person02@example.net")
    sent_text = message.get_content().replace("\r\n", "\n").strip()  # as it travelled: CRLF line ends
    assert sent_text.replace(token_of(message), PREVIEW_TOKEN) in preview_body

    token = {f"person{i:02d}@example.net": token_of(smtp.to(f"person{i:02d}@example.net")[0]) for i in range(12)}
    for i in range(3):  # three answer
        store.submit("tax", questionnaire.hash, f"answer-key-{i:04d}", questionnaire.randomize(ANSWERS),
                     token[f"person{i:02d}@example.net"])
    monkeypatch.delenv("DENIABLE_SMTP_URL")
    reminders = ["remind", "tax", "--wait", "0", "--max", "1", "--base-url", BASE, "--from", SENDER, "--db", db_path]
    dry = runner.invoke(main, [*reminders, "--dry-run"])
    assert dry.exit_code == 0 and "a run now would send 9 reminders (en 5, es 2, fr 2)" in dry.output, dry.output
    assert "Subject: Rappel" in dry.output and "Subject: Recordatorio" in dry.output
    monkeypatch.setenv("DENIABLE_SMTP_URL", smtp.url)
    assert "9 reminders sent" in runner.invoke(main, [*reminders, "--rate", "6000"]).output
    monkeypatch.delenv("DENIABLE_SMTP_URL")
    dry = runner.invoke(main, [*reminders, "--dry-run"])
    assert "a run now would send 0 reminders; nothing was sent" in dry.output and "--- the e-mail" not in dry.output
    assert "Not reminded again: 9 contacts have had 1 reminders (--max)" in dry.output  # said why, not just "0"
    slow = runner.invoke(main, [*reminders[:3], "0", "--max", "2", *reminders[6:], "--dry-run", "--rate", "0.1"])
    assert "Sending 9 reminders at 0.1 a minute takes about 90 minutes" in slow.output, slow.output
    waiting = runner.invoke(main, [*reminders[:3], "3", "--max", "2", *reminders[6:], "--dry-run"])
    due_on = (datetime.date.fromisoformat(today()) + datetime.timedelta(days=3)).isoformat()
    assert (f"Not due yet: 12 invited contacts were written to less than 3 days ago (--wait); the first is due on "
            f"{due_on}") in waiting.output, waiting.output
    store.close_survey("tax")
    closed = runner.invoke(main, [*reminders, "--dry-run"])
    assert closed.exit_code != 0 and "survey 'tax' is closed: no invitation would be answered" in closed.output


def test_refusals_an_unreachable_server_and_a_timeout_mark_nothing_sent(runner, db_path, store, questionnaire, smtp,
                                                                       tmp_path, monkeypatch):
    smtp.refuse = {"person00@example.net": "550 no such user", "person01@example.net": "451 mailbox busy"}
    done = invite(runner, db_path, "--contacts", contact_list(tmp_path, count=3))
    assert done.exit_code == 0 and "1 invitations sent, 1 refused for now" in done.output and "1 bounced" in done.output
    summary = store.contact_summary("tax")
    assert (summary["invited"], summary["bounced"], summary["not_invited"], summary["uncertain"]) == (1, 1, 1, 0)
    smtp.refuse = {}
    assert "1 invitations sent" in invite(runner, db_path).output  # the passing refusal, tried again; not the bounce

    more = contact_list(tmp_path, count=5, name="more.csv")
    monkeypatch.setenv("DENIABLE_SMTP_URL", f"smtp+insecure://127.0.0.1:{free_port()}?timeout=2")  # nobody listens
    down = invite(runner, db_path, "--contacts", more)
    assert down.exit_code == 1 and "cannot reach the SMTP server" in down.output and "Traceback" not in down.output
    assert store.contact_summary("tax")["uncertain"] == 0 and store.contact_summary("tax")["invited"] == 2

    smtp.slow_data = 3  # the server takes the message but answers after the client's timeout
    monkeypatch.setenv("DENIABLE_SMTP_URL", smtp.url + "?timeout=1")
    slow = invite(runner, db_path)
    assert slow.exit_code == 1 and "may or may not have gone" in slow.output
    summary = store.contact_summary("tax")
    assert (summary["invited"], summary["uncertain"]) == (2, 1)  # not marked sent: uncertain, not sent twice


@pytest.mark.parametrize("rows, message", [
    ([["email"], ["ana@example.org"], ["not an address"]], "line 3: 'not an address' is not an e-mail address"),
    ([["email"], ["ana@example.org"], ["bo@example.org"], ["ANA@example.org"]], "line 4: ANA@example.org is also line 2 (each address once)"),
    ([["name", "phone"], ["Ana", "123"]], "needs one address column, named email"),
    ([["email", "language"], ["ana@example.org", "de"]], "line 2: 'de' is not a language of this survey"),
    ([["email", "name"], ["ana@example.org", "Ana"]], "name"),
    ([["email"], ['"Ana" <ana@example.org>']], "is not an e-mail address"),
    ([["email"]], "no rows under the header line"),
])
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry run"])
def test_a_bad_contact_list_is_refused_naming_the_line_and_nothing_is_sent(runner, db_path, store, questionnaire, smtp,
                                                                          tmp_path, rows, message, dry_run):
    path = tmp_path / "bad.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    refused = invite(runner, db_path, "--contacts", str(path), *dry_run)
    assert refused.exit_code != 0 and message in refused.output and "Traceback" not in refused.output
    assert smtp.messages == [] and store.contact_summary("tax")["contacts"] == 0


def test_the_smtp_url_and_the_sender_are_checked(runner, db_path, store, questionnaire, monkeypatch, tmp_path):
    for url, message in (("", "set DENIABLE_SMTP_URL"), ("http://mail.example.org", "smtp://, smtps://"),
                         ("smtp+insecure://mail.example.org", "only to a relay on this machine"),
                         ("smtp://mail.example.org?verify=no", "unknown parameter 'verify'")):
        monkeypatch.setenv("DENIABLE_SMTP_URL", url)
        refused = invite(runner, db_path, "--contacts", contact_list(tmp_path, count=1))
        assert refused.exit_code == 1 and message in refused.output
        assert store.contact_summary("tax")["contacts"] == 0  # said before the list is read: nothing kept
    monkeypatch.setenv("DENIABLE_SMTP_URL", "smtp+insecure://127.0.0.1:25")
    bad_sender = runner.invoke(main, ["invite", "tax", "--base-url", BASE, "--from", "research", "--db", db_path])
    assert bad_sender.exit_code == 2 and "is not an e-mail address" in bad_sender.output


@pytest.mark.parametrize("scheme", ["smtp", "smtps"])
def test_starttls_and_tls_with_credentials(runner, db_path, store, questionnaire, tmp_path, monkeypatch, scheme):
    """smtp:// upgrades with STARTTLS (the server offers AUTH only then), smtps:// speaks TLS from the first byte; the
    server's certificate is checked (a CA given by cafile; without it, refused), and so are the credentials."""
    import ssl

    import trustme
    from aiosmtpd.smtp import AuthResult

    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    cafile = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(cafile))

    def authenticate(server, session, envelope, mechanism, auth_data):
        return AuthResult(success=(auth_data.login, auth_data.password) == (b"survey", b"s3cret pass"), handled=False)

    handler, port = Recording(), free_port()
    tls = {"tls_context": server_context, "require_starttls": True} if scheme == "smtp" else \
        {"ssl_context": server_context}
    # aiosmtpd offers AUTH only on a connection it upgraded itself; one that is TLS from the first byte is TLS anyway
    controller = Controller(handler, hostname="127.0.0.1", port=port, authenticator=authenticate,
                            auth_require_tls=scheme == "smtp", **tls)
    controller.start()
    try:
        url = f"{scheme}://survey:s3cret%20pass@127.0.0.1:{port}"
        monkeypatch.setenv("DENIABLE_SMTP_URL", f"{scheme}://survey:wrong@127.0.0.1:{port}?cafile={cafile}")
        refused = invite(runner, db_path, "--contacts", contact_list(tmp_path, count=2))
        assert refused.exit_code == 1 and "refused the credentials" in refused.output
        monkeypatch.setenv("DENIABLE_SMTP_URL", f"{url}?cafile={cafile}")
        sent = invite(runner, db_path)
        assert sent.exit_code == 0 and "2 invitations sent" in sent.output and len(handler.messages) == 2
        monkeypatch.setenv("DENIABLE_SMTP_URL", url)  # no cafile: the self-made CA is not trusted
        untrusted = invite(runner, db_path, "--contacts", contact_list(tmp_path, count=3))
        assert untrusted.exit_code == 1 and "CERTIFICATE_VERIFY_FAILED" in untrusted.output
    finally:
        controller.stop()
    assert len(handler.messages) == 2
    assert store.contact_summary("tax")["invited"] == 2 and store.contact_summary("tax")["uncertain"] == 0


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_the_opt_out_page_asks_then_confirms_axe_clean(browser, live_server, store, questionnaire):  # noqa: F811
    from tests.server.test_questionnaire_pages import DESKTOP, PHONE, no_violations

    store.add_contacts("tax", [{"address": "ana@example.net", "language": "es"}])
    [(token,)] = store.execute("SELECT token FROM contacts").fetchall()
    for size, screen in ((PHONE, "phone"), (DESKTOP, "desktop")):
        context = browser.new_context(**size)
        page = context.new_page()
        page.goto(f"{live_server}/s/tax/opt-out?t={token}&lang=es")
        assert page.get_attribute("html", "lang") == "es" and page.is_visible("form button")
        no_violations(page, f"{screen}: opt-out asks")
        page.click("form button")
        page.wait_for_selector("h1")
        assert "no recibirá más correos" in page.text_content("main")
        no_violations(page, f"{screen}: opted out")
        context.close()
    assert store.contact_summary("tax")["opted_out"] == 1


@pytest.mark.parametrize("mark", ["\n", "\r\n", "\u2028", "\x85"], ids=["LF", "CRLF", "U+2028", "NEL"])
def test_a_title_with_a_line_break_is_refused_where_it_is_added_and_a_stored_one_sends_nothing(
        runner, db_path, store, smtp, tmp_path, monkeypatch, mark):
    """A title goes into every e-mail's subject: with a line break it is refused by `survey check` and wherever a
    survey is added. One stored before (by an older deniable) stops `deniable invite` with a message, not a
    traceback, and its contact is not left "may or may not have gone": nothing was sent to it."""
    spec = {**demo_survey().to_dict(), "title": f"Tax{mark}survey"}
    path = tmp_path / "titled.json"
    path.write_text(__import__("json").dumps(spec))
    checked = runner.invoke(main, ["survey", "check", str(path), "--no-plan"])
    assert checked.exit_code != 0 and "survey.title: one line, without a line break" in checked.output
    with pytest.raises(storage.StorageError, match="survey.title: one line"):
        store.add_survey(Survey.from_dict(spec))
    monkeypatch.setattr(Survey, "check_fieldable", lambda survey: None)  # as an older deniable stored it
    store.add_survey(Survey.from_dict(spec))
    monkeypatch.undo()
    dry = invite(runner, db_path, "--contacts", contact_list(tmp_path, count=2), "--dry-run")
    assert dry.exit_code != 0 and "cannot be written" in dry.output and "Traceback" not in dry.output, dry.output
    monkeypatch.setenv("DENIABLE_SMTP_URL", smtp.url)
    sent = invite(runner, db_path, "--contacts", contact_list(tmp_path, count=2))
    assert sent.exit_code != 0 and "cannot be written" in sent.output and "Traceback" not in sent.output, sent.output
    assert smtp.messages == [] and store.contact_summary("tax")["uncertain"] == 0
