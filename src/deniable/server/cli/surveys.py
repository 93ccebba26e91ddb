"""`deniable survey …`: check, import and export specs; add, list, show, close, reopen surveys; open and close waves."""

from __future__ import annotations

import io
import json
from pathlib import Path

import click

from deniable.client import Survey, catalogue
from deniable.client.errors import DeniableError
from deniable.client.privacy import DEFAULT_PRIOR
from deniable.client.questions import _LANGUAGE
from deniable.client.xlsform import read_xlsform, write_xlsform
from deniable.storage.release import row_sizes

from ..disclosure import expected_groups
from ..disclosure import groups as disclosure_groups
from .common import cli_actor, db_option, load_spec_file, open_store
from .files import atomic_write, read_frame

# --- surveys ------------------------------------------------------------------------------------

@click.group()
def survey():
    """Check, add, list, show and close surveys."""


@survey.command("check")
@click.argument("spec_file", type=click.Path(dir_okay=False))
@click.option("--prior", type=click.FloatRange(0, 1), default=DEFAULT_PRIOR, show_default=True,
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
                   "[default: 1; a wide number grid's shares can take minutes, its mean is planned at once].")
@click.option("--design-effect", "design_effect", type=click.FloatRange(0, min_open=True), default=None,
              help="Plan with this design effect (an earlier round's, a similar survey's) instead of the one the "
                   "spec's sample and --frame give.")
@click.option("--frame", "frame_file", type=click.Path(dir_okay=False),
              help="The invitations' frame CSV (as for `deniable tokens --frame`): plan with the design effect of "
                   "its weights and PSU sizes (the spec's sample names which columns).")
@click.option("--icc", type=click.FloatRange(0, 1), default=None,
              help="The intraclass correlation of answers within a PSU, with --frame [default: 0.05, said as assumed].")
def check(spec_file, prior, as_json, planned, planning, asked, compare, plan_seconds, design_effect, frame_file, icc):
    """Validate SPEC_FILE (YAML or JSON) and print its privacy summary (ε per question and in total)
    and what each question will give at the planned sample size (with the spec's sample design: --frame or
    --design-effect size it)."""
    parsed = load_spec_file(spec_file)
    try:
        parsed.check_fieldable()
    except DeniableError as error:
        raise click.ClickException(f"{spec_file}: {error}") from None
    frame = None if frame_file is None else read_frame(frame_file)
    design = _design(parsed, planned, frame, icc, design_effect) if planning else None
    plans = _plans(parsed, planned, _asked_shares(asked), plan_seconds, design) if planning else None
    if as_json:
        figures = {p.question_id: p for p in plans or []}

        def figures_of(qid):
            p = figures.get(qid)
            return None if p is None else {"n": p.n, "asked_share": p.asked_share, "asked_n": p.asked_n,
                                           "asked_from": p.asked_from,
                                           "se": p.se, "margin": p.margin, "n_for_margin": p.n_for_margin,
                                           "target": p.target, "mean_se": p.mean_se, "flags": p.flags,
                                           "n_to_detect_cheaters": p.n_to_detect_cheaters, "split_ballot": p.split_ballot,
                                           "design_effect": p.design_effect, "mean_design_effect": p.mean_design_effect}

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
            "design": None if plans is None else {"effect": plans.design.effect, "words": plans.design.words,
                                                   "left_out": plans.design.unused},
            "unplanned": getattr(plans, "unplanned", []),
            "shares_unplanned": [] if plans is None else plans.shares_unplanned,
            "spec": parsed.to_dict(),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=_json_float))
    else:
        click.echo(parsed.privacy_summary(prior))
        for warning in parsed.warnings:
            click.echo(f"WARNING: {warning}")
        groups_said = expected_groups(parsed, planned, None if frame is None else len(row_sizes(frame)))
        if groups_said:
            click.echo(groups_said)
        if planning:
            _echo_plans(plans)
        if compare:
            _echo_comparison(parsed, planned)


@survey.command("words")
@click.argument("language", default="en")
def words(language):
    """Print the respondent pages' words in LANGUAGE (default: en) as a page_words block to paste into a spec and
    translate or adjust; a word LANGUAGE has no shipped text for is given in English and marked."""
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


