"""The ``deniable`` command: a thin layer over the library. Every domain error (a `DeniableError`)
becomes a one-line message and exit status 1, in one place (`Commands`)."""

from __future__ import annotations

import getpass
import json
import re
import sys
from pathlib import Path

import click

from deniable import storage
from deniable.client import Survey
from deniable.client.errors import DeniableError


def _database(_ctx, _param, value):
    return storage.resolve_database(value)


# Every command names its database the same way: storage.resolve_database decides.
db_option = click.option("--db", "db_path", default=None, callback=_database, type=click.Path(dir_okay=False),
                         help="A SQLite file or a database URL (sqlite:///file.db, postgresql://user@host/db); "
                              "default: $DENIABLE_DATABASE_URL, else $DENIABLE_DB, else deniable.db.")


class Commands(click.Group):
    """The command group that turns every `DeniableError` into a one-line message and exit status 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except DeniableError as error:
            raise click.ClickException(error.message) from None


def _load(path: str) -> Survey:
    try:
        return Survey.from_file(path)
    except DeniableError as error:
        message = str(error)  # an XLSForm's messages name the file already
        raise click.ClickException(message if message.startswith(f"{path}:") else f"{path}: {message}") from None


def _store(db_path: str, read_only: bool = False, must_exist: bool = True) -> storage.Store:
    """The database of a command. Commands that only read open it read-only; every command but
    those that set a deployment up (init-db, survey add, serve, demo, admin add) needs it to exist,
    so a mistyped --db never leaves an empty database behind."""
    import os

    if must_exist and not storage.is_postgres(db_path) and not os.path.isfile(storage.sqlite_path(db_path)):
        raise click.ClickException(f"{db_path}: no such database file (create one with `deniable init-db --db {db_path}` "
                                   "or `deniable survey add`)")
    try:
        return storage.Store(db_path, read_only=read_only)
    except DeniableError as error:
        where = storage.describe(db_path)
        raise click.ClickException(error.message if error.message.startswith(where) else f"{where}: {error.message}") from None
    except Exception as error:  # sqlite3.DatabaseError, psycopg's OperationalError: not a database, unreachable…
        raise click.ClickException(f"{storage.describe(db_path)}: cannot open the database ({error})") from None


@click.group(cls=Commands)
@click.version_option(package_name="deniable")
def main():
    """deniable: surveys with plausible deniability (randomized response on the respondent's device)."""


# --- surveys ------------------------------------------------------------------------------------

@main.group()
def survey():
    """Check, add, list, show and close surveys."""


@survey.command("check")
@click.argument("spec_file", type=click.Path(dir_okay=False))
@click.option("--prior", type=click.FloatRange(0, 1), default=0.02, show_default=True,
              help="Prior belief used to illustrate each question's worst-case posterior.")
@click.option("--json", "as_json", is_flag=True, help="Print the canonical spec, hash, ε and planning figures as JSON.")
@click.option("--n", "planned", type=click.IntRange(1, 10**9), default=1000, show_default=True,
              help="Planned number of respondents, for the precision each question will give.")
@click.option("--plan/--no-plan", "planning", default=True, show_default=True,
              help="Print the precision at --n (loads numpy, about 0.2 s; --no-plan only validates).")
@click.option("--asked", "asked", multiple=True, metavar="QUESTION=SHARE",
              help="The share of respondents skip logic will ask QUESTION (e.g. took_cash=0.4; repeatable). "
                   "Default: worked out from the skip logic with every public answer equally likely.")
@click.option("--compare", is_flag=True,
              help="Also print the yes/no designs side by side at --n: this survey's and the usual alternatives.")
@click.option("--plan-seconds", "plan_seconds", type=click.FloatRange(0, 3600, min_open=True), default=None,
              help="How long planning may compute (CPU seconds) before the remaining questions are listed as not planned "
                   "[default: 1; a wide number grid's plan can take minutes].")
def check(spec_file, prior, as_json, planned, planning, asked, compare, plan_seconds):
    """Validate SPEC_FILE (YAML or JSON) and print its privacy summary (ε per question and in total)
    and what each question will give at the planned sample size."""
    parsed = _load(spec_file)
    try:
        parsed.check_fieldable()
    except DeniableError as error:
        raise click.ClickException(f"{spec_file}: {error}") from None
    plans = _plans(parsed, planned, _asked_shares(asked), plan_seconds) if planning else None
    if as_json:
        figures = {p.question_id: p for p in plans or []}

        def figures_of(qid):
            p = figures.get(qid)
            return None if p is None else {"n": p.n, "asked_share": p.asked_share, "asked_n": p.asked_n,
                                           "asked_from": p.asked_from,
                                           "se": p.se, "margin": p.margin, "n_for_margin": p.n_for_margin,
                                           "target": p.target, "mean_se": p.mean_se, "flags": p.flags,
                                           "n_to_detect_cheaters": p.n_to_detect_cheaters, "split_ballot": p.split_ballot}

        payload = {
            "hash": parsed.hash,
            "epsilon": parsed.epsilon,
            "max_epsilon": None if parsed.max_epsilon is None else float(parsed.max_epsilon),
            "questions": {q.id: {"design": q.mechanism.design, "epsilon": None if not q.is_private else q.epsilon,
                                 **({"epsilon_all_waves": q.epsilon_all_waves}
                                    if parsed.repeated is not None and q.is_private else {}),
                                 "planning": figures_of(q.id)}
                          for q in parsed.questions.values()},
            **({"epsilon_per_wave": parsed.epsilon_per_wave} if parsed.repeated is not None else {}),
            "warnings": parsed.warnings,
            "unplanned": getattr(plans, "unplanned", []),
            "spec": parsed.to_dict(),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=_json_float))
    else:
        click.echo(parsed.privacy_summary(prior))
        for warning in parsed.warnings:
            click.echo(f"WARNING: {warning}")
        if planning:
            _echo_plans(plans)
        if compare:
            _echo_comparison(parsed, planned)


