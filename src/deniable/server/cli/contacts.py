"""`deniable invite`, `deniable remind` and `deniable contacts …`: e-mail invitations through SMTP (`server.mailer`),
the contact list kept apart from the responses (`storage.contacts`), erased after fieldwork."""

from __future__ import annotations

import json
import os
import re

import click

from deniable import storage

from ..mailer import PREVIEW_TOKEN, Mailer, MailError, SmtpSettings, example_message, preview, send_all
from .common import cli_actor, db_option, open_store
from .files import read_frame

#: The column of a contact list that holds the address, and the one that holds its language.
ADDRESS_COLUMNS = ("email", "address")
LANGUAGE_COLUMN = "language"
#: What a run of each kind sends, as its report names them.
SENT_AS = {"invite": "invitations", "remind": "reminders"}

base_url_option = click.option(
    "--base-url", envvar="DENIABLE_BASE_URL", required=True,
    help="Where respondents reach the server, e.g. https://survey.example.org (default: $DENIABLE_BASE_URL).")
sender_option = click.option("--from", "sender", envvar="DENIABLE_SMTP_FROM", required=True,
                             help="The sender's address (default: $DENIABLE_SMTP_FROM).")
rate_option = click.option("--rate", type=click.FloatRange(0.1, 6000), default=60, show_default=True,
                           help="At most this many e-mails a minute (your provider's limit).")
dry_run_option = click.option(
    "--dry-run", is_flag=True,
    help="Send nothing and change nothing (no SMTP server needed): say how many e-mails a run would send now, in "
         "which languages, and show the e-mail of each language.")
test_to_option = click.option(
    "--test-to", metavar="ADDRESS",
    help="A dry run that also e-mails ADDRESS (yours) each language's e-mail through $DENIABLE_SMTP_URL, its subject "
         "marked [test] and its link the example's: how it looks in a mail client, before anyone is written to.")
uncertain_option = click.option(
    "--resend-uncertain", is_flag=True,
    help="Send again the e-mails an interrupted run may or may not have sent (each is reported; by default none is "
         "sent twice).")


def _checked_base_url(base_url: str) -> str:
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", base_url):
        raise click.BadParameter(f"{base_url!r} is not an http(s) address such as https://survey.example.org",
                                 param_hint="--base-url")
    return base_url


def read_contacts(path: str) -> list[dict]:
    """A contact list CSV: an ``email`` (or ``address``) column, optionally ``language``, and the survey's frame
    columns (sample.frame); as {address, language, frame}, or a message naming the line."""
    rows = read_frame(path)
    columns = list(rows[0])
    named = [column for column in columns if column.strip().lower() in ADDRESS_COLUMNS]
    if len(named) != 1:
        raise click.ClickException(f"{path}: needs one address column, named email (or address); its columns are "
                                   f"{', '.join(map(repr, columns))}")
    contacts = []
    for row in rows:
        frame = {column: value for column, value in row.items() if column not in (named[0], LANGUAGE_COLUMN)}
        contacts.append({"address": row[named[0]], "language": (row.get(LANGUAGE_COLUMN) or "").strip() or None,
                         "frame": frame or None})
    return contacts


def _line_of(message: str) -> str:
    """A storage message about ``contacts[i]`` names the CSV line instead (the header is line 1)."""
    message = re.sub(r"contacts\[(\d+)\]\.\w+: ", lambda m: f"line {int(m.group(1)) + 2}: ", message)
    return re.sub(r"contacts\[(\d+)\]", lambda m: f"line {int(m.group(1)) + 2}", message)


def _checked_address(value: str, option: str) -> str:
    """An address given as an option (``--from``, ``--test-to``), or click's refusal naming the option."""
    try:
        storage.checked_address(value, option)
    except storage.StorageError as error:
        raise click.BadParameter(error.message.removeprefix(f"{option}: "), param_hint=option) from None
    return value


def _mailer(sender: str) -> Mailer:
    try:
        settings = SmtpSettings.from_url(os.environ.get("DENIABLE_SMTP_URL"))
    except MailError as error:
        raise click.ClickException(str(error)) from None
    return Mailer(settings, _checked_address(sender, "--from"))


def _mailer_unless(dry_run: bool, sender: str, test_to: str | None) -> Mailer | None:
    """The mailer of a run or a test, checked before the contact list is read (a server that cannot be named is said
    first); a dry run needs none, only a sender an e-mail could carry."""
    if test_to is not None:
        _checked_address(test_to, "--test-to")
    elif dry_run:
        _checked_address(sender, "--from")
        return None
    return _mailer(sender)


def _open_survey(store, survey_id: str):
    record = store.get_survey(survey_id)
    if record.state != "open":
        raise click.ClickException(f"survey {survey_id!r} is {record.state}: no invitation would be answered")
    return record


