"""``deniable model``: a multilevel model of a randomized yes/no answer (`analysis.mixed`), and with ``--areas`` the
small-area estimates it gives (`analysis.small_areas`), from the command line as a notebook has them."""

from __future__ import annotations

import json

import click

from .common import db_option


@click.command("model")
@click.argument("survey_id")
@click.argument("formula")
@db_option
@click.option("--url", help="Read from a running server instead of --db (needs --token).")
@click.option("--token", envvar="DENIABLE_ADMIN_TOKEN", help="Admin token for --url (default: $DENIABLE_ADMIN_TOKEN).")
@click.option("--version", "version", type=click.IntRange(1), help="Fit this version (by number; default: the current one).")
@click.option("--level", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@click.option("--nodes", type=click.IntRange(1, 127), default=None,
              help="Hold the quadrature at this many nodes per group (1: Laplace, lme4's default); default: add nodes "
                   "until the log-likelihood is settled.")
@click.option("--areas", is_flag=True,
              help="Small-area estimates: each level of the grouping factor post-stratified over --population.")
@click.option("--population", metavar="FILE|sample", default=None,
              help="With --areas: a CSV file, one row per cell (the model's covariates, the area and its count), "
                   "or 'sample': the sample's own cells by their design weights [default: sample].")
@click.option("--count", "count_column", default="count", show_default=True, help="The population file's count column.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="csv and json: the area table with --areas, else the model's terms.")
def model_command(survey_id, formula, db, url, token, version, level, nodes, areas, population, count_column, fmt):
    """Fit FORMULA, 'outcome ~ covariates + (1 | group)': a logistic model of a randomized yes/no answer with a random
    intercept per group (RRreg's RRmixed), by maximum likelihood with adaptive Gauss-Hermite quadrature.

    \b
      deniable model tax 'dodged ~ worked + (1 | region)'
      deniable model tax 'dodged ~ worked + (1 | region)' --areas --format csv > regions.csv
      deniable model tax 'dodged ~ worked + (1 | region)' --areas --population census.csv
    """
    # pandas and scipy (0.5 s): only the commands that estimate
    import pandas as pd

    from deniable.analysis.loading import load
    from deniable.analysis.mixed import mixed
    from deniable.analysis.small_areas import small_areas

    if population is not None and not areas:
        raise click.UsageError("--population is the population of --areas: give --areas too")
    table = None
    if areas and population not in (None, "sample"):
        try:
            table = pd.read_csv(population)
        except (OSError, ValueError) as error:
            raise click.ClickException(f"--population {population}: cannot read it as CSV ({error})") from None
    data = load(url=url, survey_id=survey_id, token=token, version=version) if url else \
        load(db=db, survey_id=survey_id, version=version)
    fit = mixed(formula, data, level=level, nodes=nodes)
    estimates = small_areas(fit, "sample" if table is None else table, count=count_column) if areas else None
    if fmt == "table":
        click.echo(f"Survey {survey_id!r}, version {data.versions[0].label}, {data.n} responses ({data.source})\n")
        click.echo(fit.summary().as_text())
        for factor, effects in fit.effects.items():
            click.echo(f"\nEffects of {factor} (conditional modes on the log-odds scale, conditional SE):")
            click.echo(effects.round(4).to_string())
        if estimates is not None:
            click.echo("")
            click.echo(estimates.summary().as_text())
        if not fit.converged:
            raise click.ClickException("the fit is not certified (see its line above): try --nodes 1, fewer "
                                       "covariates, or groups with more respondents")
        return
    frame = (estimates.to_frame() if estimates is not None else fit.to_frame()).reset_index()
    if not fit.converged:
        click.echo("Not certified: the estimates below are not a certified optimum", err=True)
    for note in (estimates.notes if estimates is not None else fit.notes):
        click.echo(f"Note: {note}", err=True)
    if fmt == "csv":
        click.echo(frame.to_csv(index=False), nl=False)
    else:
        records = json.loads(frame.to_json(orient="records", double_precision=15))
        click.echo(json.dumps({"survey": survey_id, "formula": formula, "level": level, "n": fit.n,
                               "converged": fit.converged, "rows": records}, indent=2))
    if not fit.converged:
        raise SystemExit(1)
