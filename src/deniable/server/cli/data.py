"""`deniable tokens`, `deniable export` and `deniable estimate`: what goes into a survey's invitations and what comes
out of its responses."""

from __future__ import annotations

import re
from pathlib import Path

import click

from deniable import storage
from deniable.client.reports import WAVES
from deniable.storage.release import RELEASE_AT, expected_merging, row_sizes

from ..disclosure import Remedies, RemedyError
from ..disclosure import groups as disclosure_groups
from ..export_formats import EXPORT_FORMATS
from ..exports import ExportUnavailable, PooledRecord, describe_version, export_rows
from .common import cli_actor, db_option, open_store
from .files import atomic_write, read_frame, write_chunks


@click.command("reissue")
@click.argument("survey_id")
@click.option("--token", required=True,
              help="The invitation's token (an option, not an argument: a token may begin with '-').")
@db_option
def reissue(survey_id, token, db):
    """Let an invitation receive a new credential: for a respondent whose device was lost, or whose browser was
    cleared, before they answered. Nobody can tell whether that invitation answered already, so this lets it answer
    twice if it did; the audit log records who allowed it."""
    with open_store(db) as store:
        store.forget_credential(survey_id, token, actor=cli_actor())
    click.echo(f"The invitation may receive a new credential once (survey {survey_id!r}); the audit log says who "
               "allowed it.")


@click.command()
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
def tokens(survey_id, count, frame_file, min_cell, db, base_url):
    """Create single-use respondent tokens and print them as invitation links (the survey then needs one); with
    --frame, one per row of the sample, printed in the frame's row order."""
    if base_url is not None and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", base_url):
        raise click.BadParameter(f"{base_url!r} is not an http(s) address such as https://survey.example.org",
                                 param_hint="--base-url")
    if (count is None) == (frame_file is None):
        raise click.UsageError("give --count N, or --frame sample.csv (one token per row)")
    if min_cell is not None and frame_file is None:
        raise click.UsageError("--min-cell goes with --frame")
    frame = None if frame_file is None else read_frame(frame_file)
    with open_store(db) as store:
        was_open = store.get_survey(survey_id).access == "open"
        issued = store.issue_tokens(survey_id, count, actor=cli_actor(), frame=frame,
                                    **({} if min_cell is None else {"min_cell": min_cell}))
    if was_open:
        click.echo(f"Survey {survey_id!r} now accepts only responses with a token.", err=True)
    if frame is not None:
        click.echo(f"{len(issued)} invitations with their frame rows, in {frame_file}'s row order (line k below is "
                   "its row k): send each to the unit of that row.", err=True)
        click.echo(_expected_release(frame), err=True)
    if base_url is None:
        click.echo(f"No --base-url (or $DENIABLE_BASE_URL): the tokens alone follow; each invitation link is "
                   f"<your server>/s/{survey_id}?t=<token>.", err=True)
    for token in issued:
        click.echo(token if base_url is None else f"{base_url.rstrip('/')}/s/{survey_id}?t={token}")


def _expected_release(frame: list[dict]) -> str:
    """What the frame's cells will carry out, by response rate: a row answered fewer than `release.RELEASE_AT` times
    is released merged with its stratum's other small rows (or joined to a neighbour's), not as issued."""
    sizes = row_sizes(frame)
    said = []
    for rate in (0.2, 0.4, 0.6):
        cells, share = expected_merging(sizes, rate)
        said.append(f"at {rate:.0%}, about {cells:.0f} of {len(sizes)} rows ({share:.0%} of answers)")
    return (f"Rows answered fewer than {RELEASE_AT} times are released merged within their stratum, not as issued "
            f"(docs/privacy.md). Expected by response rate: {'; '.join(said)}.")


@click.command()
@click.argument("survey_id")
@click.option("--format", "fmt", type=click.Choice(list(EXPORT_FORMATS)), default="csv", show_default=True,
              help="csv, jsonl, SPSS (sav) or Stata (dta) with labels, a SQLite file Datasette opens (sqlite), or "
                   "the codebook alone.")