@survey.command("words")
@click.argument("language", default="en")
def words(language):
    """Print the respondent pages' words in LANGUAGE (default: en) as a page_words block to paste into a spec and
    translate or adjust; a word LANGUAGE has no shipped text for is given in English and marked."""
    from deniable.client import catalogue
    from deniable.client.questions import _LANGUAGE

    if not _LANGUAGE.fullmatch(language):
        raise click.BadParameter(f"{language!r} is not a language code such as fr or pt-BR", param_hint="LANGUAGE")
    table, english = catalogue.messages(language), set(catalogue.fallbacks(language))
    shipped = catalogue.shipped_for(language)
    click.echo(f"# Page words for {language!r}: " + (f"shipped with deniable ({shipped}.json); override any of them"
                                                     if shipped else "none ship with deniable; every word below is "
                                                     "English, to translate (the privacy statements at least)"))
    click.echo(f"page_words:\n  {language}:")
    for key, text in table.items():
        click.echo(f"    {key}: {json.dumps(text, ensure_ascii=False)}" + ("  # English" if key in english else ""))


def _asked_shares(pairs) -> dict:
    """--asked QUESTION=SHARE pairs as {question: share}; a malformed pair is a usage error."""
    shares = {}
    for pair in pairs:
        qid, equals, text = pair.partition("=")
        try:
            share = float(text)
        except ValueError:
            share = None
        if not equals or not qid or share is None:
            raise click.BadParameter(f"{pair!r}: expected QUESTION=SHARE, a share between 0 and 1 (e.g. took_cash=0.4)",
                                     param_hint="--asked")
        shares[qid] = share
    return shares


def _plans(survey: Survey, planned: int, asked: dict | None = None, seconds: float | None = None):
    """Planning figures per private question, within ``seconds`` (default `PLANNING_SECONDS`; None without the
    analysis extra, which has numpy)."""
    try:
        from deniable.analysis.errors import AnalysisError
        from deniable.analysis.planning import PLANNING_SECONDS, plan
    except ImportError:
        return None
    try:
        return plan(survey, planned, time_limit=seconds or PLANNING_SECONDS, asked=asked)
    except AnalysisError as error:
        raise click.BadParameter(str(error), param_hint="--asked") from None


def _echo_comparison(survey: Survey, planned: int):
    try:
        from deniable.analysis.planning import compare_yes_no_designs
    except ImportError:
        click.echo("\n(Comparing designs needs the analysis extra: pip install 'deniable[analysis]')")
        return
    own = [q for q in survey.private_questions if q.type == "yes_no"]
    table = compare_yes_no_designs(planned, own)
    click.echo(f"\nYes/no designs side by side at n = {planned:,} (uniform true answers assumed):")
    click.echo(table.to_string(float_format=lambda x: f"{x:.4g}"))
    click.echo(f"Note: {table.attrs['note']}")


def _echo_plans(plans):
    if plans is None:
        click.echo("\n(Precision at a planned sample size needs the analysis extra: pip install 'deniable[analysis]')")
        return
    from deniable.analysis.planning import describe_plan

    click.echo("\n" + describe_plan(plans))


def _json_float(value):
    return float(value)


