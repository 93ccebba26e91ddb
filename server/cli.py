"""The ``deniable`` command: a thin layer over the library; domain errors become clean messages."""

from __future__ import annotations

import json
import sys

import click

from deniable.client import SpecError, Survey


def _load(path: str) -> Survey:
    try:
        return Survey.from_file(path)
    except SpecError as error:
        raise click.ClickException(f"{path}: {error}") from None


@click.group()
@click.version_option(package_name="deniable")
def main():
    """deniable: surveys with plausible deniability (randomized response on the respondent's device)."""


@main.group()
def survey():
    """Check and manage survey specs."""


@survey.command("check")
@click.argument("spec_file", type=click.Path(dir_okay=False))
@click.option("--prior", type=click.FloatRange(0, 1), default=0.02, show_default=True,
              help="Prior belief used to illustrate each question's worst-case posterior.")
@click.option("--json", "as_json", is_flag=True, help="Print the canonical spec, hash and ε as JSON.")
def check(spec_file, prior, as_json):
    """Validate SPEC_FILE (YAML or JSON) and print its privacy summary: ε per question and in total."""
    parsed = _load(spec_file)
    if as_json:
        payload = {
            "hash": parsed.hash,
            "epsilon": parsed.epsilon,
            "questions": {q.id: {"design": q.mechanism.design, "epsilon": None if not q.is_private else q.epsilon}
                          for q in parsed.questions.values()},
            "spec": parsed.to_dict(),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        click.echo(parsed.privacy_summary(prior))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