@click.option("--output", type=click.Path(dir_okay=False, writable=True),
              help="Write here (and the codebook beside it, NAME.codebook.md) instead of standard output.")
@click.option("--spec-hash", help="Export this version: its hash or a unique prefix (default: the current one).")
@click.option("--version", "version", type=click.IntRange(1), help="Export this version, by number.")
@click.option("--all-versions", is_flag=True,
              help="Export every version in one file: a version column, columns of every version, a codebook per version.")
@click.option("--coarsen", multiple=True, metavar="QUESTION=WIDTH",
              help="A public number in bands of WIDTH (each value its band's lower end), e.g. age=10. Repeatable.")
@click.option("--top-code", multiple=True, metavar="QUESTION=VALUE",
              help="A public number's values above VALUE written as VALUE, e.g. age=80. Repeatable.")
@click.option("--suppress", multiple=True, metavar="COLUMN",
              help="Leave out a frame column or public question. Repeatable.")
@db_option
def export(survey_id, fmt, output, spec_hash, version, all_versions, coarsen, top_code, suppress, db):
    """Export the stored reports of a survey version (or of all of them). Private columns hold randomized
    reports: analyse them with `deniable estimate`, not by tabulating them. Says how many responses are unique in
    their combination of frame columns and public answers, which --coarsen, --top-code and --suppress reduce."""
    export = EXPORT_FORMATS[fmt]
    if export.binary and not output:
        raise click.UsageError(f"--format {fmt} writes a binary file: give --output FILE.{fmt}")
    if all_versions and (spec_hash or version):
        raise click.UsageError("--all-versions exports every version: leave out --spec-hash and --version")
    # One moment of the database: while responses arrive, the rows, the codebook's counts and the count said below
    # describe the same responses.
    with open_store(db, read_only=True) as store, store.snapshot():
        record = PooledRecord.of(store, survey_id) if all_versions else store.find_version(survey_id, spec_hash, version)
        survey = record.versions[-1].survey if isinstance(record, PooledRecord) else record.survey
        try:
            remedies = Remedies.parse(survey, coarsen, top_code, suppress)
        except RemedyError as error:
            raise click.BadParameter(str(error)) from None
        singled = disclosure_groups(export_rows(store, record), survey, remedies).describe()
        rows = _Counted(map(remedies.apply, export_rows(store, record)) if remedies else export_rows(store, record))
        chunks = export.write(record, rows)
        try:
            if not output:
                for chunk in chunks:
                    click.echo(chunk, nl=False)
                _audit_export(db, record, fmt)
                _say_disclosure(singled, remedies)
                return
            target = Path(output)
            atomic_write(target, lambda path: write_chunks(path, chunks, export.binary))
            if fmt != "codebook":
                beside = target.with_name(target.stem + ".codebook.md")
                atomic_write(beside, lambda path: write_chunks(path, EXPORT_FORMATS["codebook"].write(record), False))
        except ExportUnavailable as error:
            raise click.ClickException(str(error)) from None
        described = "the codebook" if fmt == "codebook" else f"{rows.count} responses of {describe_version(record)}"
    _audit_export(db, record, fmt)
    click.echo(f"Wrote {described} to {output}" + ("" if fmt == "codebook" else f" (codebook: {beside})"), err=True)
    if fmt != "codebook":
        _say_disclosure(singled, remedies)


def _say_disclosure(singled: str, remedies: Remedies):
    if remedies:
        click.echo(f"Remedies: {remedies.describe()}.", err=True)
    if singled:
        click.echo(f"Quasi-identifiers: {singled}. Anyone who knows those of a respondent finds their row: coarsen, "
                   "top-code or leave out columns (--coarsen, --top-code, --suppress) before sharing the file.", err=True)


class _Counted:
    """The rows of an export, counted as they are written: the count said is the rows in the file."""

    def __init__(self, rows):
        self.rows, self.count = rows, 0

    def __iter__(self):
        for row in self.rows:
            self.count += 1
            yield row