@survey.command("import")
@click.argument("form", type=click.Path(dir_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the spec here (.yaml or .json); default: YAML on standard output.")
def survey_import(form, output):
    """Read an XLSForm (.xlsx) and write the deniable spec it describes; every problem of the form is listed at once."""
    from deniable.client.xlsform import read_xlsform

    spec = read_xlsform(form)
    parsed = Survey(spec)
    _write_spec(parsed.to_dict(), output)
    for warning in parsed.warnings:
        click.echo(f"WARNING: {warning}", err=True)
    click.echo(f"Imported {len(parsed.questions)} question(s) of {parsed.id!r} (hash {parsed.hash[:12]}), "
               f"total ε {parsed.epsilon:.4f}" + (f"; wrote {output}" if output else ""), err=True)


def _write_spec(spec: dict, output: str | None, as_json: bool = False):
    if as_json or (output and output.lower().endswith(".json")):
        text = json.dumps(spec, indent=2, ensure_ascii=False) + "\n"
    else:
        import io

        from ruamel.yaml import YAML

        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        yaml.allow_unicode = True
        yaml.sort_base_mapping_type_on_output = False
        buffer = io.StringIO()
        yaml.dump(spec, buffer)
        text = buffer.getvalue()
    if output is None:
        click.echo(text, nl=False)
        return
    _atomic_write(Path(output), lambda path: path.write_text(text, encoding="utf-8"))


def _atomic_write(target: Path, write):
    """Write a new file beside the target and rename it over the target: a failed write leaves no partial
    file. The new file is created exclusively under a name nobody can predict (a link planted at
    ``<output>.partial`` is never followed), and the target must be a regular file or not exist yet."""
    import os
    import tempfile

    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise click.ClickException(f"{target}: not a regular file (a link, a folder or a device); choose another output")
    try:
        handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as error:
        raise click.ClickException(f"{target}: cannot write ({error.strerror})") from None
    os.close(handle)
    partial = Path(name)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(partial, 0o666 & ~umask)  # as an ordinary new file would be, not mkstemp's 0600
        write(partial)
        partial.replace(target)
    except BaseException as error:
        partial.unlink(missing_ok=True)
        if not isinstance(error, OSError):
            raise
        raise click.ClickException(f"{target}: cannot write ({error.strerror})") from None


@survey.command("export")
@click.argument("survey_id")
@db_option
@click.option("--format", "fmt", type=click.Choice(["yaml", "json", "xlsform"]), default="yaml", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write here (required for xlsform); default: standard output.")
def survey_export(survey_id, db_path, fmt, output):
    """Write a stored survey's current version as a spec or an XLSForm that reads back to the same hash."""
    with _store(db_path, read_only=True) as store:
        record = store.get_survey(survey_id)
    if fmt == "xlsform":
        if not output:
            raise click.ClickException("--output FILE.xlsx is required for --format xlsform")
        from deniable.client.xlsform import write_xlsform

        _atomic_write(Path(output), lambda path: write_xlsform(record.survey, path))
        click.echo(f"Wrote {output} (survey {record.id!r}, hash {record.hash[:12]}).", err=True)
    else:
        _write_spec(record.survey.to_dict(), output, as_json=fmt == "json")


@survey.command("add")
@click.argument("spec_file", type=click.Path(dir_okay=False))
@db_option
@click.option("--access", type=click.Choice(["open", "token"]), default=None,
              help="open: anyone with the link answers; token: one answer per invitation token. New surveys default to open.")
@click.option("--confirm-lower-privacy", is_flag=True,
              help="Publish a version that lowers a question's privacy (asked directly, or a larger ε).")
def survey_add(spec_file, db_path, access, confirm_lower_privacy):
    """Add the survey in SPEC_FILE; a changed spec under an existing id becomes a new version."""
    parsed = _load(spec_file)
    with _store(db_path, must_exist=False) as store:
        previous = store.versions(parsed.id) if parsed.id in {r.id for r in store.list_surveys()} else []
        record, outcome = store.add_survey(parsed, access, actor=cli_actor(),
                                           confirm_lower_privacy=confirm_lower_privacy)
    if outcome == "created":
        click.echo(f"Added survey {record.id!r} (version 1, hash {record.hash[:12]}), access: {record.access}.")
    elif outcome == "unchanged":
        click.echo(f"Survey {record.id!r} is unchanged (version {record.version}, hash {record.hash[:12]}).")
    else:
        answered = sum(v["responses"] for v in previous)
        click.echo(f"Survey {record.id!r}: the spec changed, so this is a NEW VERSION {record.version} "
                   f"(hash {record.hash[:12]}). {answered} earlier response(s) stay with the version they answered.")
    click.echo(f"Total ε per respondent: {record.survey.epsilon:.4f}")


@survey.command("list")
@db_option
def survey_list(db_path):
    """List surveys with version, responses and total ε."""
    with _store(db_path, read_only=True) as store:
        records = store.list_surveys()
        if not records:
            click.echo("No surveys. Add one with: deniable survey add FILE")
            return
        click.echo(f"{'id':<20} {'version':>7} {'responses':>9} {'(in it)':>8} {'total ε':>8}  access  status  title")
        for r in records:
            click.echo(f"{r.id:<20} {r.version:>7} {store.response_count(r.id):>9} {r.responses:>8} {r.survey.epsilon:>8.3f}  "
                       f"{r.access:<6}  {'closed' if r.closed else 'open':<6}  {r.survey.title}")
        click.echo("responses: all versions; (in it): the current version's. Estimate older versions with "
                   "`deniable estimate ID --version N`, or pool them with --all-versions.")


@survey.command("show")
@click.argument("survey_id")
@db_option
@click.option("--prior", type=click.FloatRange(0, 1), default=0.02, show_default=True)
@click.option("--n", "planned", type=click.IntRange(1, 10**9), default=1000, show_default=True,
              help="Planned number of respondents, for the precision each question will give.")
def survey_show(survey_id, db_path, prior, planned):
    """The privacy summary of a stored survey: ε per question and in total, planning figures,
    versions, responses."""
    with _store(db_path, read_only=True) as store:
        record = store.get_survey(survey_id)
        click.echo(record.survey.privacy_summary(prior))
        for warning in record.survey.warnings:
            click.echo(f"WARNING: {warning}")
        _echo_plans(_plans(record.survey, planned))
        click.echo()
        if record.access == "open":
            click.echo("NOTE: open survey (no invitation tokens): someone who answers more than once spends "
                       "the per-person budget again each time.")
        tokens = store.token_counts(survey_id)
        click.echo(f"\nAccess: {record.access}; tokens issued {tokens['issued']}, used {tokens['used']}. "
                   f"Status: {'closed on ' + record.closed_on if record.closed else 'open'}.")
        frame = store.frame_summary(survey_id)
        if frame["cells"]:
            click.echo(f"Frame: {frame['invitations']} invitations in {frame['cells']} distinct rows (the fewest share "
                       f"one: {frame['fewest_invitations']}); answered rows {frame['answered_cells']}, the fewest "
                       f"answers in one {frame['fewest_answers']}"
                       + (f"; {frame['cells_with_one_answer']} rows have a single answer, which their frame row and "
                          "the tokens' use narrow to one invitation" if frame["cells_with_one_answer"] else "") + ".")
        for v in store.versions(survey_id):
            marker = " (current)" if v["hash"] == record.hash else ""
            click.echo(f"  version {v['version']} {v['hash'][:12]} added {v['added_on']}: {v['responses']} responses{marker}")
        if record.survey.repeated is not None:
            _echo_waves(survey_id, store.waves(survey_id))


def _echo_waves(survey_id: str, waves: list[dict]):
    if not waves:
        click.echo(f"Waves: none yet; responses are accepted once one is open (deniable survey wave {survey_id} --open LABEL).")
        return
    click.echo("Waves:")
    for wave in waves:
        status = f"closed {wave['closed_on']}" if wave["closed_on"] else "OPEN"
        click.echo(f"  {wave['label']:<20} opened {wave['opened_on']}  {status:<17} {wave['responses']} responses")


@survey.command("close")
@click.argument("survey_id")
@db_option
def survey_close(survey_id, db_path):
    """Stop accepting responses."""
    with _store(db_path) as store:
        record = store.close_survey(survey_id, actor=cli_actor())
    click.echo(f"Survey {survey_id!r} is closed (since {record.closed_on}).")


@survey.command("wave")
@click.argument("survey_id")
@db_option
@click.option("--open", "label", default=None, metavar="LABEL",
              help="Open a new wave with this label (e.g. 2026-12), closing the open one.")
@click.option("--close", "close", is_flag=True, help="Close the open wave (responses wait for the next).")
def survey_wave(survey_id, db_path, label, close):
    """The waves of a repeated survey: list them, open the next one, or close the open one. Each response
    records the wave open when it arrived; nothing links one person's waves."""
    if label is not None and close:
        raise click.UsageError("give --open LABEL or --close, not both")
    with _store(db_path, read_only=label is None and not close) as store:
        if label is not None:
            wave = store.open_wave(survey_id, label, actor=cli_actor())
            click.echo(f"Wave {wave['label']!r} of survey {survey_id!r} is open (since {wave['opened_on']}).")
        elif close:
            wave = store.close_wave(survey_id, actor=cli_actor())
            click.echo(f"Wave {wave['label']!r} of survey {survey_id!r} is closed ({wave['responses']} responses).")
        else:
            store.require_repeated(survey_id)
            _echo_waves(survey_id, store.waves(survey_id))


@survey.command("reopen")
@click.argument("survey_id")
@db_option
def survey_reopen(survey_id, db_path):
    """Accept responses again (closed by mistake, or a second wave)."""
    with _store(db_path) as store:
        store.reopen_survey(survey_id, actor=cli_actor())
    click.echo(f"Survey {survey_id!r} accepts responses again.")


# --- tokens and export --------------------------------------------------------------------------

def _read_frame(path: str) -> list[dict]:
    """The rows of a frame CSV file (UTF-8, a header line), as {column: text}."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise click.ClickException(f"{path}: no such file") from None
    except (UnicodeDecodeError, OSError) as error:
        raise click.ClickException(f"{path}: not a readable UTF-8 file ({error})") from None
    try:
        return storage.frame_rows_from_csv(text)
    except storage.StorageError as error:
        raise click.ClickException(f"{path}: {error.message}") from None


@main.command()
@click.argument("survey_id")
@click.option("--count", type=click.IntRange(1, 100_000), help="How many tokens (without --frame).")
@click.option("--frame", "frame_file", type=click.Path(dir_okay=False),
              help="A CSV of the sample: one row per invitation, the columns the spec declares in sample.frame "
                   "(stratum, PSU, weight, …) and optionally `token`. Each response carries its invitation's row.")
@click.option("--min-cell", type=click.IntRange(2), default=None,
              help="The fewest invitations a distinct frame row may share (default 5).")
@db_option
@click.option("--base-url", envvar="DENIABLE_BASE_URL",
              help="Where respondents reach the server, e.g. https://survey.example.org (default: $DENIABLE_BASE_URL). "
                   "Without it the tokens are printed alone: a guessed address would send invitations nowhere.")
def tokens(survey_id, count, frame_file, min_cell, db_path, base_url):
    """Create single-use respondent tokens and print them as invitation links (the survey then needs one); with
    --frame, one per row of the sample, printed in the frame's row order."""
    if base_url is not None and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", base_url):
        raise click.BadParameter(f"{base_url!r} is not an http(s) address such as https://survey.example.org",
                                 param_hint="--base-url")
    if (count is None) == (frame_file is None):
        raise click.UsageError("give --count N, or --frame sample.csv (one token per row)")
    if min_cell is not None and frame_file is None:
        raise click.UsageError("--min-cell goes with --frame")
    frame = None if frame_file is None else _read_frame(frame_file)
    with _store(db_path) as store:
        was_open = store.get_survey(survey_id).access == "open"
        issued = store.issue_tokens(survey_id, count, actor=cli_actor(), frame=frame,
                                    **({} if min_cell is None else {"min_cell": min_cell}))
    if was_open:
        click.echo(f"Survey {survey_id!r} now accepts only responses with a token.", err=True)
    if frame is not None:
        click.echo(f"{len(issued)} invitations with their frame rows, in {frame_file}'s row order (line k below is "
                   "its row k): send each to the unit of that row.", err=True)
    if base_url is None:
        click.echo(f"No --base-url (or $DENIABLE_BASE_URL): the tokens alone follow; each invitation link is "
                   f"<your server>/s/{survey_id}?t=<token>.", err=True)
    for token in issued:
        click.echo(token if base_url is None else f"{base_url.rstrip('/')}/s/{survey_id}?t={token}")


@main.command()
@click.argument("survey_id")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl", "sav", "dta", "codebook"]), default="csv",
              show_default=True, help="csv, jsonl, SPSS (sav) or Stata (dta) with labels, or the codebook alone.")
@click.option("--output", type=click.Path(dir_okay=False, writable=True),
              help="Write here (and the codebook beside it, NAME.codebook.md) instead of standard output.")
@click.option("--spec-hash", help="Export this version: its hash or a unique prefix (default: the current one).")
@click.option("--version", "version", type=click.IntRange(1), help="Export this version, by number.")
@click.option("--all-versions", is_flag=True,
              help="Export every version in one file: a version column, columns of every version, a codebook per version.")
@db_option
def export(survey_id, fmt, output, spec_hash, version, all_versions, db_path):
    """Export the stored reports of a survey version (or of all of them). Private columns hold randomized
    reports: analyse them with `deniable estimate`, not by tabulating them."""
    from .exports import EXPORT_FORMATS, ExportUnavailable, PooledRecord, describe, export_rows

    export = EXPORT_FORMATS[fmt]
    if export.binary and not output:
        raise click.UsageError(f"--format {fmt} writes a binary file: give --output FILE.{fmt}")
    if all_versions and (spec_hash or version):
        raise click.UsageError("--all-versions exports every version: leave out --spec-hash and --version")
    with _store(db_path, read_only=True) as store:
        record = PooledRecord.of(store, survey_id) if all_versions else store.find_version(survey_id, spec_hash, version)
        chunks = export.write(record, export_rows(store, record))
        try:
            if not output:
                for chunk in chunks:
                    click.echo(chunk, nl=False)
                _audit_export(db_path, record, fmt)
                return
            target = Path(output)
            _atomic_write(target, lambda path: _write_chunks(path, chunks, export.binary))
            if fmt != "codebook":
                beside = target.with_name(target.stem + ".codebook.md")
                _atomic_write(beside, lambda path: _write_chunks(path, EXPORT_FORMATS["codebook"].write(record), False))
        except ExportUnavailable as error:
            raise click.ClickException(str(error)) from None
        described = "the codebook" if fmt == "codebook" else f"{record.responses} responses of {describe(record)}"
    _audit_export(db_path, record, fmt)
    click.echo(f"Wrote {described} to {output}" + ("" if fmt == "codebook" else f" (codebook: {beside})"), err=True)


def _audit_export(db_path, record, fmt: str):
    """The export's line in the audit log, as the dashboard and the API write theirs. The export itself only
    reads; a database that cannot take the line (read-only, a replica) is said, not fatal."""
    from .exports import describe

    try:
        with _store(db_path) as store:
            store.audit(cli_actor(), "responses exported", record.id, f"{describe(record)}, {fmt}")
    except storage.StorageError as error:
        click.echo(f"NOTE: the export was not written to the audit log ({error.message})", err=True)


def cli_actor() -> str:
    """Who the audit log names for a command: the command line and the operating-system user."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in this environment
        return "cli"


def _write_chunks(path: Path, chunks, binary: bool):
    with (path.open("wb") if binary else path.open("w", encoding="utf-8", newline="")) as handle:
        for chunk in chunks:
            handle.write(chunk)


# --- analysis -----------------------------------------------------------------------------------

@main.command("estimate")
@click.argument("survey_id")
@db_option
@click.option("--url", help="Read from a running server instead of --db (needs --token).")
@click.option("--token", envvar="DENIABLE_ADMIN_TOKEN", help="Admin token for --url (default: $DENIABLE_ADMIN_TOKEN).")
@click.option("--by", "by", help="Estimate within each level of this public question.")
@click.option("--by-wave", is_flag=True, help="A repeated survey: estimate wave by wave, and the change between the last two.")
@click.option("--question", "questions", multiple=True, help="Only these questions (repeatable; default: all).")
@click.option("--level", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of each interval.")
@click.option("--simultaneous", is_flag=True, help="Make a question's intervals hold together (Bonferroni).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--language", help="Question texts and option labels in this language of the survey (option names stay as they are).")
@click.option("--version", "version", type=click.IntRange(1), help="Estimate this version (by number; default: the current one).")
@click.option("--spec-hash", help="Estimate this version (its hash, or a unique prefix such as the 12 characters shown).")
@click.option("--all-versions", is_flag=True,
              help="Pool every version, question by question where its randomization is the same in all of them.")
@click.option("--design", "design_choice", type=click.Choice(["spec", "none"]), default="spec", show_default=True,
              help="The sample design the spec names (sample: strata, clusters, weights), or none: as if a simple "
                   "random sample.")
def estimate_command(survey_id, db_path, url, token, by, by_wave, questions, level, simultaneous, fmt, language, version,
                     spec_hash, all_versions, design_choice):
    """Debiased estimates with standard errors and confidence intervals for every question."""
    from deniable.analysis import estimate_table, load

    if sum(map(bool, (version, spec_hash, all_versions))) > 1:
        raise click.UsageError("give one of --version, --spec-hash and --all-versions")
    if by and by_wave:
        raise click.UsageError("give --by QUESTION or --by-wave, not both")
    if by_wave:
        from deniable.client.reports import WAVES

        by = WAVES
    chosen = {"version": version, "spec_hash": spec_hash, "all_versions": all_versions}
    data = load(url=url, survey_id=survey_id, token=token, **chosen) if url else \
        load(db=db_path, survey_id=survey_id, **chosen)
    from deniable.analysis import SampleDesign

    design = SampleDesign.of(data.survey) if design_choice == "spec" else None
    table = estimate_table(data, questions, by, level, simultaneous, language, design=design)
    if fmt == "table":
        which = (f"versions {', '.join(v.label for v in data.versions)} pooled" if data.pooled
                 else f"version {data.versions[0].label}")
        click.echo(f"Survey {survey_id!r}, {which}, {data.n} responses ({data.source})")
        click.echo(f"Sample design: {design.describe()} (the spec's sample; --design none for a simple random sample)\n"
                   if design is not None else "Sample design: none (a simple random sample)\n")
        left_out = "\n".join([f"Not pooled: {message}" for message in table.refused]
                             + [f"Not estimated: {message}" for message in table.empty])
        click.echo("\n\n".join(table.texts + ([left_out] if left_out else [])))
    else:
        for message in table.refused:
            click.echo(f"Not pooled: {message}", err=True)
        for message in table.empty:
            click.echo(f"Not estimated: {message}", err=True)
    if table.frame.empty:  # in every format: a script sees a failure, not an empty table
        raise click.ClickException("no question could be estimated")
    if fmt != "table":
        click.echo(table.to_csv() if fmt == "csv" else table.to_json(), nl=fmt == "json")


# --- running ------------------------------------------------------------------------------------

@main.command("init-db")
@db_option
@click.option("--received-on", "granularity", type=click.Choice(storage.GRANULARITIES), default=None,
              help="Keep the date each response arrived to the day (the default), the week (its Monday) "
                   "or the month (its first day). Applies to responses received from now on.")
def init_db(db_path, granularity):
    """Create or migrate the database schema (and set how finely arrival dates are kept)."""
    with _store(db_path, must_exist=False) as store:
        if granularity:
            store.set_received_on_granularity(granularity)
        click.echo(f"{db_path}: schema version {store.schema_version()}; "
                   f"arrival dates kept to the {store.received_on_granularity()}")


# --- admins -------------------------------------------------------------------------------------

@main.group()
def admin():
    """Admin accounts, API tokens for scripts, and the audit log."""


@admin.command("add")
@db_option
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input (for scripts).")
def admin_add(db_path, name, password_stdin):
    """Add an admin account NAME (asks for the password twice)."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    with _store(db_path, must_exist=False) as store:
        store.add_admin(name, password)
    click.echo(f"Admin {name!r} added; sign in at /admin/login.")


@admin.command("list")
@db_option
def admin_list(db_path):
    """Admin accounts and API tokens (never their secrets)."""
    with _store(db_path, read_only=True) as store:
        for row in store.admins():
            locked = f" (locked until {row['locked_until']})" if row["locked_until"] else ""
            click.echo(f"admin {row['name']}, added {row['added_on']}{locked}")
        for token in store.api_tokens():
            state = f"revoked {token['revoked_on']}" if token["revoked_on"] else f"last used {token['last_used_on'] or 'never'}"
            click.echo(f"token {token['id']} {token['name']!r}, may {', '.join(token['scopes'])}, created "
                       f"{token['created_on']}, {state}")


@admin.command("token")
@db_option
@click.argument("name")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(storage.SCOPES),
              help="What the token may do, once per scope: read (surveys, versions, counts, waves), export (per-response "
                   "reports), write (publish, close, reopen surveys), manage (invitation tokens, waves). Default: read.")
def admin_token(db_path, name, scopes):
    """Create an API token NAME (what it is for) for scripts; it is shown once."""
    with _store(db_path, must_exist=False) as store:
        token_id, token = store.create_api_token(name, scopes=scopes or ("read",))
    click.echo(f"API token {token_id} ({name}, may {', '.join(storage.checked_scopes(scopes or ('read',)))}), "
               f"shown once: {token}")
    click.echo("Send it as 'Authorization: Bearer <token>'; revoke it with `deniable admin revoke " + token_id + "`.")


@admin.command("revoke")
@db_option
@click.argument("token_id")
def admin_revoke(db_path, token_id):
    """Revoke the API token TOKEN_ID (from `deniable admin list`)."""
    with _store(db_path) as store:
        store.revoke_api_token(token_id)
    click.echo(f"API token {token_id} revoked.")


@admin.command("audit")
@db_option
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--kind", type=click.Choice(["actions", "refusals", "all"]), default="actions", show_default=True,
              help="Admin actions, refused sign-ins (one line per name and hour, with the count), or both.")