def _design(survey: Survey, planned: int, frame, icc, design_effect):
    """The design effect to plan with (`analysis.planned_design`); None without the analysis extra."""
    try:
        # the analysis extra: `survey check --no-plan` validates without it
        from deniable.analysis.errors import AnalysisError
        from deniable.analysis.planned_design import planned_design
    except ImportError:
        return None
    if icc is not None and frame is None and design_effect is None:
        raise click.UsageError("--icc goes with --frame (the PSU sizes it acts within)")
    try:
        return planned_design(survey, planned, frame=frame, icc=icc, assumed=design_effect)
    except AnalysisError as error:
        raise click.BadParameter(str(error), param_hint=f"--{(error.field or 'frame').replace('_', '-')}") from None


def _plans(survey: Survey, planned: int, asked: dict | None = None, seconds: float | None = None, design=None):
    """Planning figures per private question, within ``seconds`` (default `PLANNING_SECONDS`; None without the
    analysis extra, which has numpy)."""
    try:
        # numpy: `survey check --no-plan` validates without it
        from deniable.analysis.errors import AnalysisError
        from deniable.analysis.plans import PLANNING_SECONDS, plan
    except ImportError:
        return None
    try:
        return plan(survey, planned, time_limit=seconds or PLANNING_SECONDS, asked=asked, design=design)
    except AnalysisError as error:
        raise click.BadParameter(str(error), param_hint="--asked") from None


def _echo_comparison(survey: Survey, planned: int):
    try:
        from deniable.analysis.precision import compare_yes_no_designs  # numpy: only when asked
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
    from deniable.analysis.plans import describe_plan  # numpy: only when asked

    click.echo("\n" + describe_plan(plans))


def _json_float(value):
    return float(value)