def _send(store, survey_id: str, kind: str, base_url: str, mailer: Mailer, rate: float, resend_uncertain: bool, **due):
    record = _open_survey(store, survey_id)
    if resend_uncertain:
        released = store.release_uncertain(survey_id, actor=cli_actor())
        click.echo(f"{released} uncertain e-mails released: sent again in this run.", err=True)
    else:
        held = store.contact_summary(survey_id)["uncertain"]
        if held:
            click.echo(f"WARNING: {held} e-mails may or may not have gone (a run stopped between handing them to the "
                       "SMTP server and recording it); they are not sent twice. Check with the server's log, then "
                       "send them again with --resend-uncertain if they did not go.", err=True)
    _say_how_long(sum(store.due_contacts(survey_id, kind, **due).values()), kind, rate)
    try:
        run = send_all(store, record.survey, kind, mailer, base_url, rate, **due)
    except MailError as error:
        raise click.ClickException(f"{error}; nothing more was sent (the e-mails sent before are recorded)") from None
    what = SENT_AS[kind]
    click.echo(f"{run.sent} {what} sent, {run.refused} refused for now (tried again next run), {run.bounced} bounced "
               f"(written to no more), {run.uncertain} uncertain.")
    if run.stopped:
        raise click.ClickException(f"stopped: {run.stopped}; that e-mail may or may not have gone and is not sent "
                                   "again unless --resend-uncertain; run again to send the rest")


def _dry_run(store, survey_id: str, kind: str, base_url: str, sender: str, added: dict | None = None,
             test_to: str | None = None, mailer: Mailer | None = None, rate: float | None = None, **due):
    """What a run would send now (the contacts due, and those a list would add), per language, and each language's
    e-mail; nothing is sent to a contact, claimed or written. ``test_to``: each of those e-mails (the default
    language's when nobody is due) goes there too, through ``mailer``."""
    record = _open_survey(store, survey_id)
    survey = record.survey
    languages = store.due_contacts(survey_id, kind, **due)
    for language, count in (added or {}).items():
        languages[language] = languages.get(language, 0) + count
    by_language: dict = {}  # a contact without a language gets the survey's default, as its e-mail does
    for language, count in languages.items():
        shown = language or survey.default_language
        by_language[shown] = by_language.get(shown, 0) + count
    order = sorted(by_language, key=lambda language: str(language or ""))
    what = SENT_AS[kind]
    total = sum(by_language.values())
    split = ", ".join(f"{language or 'the default language'} {by_language[language]}" for language in order)
    click.echo(f"Dry run: a run now would send {total} {what}" + (f" ({split})" if total else "")
               + "; nothing was sent and nothing changed.")
    if rate is not None:
        _say_how_long(total, kind, rate)
    if kind == "remind":
        _say_who_waits(store.waiting_for_reminders(survey_id, due["max_reminders"], due["wait_days"]), due)
    held = store.contact_summary(survey_id)["uncertain"]
    if held:
        click.echo(f"{held} e-mails of an interrupted run may or may not have gone: not counted (a run sends them "
                   "again only with --resend-uncertain).")
    for language in order:
        click.echo(f"\n--- the e-mail in {language or 'the default language'} ({by_language[language]}; each contact's "
                   f"own link where this shows {PREVIEW_TOKEN}) ---")
        try:
            shown = preview(survey, kind, language, sender, base_url)
        except (ValueError, TypeError) as error:  # a header that cannot be written (a title stored with a line break)
            raise click.ClickException(f"the e-mail in {language or 'the default language'} cannot be written "
                                       f"({error}): a run would send nothing") from None
        click.echo(shown)
    if test_to is not None:
        _send_tests(survey, kind, order or [survey.default_language], sender, base_url, test_to, mailer)


def _say_how_long(count: int, kind: str, rate: float):
    """Minutes at the provider's pace, said before a run starts rather than discovered (3,000 at 60 a minute: 50)."""
    if count > rate:
        click.echo(f"Sending {count} {SENT_AS[kind]} at {rate:g} a minute takes about {count / rate:.0f} minutes "
                   "(--rate: your provider's limit); a run stopped midway goes on where it stopped when run again.",
                   err=True)


def _say_who_waits(waiting: dict, due: dict):
    """Why contacts a reminder run leaves alone are left: a dry run right after inviting said "0 reminders" alone."""
    if waiting["waiting"]:
        click.echo(f"Not due yet: {waiting['waiting']} invited contacts were written to less than {due['wait_days']} "
                   f"days ago (--wait); the first is due on {waiting['first_due']} if it has not started by then.")
    if waiting["reminded_enough"]:
        click.echo(f"Not reminded again: {waiting['reminded_enough']} contacts have had {due['max_reminders']} "
                   "reminders (--max).")


def _send_tests(survey, kind: str, languages: list, sender: str, base_url: str, test_to: str, mailer: Mailer):
    """Each language's example e-mail to the researcher's ``test_to``, its subject marked [test]; nothing recorded."""
    try:
        for language in languages:
            message = example_message(survey, kind, language, sender, base_url, recipient=test_to)
            message.replace_header("Subject", f"[test] {message['Subject']}")
            outcome, said = mailer.send(message, test_to)
            named = language or "the default language"
            if outcome != "sent":
                raise click.ClickException(f"the test e-mail in {named} to {test_to}: {outcome}"
                                           + (f" ({said})" if said else ""))
            click.echo(f"Test e-mail in {named} sent to {test_to}.")
    except MailError as error:
        raise click.ClickException(str(error)) from None
    finally:
        mailer.close()