def admin_audit(db_path, limit, kind):
    """The latest admin actions: who created, closed, exported what, and when."""
    with _store(db_path, read_only=True) as store:
        for entry in store.audit_log(limit, kind=None if kind == "all" else kind):
            survey = f" {_printable(entry['survey_id'])}" if entry["survey_id"] else ""
            detail = f" ({_printable(entry['detail'])})" if entry["detail"] else ""
            click.echo(f"{entry['at'][:19].replace('T', ' ')}  {_printable(entry['actor'])}: {entry['action']}{survey}{detail}")


def _printable(text: str) -> str:
    """Text from outside (a name typed at the sign-in form) on one line: control characters escaped, so
    a name cannot print a line that looks like another entry."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


@main.command("copy")
@click.option("--from", "source", required=True, help="The database to copy (a SQLite file, sqlite:///… or postgresql://…).")
@click.option("--to", "target", required=True, help="An empty database to copy into (created and migrated if need be).")
def copy(source, target):
    """Move a deployment to another database, e.g. from SQLite to PostgreSQL.

    Every table is copied in one transaction on the target and each table's row count is
    checked against the source; on any failure nothing is kept. Stop the servers first (or
    close the surveys), or responses that arrive during the copy stay behind."""
    try:
        copied = storage.copy_database(source, target)
    except DeniableError:
        raise
    except Exception as error:  # unreachable server, not a database
        raise click.ClickException(f"cannot copy: {error}") from None
    for table, rows in copied.items():
        click.echo(f"{table:>16}: {rows:,} rows")
    click.echo(f"Copied {storage.describe(source)} to {storage.describe(target)}.")


@main.command("backup")
@db_option
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The new backup file.")
@click.option("--compact", is_flag=True, help="Write rows in key order (VACUUM INTO) rather than copy pages as they are.")
def backup(db_path, output, compact):
    """A consistent online backup of a SQLite database (servers may keep running).

    For PostgreSQL use pg_dump, as docs/deploy.md shows."""
    size = storage.backup_sqlite(db_path, output, compact)
    click.echo(f"Backed up {storage.describe(db_path)} to {output} ({size:,} bytes)")


@main.command("compact")
@db_option
def compact(db_path):
    """Rewrite the database file in key order (VACUUM).

    Rows already sit in the order of their random ids, but inside a page SQLite writes each new
    row below the last one until the page is rewritten: someone who reads the raw file could
    still tell which rows of a page came later. Compacting removes that (and frees space).
    It takes the write lock for as long as it runs: do it when few responses arrive."""
    with _store(db_path) as store:
        before, after = store.compact()
        click.echo(f"{db_path}: compacted, {before:,} → {after:,} bytes")


def _announce_admin(store: storage.Store, base_url: str, rotate: bool = False):
    import os

    from .auth import ensure_admin_token, rotate_admin_token

    # The sign-in page, never a link carrying the token: URLs end up in histories and proxy logs.
    click.echo(f"Admin sign-in: {base_url}/admin/login (an account from `deniable admin add NAME`, or the admin token)")
    if os.environ.get("DENIABLE_ADMIN_TOKEN"):
        click.echo("Admin token: taken from $DENIABLE_ADMIN_TOKEN.")
        return
    token = rotate_admin_token(store) if rotate else ensure_admin_token(store)
    if token:
        click.echo(f"Admin token (shown once, stored hashed; also an API token): {token}")
    else:
        click.echo("Admin token: created earlier (stored hashed); set DENIABLE_ADMIN_TOKEN to choose one.")


def _check_port(host: str, port: int):
    """One line and a non-zero exit when the address is taken, before anything says "Serving"."""
    import errno
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # As the servers do: connections of an earlier run in TIME_WAIT do not make the port busy.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise click.ClickException(f"port {port} on {host} is already in use (another server?): "
                                           "stop it or choose another with --port") from None
            raise click.ClickException(f"cannot listen on {host}:{port} ({error.strerror})") from None


def _address(host: str, port: int) -> str:
    """host:port as a URL and gunicorn's bind write it: an IPv6 address in brackets ([::1]:8000; "::1:8000" made
    gunicorn read an empty port, and the printed links did not open)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def _serve(db_path: str, host: str, port: int, threads: int, workers: int = 1, config: dict | None = None):
    """waitress for one process; gunicorn (gthread workers, each building its own app and its
    own database pool after the fork) for several. No access log: it would hold addresses."""
    from . import create_app

    if workers > 1:
        try:
            from gunicorn.app.base import BaseApplication
        except ImportError:  # Windows, or gunicorn not installed: one process with more threads
            click.echo(f"gunicorn is not available: serving {workers * threads} threads in one process instead", err=True)
            threads, workers = workers * threads, 1
        else:
            class _Gunicorn(BaseApplication):
                def load_config(self):
                    for key, value in {"bind": _address(host, port), "workers": workers, "threads": threads,
                                       "worker_class": "gthread", "accesslog": None, "errorlog": "-",
                                       "logger_class": "deniable.server.logs.AddressFreeLogger",
                                       "proc_name": "deniable", "graceful_timeout": 10, "timeout": 60}.items():
                        self.cfg.set(key, value)

                def load(self):
                    return create_app({"DATABASE": db_path, **(config or {})})

            _Gunicorn().run()
            return
    import waitress

    app = create_app({"DATABASE": db_path, **(config or {})})
    waitress.serve(app, host=host, port=port, threads=threads, ident="deniable", clear_untrusted_proxy_headers=True)