@survey.command("import")
@click.argument("form", type=click.Path(dir_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the spec here (.yaml or .json); default: YAML on standard output.")
def survey_import(form, output):
    """Read an XLSForm (.xlsx) and write the deniable spec it describes; every problem of the form is listed at once."""
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
        from ruamel.yaml import YAML  # YAML out only (25 ms off every other command)

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
    atomic_write(Path(output), lambda path: path.write_text(text, encoding="utf-8"))


@survey.command("export")
@click.argument("survey_id")
@db_option
@click.option("--format", "fmt", type=click.Choice(["yaml", "json", "xlsform"]), default="yaml", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write here (required for xlsform); default: standard output.")
def survey_export(survey_id, db, fmt, output):
    """Write a stored survey's current version as a spec or an XLSForm that reads back to the same hash."""
    with open_store(db, read_only=True) as store:
        record = store.get_survey(survey_id)
    if fmt == "xlsform":
        if not output:
            raise click.ClickException("--output FILE.xlsx is required for --format xlsform")

        atomic_write(Path(output), lambda path: write_xlsform(record.survey, path))
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
@click.option("--confirm-redesign", is_flag=True,
              help="Publish a version that randomizes or asks an answered question differently (its reports so far and "
                   "those to come are then estimated apart).")
def survey_add(spec_file, db, access, confirm_lower_privacy, confirm_redesign):
    """Add the survey in SPEC_FILE; a changed spec under an existing id becomes a new version."""
    parsed = load_spec_file(spec_file)
    with open_store(db, must_exist=False) as store:
        previous = store.versions(parsed.id) if parsed.id in {r.id for r in store.list_surveys()} else []
        record, outcome = store.add_survey(parsed, access, actor=cli_actor(),
                                           confirm_lower_privacy=confirm_lower_privacy,
                                           confirm_redesign=confirm_redesign)
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
def survey_list(db):
    """List surveys with version, responses and total ε."""
    with open_store(db, read_only=True) as store:
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
@click.option("--prior", type=click.FloatRange(0, 1), default=DEFAULT_PRIOR, show_default=True)
@click.option("--n", "planned", type=click.IntRange(1, 10**9), default=1000, show_default=True,
              help="Planned number of respondents, for the precision each question will give.")
@click.option("--design-effect", "design_effect", type=click.FloatRange(0, min_open=True), default=None,
              help="Plan with this design effect instead of the one the issued invitations' frame gives.")
@click.option("--icc", type=click.FloatRange(0, 1), default=None,
              help="The intraclass correlation of answers within a PSU [default: 0.05, said as assumed].")
def survey_show(survey_id, db, prior, planned, design_effect, icc):
    """The privacy summary of a stored survey: ε per question and in total, planning figures (with the design of
    the invitations' frame, when they carry one), versions, responses."""
    with open_store(db, read_only=True) as store:
        record = store.get_survey(survey_id)
        click.echo(record.survey.privacy_summary(prior))
        for warning in record.survey.warnings:
            click.echo(f"WARNING: {warning}")
        frame = store.frame_invitations(survey_id) or None
        _echo_plans(_plans(record.survey, planned, design=_design(record.survey, planned, frame,
                                                                   icc if frame else None, design_effect)))
        click.echo()
        if record.access == "open":
            click.echo("NOTE: open survey (no invitation tokens): someone who answers more than once spends "
                       "the per-person budget again each time.")
        tokens = store.token_counts(survey_id)
        credentials = (f", exchanged for a credential {tokens['credentials']} (answered or not: nobody can tell)"
                       if tokens.get("credentials") else "")
        click.echo(f"\nAccess: {record.access}; tokens issued {tokens['issued']}, used {tokens['used']}{credentials}. "
                   f"Status: {'closed on ' + record.closed_on if record.closed else 'open'}.")
        frame = store.frame_summary(survey_id)
        if frame["cells"]:
            click.echo(f"Frame: {frame['invitations']} invitations in {frame['cells']} distinct rows (the fewest share "
                       f"one: {frame['fewest_invitations']}); answered rows {frame['answered_cells']}, the fewest "
                       f"answers in one {frame['fewest_answers']}"
                       + (f"; {frame['cells_with_one_answer']} rows have a single answer, which their frame row and "
                          "the tokens' use narrow to one invitation" if frame["cells_with_one_answer"] else "") + ".")
            released = store.released_frames(survey_id, record.survey.sample).describe()
            if released:
                click.echo(f"Released: {released} (analysis and exports carry these rows).")
        singled = disclosure_groups(store.export(survey_id, record.hash), record.survey).describe()
        if singled:
            click.echo(f"Quasi-identifiers (the current version): {singled}; `deniable export --coarsen/--top-code/"
                       "--suppress` before sharing a file.")
        for v in store.versions(survey_id):
            marker = " (current)" if v["hash"] == record.hash else ""
            click.echo(f"  version {v['version']} {v['hash'][:12]} added {v['added_on']}: {v['responses']} responses{marker}")
        if record.survey.repeated is not None:
            _echo_waves(survey_id, store.waves(survey_id))
        if record.survey.quotas:
            _echo_quotas(store.quota_counts(survey_id))


def _echo_quotas(cells: list[dict]):
    if not cells:
        click.echo("Quotas: no response in any cell yet.")
        return
    click.echo("Quotas:")
    for cell in cells:
        named = ", ".join(f"{qid} = {value}" for qid, value in zip(cell["questions"], cell["cell"]))
        limit = "no limit" if cell["limit"] is None else f"of {cell['limit']}"
        click.echo(f"  {named:<40} {cell['count']:>7} {limit}{'  FULL' if cell['full'] else ''}")


@survey.command("quotas")
@click.argument("survey_id")
@db_option
@click.option("--json", "as_json", is_flag=True, help="As JSON: [{questions, cell, count, limit, full}].")
def survey_quotas(survey_id, db, as_json):
    """The quota cells of a survey (its spec's quotas): responses stored in each, its limit, whether it is full."""
    with open_store(db, read_only=True) as store:
        record = store.get_survey(survey_id)
        if not record.survey.quotas:
            raise click.ClickException(f"survey {survey_id!r} has no quotas (give them in its spec: quotas)")
        cells = store.quota_counts(survey_id)
    if as_json:
        click.echo(json.dumps(cells, indent=2, ensure_ascii=False))
    else:
        _echo_quotas(cells)


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
def survey_close(survey_id, db):
    """Stop accepting responses."""
    with open_store(db) as store:
        record = store.close_survey(survey_id, actor=cli_actor())
    click.echo(f"Survey {survey_id!r} is closed (since {record.closed_on}).")


@survey.command("wave")
@click.argument("survey_id")
@db_option
@click.option("--open", "label", default=None, metavar="LABEL",
              help="Open a new wave with this label (e.g. 2026-12), closing the open one.")
@click.option("--close", "close", is_flag=True, help="Close the open wave (responses wait for the next).")
def survey_wave(survey_id, db, label, close):
    """The waves of a repeated survey: list them, open the next one, or close the open one. Each response
    records the wave open when it arrived; nothing links one person's waves."""
    if label is not None and close:
        raise click.UsageError("give --open LABEL or --close, not both")
    with open_store(db, read_only=label is None and not close) as store:
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
def survey_reopen(survey_id, db):
    """Accept responses again (closed by mistake, or a second wave)."""
    with open_store(db) as store:
        store.reopen_survey(survey_id, actor=cli_actor())
    click.echo(f"Survey {survey_id!r} accepts responses again.")