@click.command()
@click.argument("survey_id")
@click.option("--contacts", "contacts_file", type=click.Path(dir_okay=False),
              help="A CSV of contacts: an email column, optionally language and the survey's sample.frame columns. "
                   "Run again with the same list to go on: an address already on the list is not added twice.")
@base_url_option
@sender_option
@rate_option
@uncertain_option
@dry_run_option
@test_to_option
@db_option
def invite(survey_id, contacts_file, base_url, sender, rate, resend_uncertain, dry_run, test_to, db):
    """E-mail each contact its own single-use link (through $DENIABLE_SMTP_URL), once. Resumable: a run stopped
    by a crash sends nobody twice when run again."""
    base_url = _checked_base_url(base_url)
    dry_run = dry_run or test_to is not None
    mailer = _mailer_unless(dry_run, sender, test_to)
    contacts = None if contacts_file is None else read_contacts(contacts_file)
    with open_store(db, read_only=dry_run) as store:
        if contacts is not None:
            try:
                added = store.check_contacts(survey_id, contacts) if dry_run else \
                    store.add_contacts(survey_id, contacts, actor=cli_actor())
            except storage.Invalid as error:
                raise click.ClickException(f"{contacts_file}: {_line_of(error.message)}") from None
            click.echo(f"{added['added']} contacts {'would be ' if dry_run else ''}added ({added['known']} already on "
                       "the list).", err=True)
        if dry_run:
            _dry_run(store, survey_id, "invite", base_url, sender,
                     added=None if contacts is None else added["languages"], test_to=test_to, mailer=mailer,
                     rate=rate)
        else:
            _send(store, survey_id, "invite", base_url, mailer, rate, resend_uncertain)


@click.command()
@click.argument("survey_id")
@click.option("--max", "max_reminders", type=click.IntRange(1, 10), default=2, show_default=True,
              help="Remind each contact at most this many times in all.")
@click.option("--wait", "wait_days", type=click.IntRange(0, 365), default=3, show_default=True,
              help="Days since the last e-mail to a contact before it is reminded.")
@base_url_option
@sender_option
@rate_option
@uncertain_option
@dry_run_option
@test_to_option
@db_option
def remind(survey_id, max_reminders, wait_days, base_url, sender, rate, resend_uncertain, dry_run, test_to, db):
    """Remind the invited contacts who have not started (not opened the survey, nor answered; nor opted out, nor
    bounced), at most --max times. Who has answered is known to nobody: a response carries a credential, not the
    invitation."""
    base_url = _checked_base_url(base_url)
    dry_run = dry_run or test_to is not None
    mailer = _mailer_unless(dry_run, sender, test_to)
    with open_store(db, read_only=dry_run) as store:
        if dry_run:
            _dry_run(store, survey_id, "remind", base_url, sender, test_to=test_to, mailer=mailer, rate=rate,
                     max_reminders=max_reminders, wait_days=wait_days)
        else:
            _send(store, survey_id, "remind", base_url, mailer, rate, resend_uncertain, max_reminders=max_reminders,
                  wait_days=wait_days)


@click.group()
def contacts():
    """The contact list of e-mail invitations: its status, bounces, erasing it after fieldwork."""


@contacts.command("status")
@click.argument("survey_id")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@db_option
def contacts_status(survey_id, as_json, db):
    """How many contacts, invited, reminded, started (opened or answered), bounced, opted out, uncertain."""
    with open_store(db, read_only=True) as store:
        summary = store.contact_summary(survey_id)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    for key, value in summary.items():
        click.echo(f"{key.replace('_', ' '):<15} {value}")


@contacts.command("bounced")
@click.argument("survey_id")
@click.argument("addresses", nargs=-1, required=True)
@db_option
def contacts_bounced(survey_id, addresses, db):
    """Record addresses whose e-mail bounced after the SMTP server took it (from a delivery report)."""
    with open_store(db) as store:
        count = store.mark_bounced(survey_id, list(addresses), actor=cli_actor())
    click.echo(f"{count} of {len(addresses)} addresses recorded as bounced (the others are not on the list, or were).")


@contacts.command("purge")
@click.argument("survey_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@db_option
def contacts_purge(survey_id, yes, db):
    """Erase the survey's contact list after fieldwork: the addresses and the tokens kept to write to them. Responses
    stay as they are, and a link already sent still answers once."""
    if not yes:
        click.confirm(f"Erase every address of survey {survey_id!r}? No reminder can be sent after", abort=True)
    with open_store(db) as store:
        count, files = store.purge_contacts(survey_id, actor=cli_actor())
    click.echo(f"{count} addresses erased ({files}); responses untouched.")