@main.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 64), help="Threads per worker process.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Worker processes (gunicorn; waitress threads when gunicorn is unavailable). Nothing is kept in "
                   "one process that another needs, so several hosts may also serve one PostgreSQL database.")
@click.option("--rate-limits/--no-rate-limits", default=True, show_default=True,
              help="Limit requests per client address on public endpoints (counted in memory only).")
@click.option("--proxy-hops", envvar="DENIABLE_PROXY_HOPS", default=0, show_default=True, type=click.IntRange(0, 5),
              help="Reverse proxies in front that set X-Forwarded-For (for counting rate limits per client).")
def serve(db_path, host, port, threads, workers, rate_limits, proxy_hops):
    """Serve surveys and the API (waitress for one process, gunicorn for several)."""
    base_url = f"http://{_address(host, port)}"
    _check_port(host, port)
    with _store(db_path, must_exist=False) as store:
        _announce_admin(store, base_url)
        for record in store.list_surveys():
            click.echo(f"Survey {record.id!r}: {base_url}/s/{record.id}")
    click.echo(f"Serving {storage.describe(db_path)} on {base_url} with {workers} worker(s) (Ctrl-C to stop)", err=True)
    _serve(db_path, host, port, threads, workers, {"RATELIMIT_ENABLED": rate_limits, "PROXY_HOPS": proxy_hops})


