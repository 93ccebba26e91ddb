"""The examples of README.md and docs/*.md run as doctests (pytest's ``--doctest-glob=*.md``), each in a workspace
as a reader would have it: the examples folder, a database with the demo survey and 300 respondents (seeded, so the
figures shown are the figures made), a server for the client's examples (``BASE``),
and a folder for an app's files (``app_data_dir``). Registered for the whole run by the root conftest.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "docs-admin-token"
RESPONDENTS = 300


STUDY = Path(__file__).with_name("doc_study.yaml")
STUDY_RESPONDENTS = 2000
PANEL_PEOPLE = 300


def _study_answers(person: int, rng) -> dict:
    """One respondent of the example study: dodging varies by region, cash in hand goes with it, both lower trust;
    voting rises with age."""
    region = ("North", "South", "East", "West")[person % 4]
    age = 18 + rng.randrange(63)
    # Each primary sampling unit (a region's people of one last digit of age, `_join_design_columns`) has a dodging
    # rate of its own around the region's: respondents in one unit are alike, as a cluster's are.
    dodged = rng.random() < {"North": 0.15, "South": 0.35, "East": 0.25, "West": 0.2}[region] + 0.12 * ((age % 10) - 4.5) / 4.5
    cash = rng.random() < 0.2 + 0.4 * dodged
    return {"region": region, "age": age, "agecat": "18-34" if age < 35 else "35-64" if age < 65 else "65+",
            "voted": "yes" if rng.random() < 0.45 + 0.006 * (age - 18) else "no",
            "trust": max(0, min(10, round(rng.gauss(6 - 2 * dodged - 1.5 * cash, 2)))),
            "dodged": "yes" if dodged else "no", "cash": "yes" if cash else "no",
            "cheated": "yes" if rng.random() < 0.2 else "no"}


def _add_study(store, seed: int) -> None:
    """The example study: 2,000 respondents, two in five of the direct arm's dodgers saying no (people hide "yes";
    the design, trusted, hears it), 12% cheaters who answer "no" whatever their group says; then its export with
    design columns joined (pw, stratum, psu), as an export a statistician would weight."""
    import random

    from deniable.client import Survey
    from deniable.client.splitballot import SplitBallot
    from tests.conftest import SeededSource

    survey = Survey.from_file(STUDY)
    store.add_survey(survey)
    rng, source = random.Random(seed), SeededSource(seed)
    items = []
    for person in range(STUDY_RESPONDENTS):
        answers = _study_answers(person, rng)
        reports = survey.simulate(answers, source)  # each draws its arm and follows its group's instruction
        if SplitBallot.unwrap(reports["dodged"])[0] == "direct" and answers["dodged"] == "yes" and rng.random() < 0.4:
            reports["dodged"] = SplitBallot.wrap("direct", "no")
        if rng.random() < 0.12:  # a cheater: "no", whichever group the device drew
            reports["cheated"] = {**reports["cheated"], "report": "no"}
        items.append((survey.hash, f"study-{person:06d}", reports, None))
    for start in range(0, len(items), 500):
        store.submit_many("study", items[start:start + 500])


def _add_panel(store, seed: int) -> None:
    """examples/panel.yaml over two monthly waves: 300 people, each with a memo, burnout rising in the second."""
    import random

    from deniable.client import Memo, Survey
    from tests.conftest import SeededSource

    survey = Survey.from_file(ROOT / "examples" / "panel.yaml")
    store.add_survey(survey)
    rng, source = random.Random(seed), SeededSource(seed)
    memos = [Memo.from_secret(rng.randbytes(32)) for _ in range(PANEL_PEOPLE)]
    for number, wave in enumerate(("2026-10", "2026-11")):
        store.open_wave("pulse", wave)
        items = []
        for person, memo in enumerate(memos):
            answers = {"team": ("Sales", "Engineering", "Support")[person % 3],
                       "burnout": "yes" if rng.random() < 0.2 + 0.15 * number else "no", "looking": "no",
                       "workload": rng.choice(["Barely", "Mostly", "Fully"])}
            items.append((survey.hash, f"pulse-{wave}-{person:04d}", survey.randomize(answers, source, memo=memo),
                          None, wave))
        store.submit_many("pulse", items)


def build_workspace(folder: Path) -> Path:
    """The examples' workspace in ``folder`` (also run alone, to write an example's output: ``python -m
    tests.support.doc_examples FOLDER``)."""
    from click.testing import CliRunner

    from deniable import storage
    from deniable.server.cli import main
    from deniable.server.demo import demo_survey, simulate
    from tests.conftest import SeededSource

    shutil.copytree(ROOT / "examples", folder / "examples")
    survey = demo_survey()
    with storage.Store(str(folder / "deniable.db")) as store:
        store.add_survey(survey)
        simulate(store, survey, RESPONDENTS, SeededSource(20261129))
        _add_study(store, 20261130)
        _add_panel(store, 20261131)
    for command, name in ((["export", "tax"], "tax.csv"), (["survey", "export", "tax"], "tax.yaml"),  # and its spec
                          (["export", "study"], "study.csv"), (["survey", "export", "study"], "study.yaml")):
        done = CliRunner().invoke(main, [*command, "--output", str(folder / name), "--db", str(folder / "deniable.db")])
        assert done.exit_code == 0, done.output
    _join_design_columns(folder / "study.csv")
    return folder


@pytest.fixture(scope="session")
def doc_workspace(tmp_path_factory) -> Path:
    return build_workspace(tmp_path_factory.mktemp("docs-workspace"))


def _join_design_columns(path: Path) -> None:
    """The study's export with a two-stage design beside it: strata the regions, 10 PSUs per stratum (by the last
    digit of the age), weights larger for the young (sampled less)."""
    import pandas as pd

    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame["stratum"] = frame["region"]
    # By what the respondent answered, not by row: the rows' order follows the random response ids.
    frame["psu"] = [f"{region}-{int(age) % 10}" for region, age in zip(frame["region"], frame["age"])]
    frame["pw"] = frame["agecat"].map({"18-34": "140000", "35-64": "95000", "65+": "80000"})
    frame.to_csv(path, index=False)


@pytest.fixture(scope="session")
def doc_server(doc_workspace):
    """A server from a thread, on a database of its own (what the client's examples send does not move the figures
    the analysis examples show): examples/tax.yaml, open, and examples/panel.yaml with its wave 2026-11 open. Yields
    its base URL."""
    from deniable import storage
    from deniable.client import Survey
    from deniable.server import create_app
    from tests.support.serving import served

    database = str(doc_workspace / "server.db")
    with storage.Store(database) as store:
        store.add_survey(Survey.from_file(doc_workspace / "examples" / "tax.yaml"))
        store.add_survey(Survey.from_file(doc_workspace / "examples" / "panel.yaml"))
        store.open_wave("pulse", "2026-11")
    app = create_app({"DATABASE": database, "ADMIN_TOKEN": ADMIN_TOKEN, "TESTING": True, "RATELIMIT_ENABLED": False})
    with served(app) as base:
        yield base


@pytest.fixture(autouse=True)
def _in_the_workspace(request):
    """For a Markdown file's examples: the workspace as the current folder, and the names they use. Every other test
    asks for nothing here (no temporary folder made for it)."""
    if request.node.path.suffix != ".md":
        return
    monkeypatch, tmp_path = request.getfixturevalue("monkeypatch"), request.getfixturevalue("tmp_path")
    workspace = request.getfixturevalue("doc_workspace")
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("DENIABLE_DATABASE_URL", str(workspace / "deniable.db"))
    monkeypatch.setenv("MPLBACKEND", "Agg")  # a plot drawn, never shown
    namespace = request.getfixturevalue("doctest_namespace")
    namespace.update(ADMIN_TOKEN=ADMIN_TOKEN, app_data_dir=tmp_path)
    if "BASE" in getattr(getattr(request.node, "dtest", None), "docstring", ""):
        namespace["BASE"] = request.getfixturevalue("doc_server")


if __name__ == "__main__":
    import sys

    target = Path(sys.argv[1])
    target.mkdir(parents=True)
    print(build_workspace(target))