def _audit_export(db, record, fmt: str):
    """The export's line in the audit log, as the dashboard and the API write theirs. The export itself only
    reads; a database that cannot take the line (read-only, a replica) is said, not fatal."""
    try:
        with open_store(db) as store:
            store.audit(cli_actor(), "responses exported", record.id, f"{describe_version(record)}, {fmt}")
    except storage.StorageError as error:
        click.echo(f"NOTE: the export was not written to the audit log ({error.message})", err=True)


def flagged_note(data) -> str | None:
    """What the spec's quality checks flagged, and whether the estimates leave them out; None when nothing is."""
    flagged = data.flagged_words()
    if flagged is None:
        return None
    if data.left_out:
        return f"Left out: {flagged}."
    return f"{flagged[0].upper()}{flagged[1:]}; they are in these estimates, --leave-out-flagged leaves them out."


@click.command("estimate")
@click.argument("survey_id")
@db_option
@click.option("--url", help="Read from a running server instead of --db (needs --token).")
@click.option("--token", envvar="DENIABLE_ADMIN_TOKEN", help="Admin token for --url (default: $DENIABLE_ADMIN_TOKEN).")
@click.option("--by", "by", help="Estimate within each level of this public question, or of a column of the "
                                 "sampling frame (stratum, region, …).")
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
@click.option("--values", is_flag=True,
              help="A wide number (more than 24 values): a row per value, not its bins (single values of a wide grid "
                   "are seldom identified; this takes seconds a question).")
@click.option("--leave-out-flagged", is_flag=True,
              help="Leave out the responses the spec's quality checks flag (an attention check answered otherwise, "
                   "faster than quality.min_seconds); says how many either way.")
def estimate_command(survey_id, db, url, token, by, by_wave, questions, level, simultaneous, fmt, language, version,
                     spec_hash, all_versions, design_choice, values, leave_out_flagged):
    """Debiased estimates with standard errors and confidence intervals for every question."""
    # pandas and scipy (0.5 s): only the commands that estimate
    from deniable.analysis.loading import load
    from deniable.analysis.sample_design import SampleDesign
    from deniable.analysis.tables import estimate_table

    if sum(map(bool, (version, spec_hash, all_versions))) > 1:
        raise click.UsageError("give one of --version, --spec-hash and --all-versions")
    if by and by_wave:
        raise click.UsageError("give --by QUESTION or --by-wave, not both")
    if by_wave:
        by = WAVES
    if leave_out_flagged and url:
        raise click.UsageError("--leave-out-flagged reads the database (--db): a server's counts do not carry the flags")
    chosen = {"version": version, "spec_hash": spec_hash, "all_versions": all_versions}
    data = load(url=url, survey_id=survey_id, token=token, **chosen) if url else \
        load(db=db, survey_id=survey_id, leave_out_flagged=leave_out_flagged, **chosen)
    design = SampleDesign.of(data.survey) if design_choice == "spec" else None
    table = estimate_table(data, questions, by, level, simultaneous, language, design=design, values=values)
    if fmt == "table":
        which = (f"versions {', '.join(v.label for v in data.versions)} pooled" if data.pooled
                 else f"version {data.versions[0].label}")
        click.echo(f"Survey {survey_id!r}, {which}, {data.n} responses ({data.source})")
        if flagged_note(data):
            click.echo(flagged_note(data))
        click.echo(f"Sample design: {design.describe()} (the spec's sample; --design none for a simple random sample)\n"
                   if design is not None else "Sample design: none (a simple random sample)\n")
        left_out = "\n".join([f"Not pooled: {message}" for message in table.refused]
                             + [f"Not estimated: {message}" for message in table.empty])
        click.echo("\n\n".join(table.texts + ([left_out] if left_out else [])))
    else:
        if flagged_note(data):
            click.echo(flagged_note(data), err=True)
        for message in table.refused:
            click.echo(f"Not pooled: {message}", err=True)
        for message in table.empty:
            click.echo(f"Not estimated: {message}", err=True)
    if table.frame.empty:  # in every format: a script sees a failure, not an empty table
        raise click.ClickException("no question could be estimated")
    if fmt != "table":
        click.echo(table.to_csv() if fmt == "csv" else table.to_json(), nl=fmt == "json")