@main.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--simulate", default=0, show_default=True, type=click.IntRange(0, 1_000_000),
              help="Add this many simulated respondents (known truth) so there is data to analyse.")
@click.option("--no-serve", is_flag=True, help="Set up (and simulate) only; do not start the server.")
def demo(db_path, host, port, simulate, no_serve):
    """Start the server with the demo survey (the seed's tax-dodging coin flip and one question of each type)."""
    from .demo import demo_survey
    from .demo import simulate as simulate_respondents

    if not no_serve:
        _check_port(host, port)

    base_url = f"http://{_address(host, port)}"
    survey_spec = demo_survey()
    with _store(db_path, must_exist=False) as store:
        record, outcome = store.add_survey(survey_spec)
        click.echo(f"Demo survey {record.id!r} ({outcome}, version {record.version}, total ε {record.survey.epsilon:.3f}).")
        if simulate:
            simulate_respondents(store, survey_spec, simulate)
            click.echo(f"Added {simulate} simulated respondents; {store.response_count(record.id)} responses in all.")
        _announce_admin(store, base_url, rotate=True)
    click.echo(f"Survey link: {base_url}/s/{record.id}")
    if not no_serve:
        click.echo(f"Serving {db_path} on {base_url} (Ctrl-C to stop)", err=True)
        _serve(db_path, host, port, threads=8)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
