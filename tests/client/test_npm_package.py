"""The JavaScript client as an npm package: packed, installed into a fresh project, imported from Node
without warnings, and type-checked from TypeScript against its declarations.

Needs node and npm (and the npm registry, for typescript: a dev dependency of this test only)."""

import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "deniable" / "client" / "js"
TYPESCRIPT = "typescript@5"

CONSUMER = """
import { Survey, submit, fetchSurvey, postResponse, newIdempotencyKey, SubmitError, AnswerError,
         type Reports, type ResponseBody, type Mechanism } from "deniable";
import french from "deniable/words/fr";

const survey: Survey = Survey.fromSpec({ id: "tax", title: "Tax", questions: [
  { id: "dodged", type: "yes_no", text: "Ever?" },
  { id: "hours", type: "number", text: "Hours?", min: 0, max: 40, step: 5, privacy: { design: "laplace", epsilon: 1 } }] });
const reports: Reports = survey.randomize({ dodged: "yes", hours: 10 });
const mechanism: Mechanism = survey.questions["dodged"].mechanism;
const epsilon: number = mechanism.epsilon + survey.epsilon;
const [numerator, denominator]: [bigint, bigint] = mechanism.probability("yes", "no");
const body: ResponseBody = { spec_hash: "h", idempotency_key: newIdempotencyKey(), reports };
async function send(): Promise<void> {
  try {
    const { acknowledgement } = await submit("https://survey.example.org", "tax", { dodged: "no" }, { retries: 1, token: null });
    await postResponse("https://survey.example.org", "tax", body, { backoffMs: 10 });
    const fetched = await fetchSurvey("https://survey.example.org", "tax");
    console.log(acknowledgement, fetched.hash.length, fetched.survey.id);
  } catch (error) {
    if (error instanceof SubmitError) console.log(error.status ?? "offline", error.field);
    if (error instanceof AnswerError) console.log(error.question, error.allowed);
  }
}
const statement: string = survey.questions["dodged"].privacyStatement(0.02, french);
console.log(epsilon, numerator + denominator, send, statement);
"""

# A wrong use the declarations must catch: if this type-checks, the types say nothing.
MISUSE = """
import { Survey } from "deniable";
const survey = Survey.fromSpec({});
const reports: number = survey.randomize({ dodged: "yes" });
survey.randomise({});
"""


def _npm(*args, cwd, timeout=300):
    return subprocess.run(["npm", *args, "--no-audit", "--no-fund", "--loglevel=error"], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh project with the packed tarball and typescript installed."""
    if not shutil.which("npm"):
        if os.environ.get("CI"):
            pytest.fail("npm is required in CI (apt-get install npm)")
        pytest.skip("no npm on this machine")
    packed = tmp_path_factory.mktemp("packed")
    result = _npm("pack", "--json", "--pack-destination", str(packed), cwd=PACKAGE)
    assert result.returncode == 0, result.stderr
    [info] = json.loads(result.stdout)
    tarball = packed / info["filename"]
    project = tmp_path_factory.mktemp("consumer")
    (project / "package.json").write_text(json.dumps({"name": "consumer", "private": True, "type": "module"}))
    result = _npm("install", str(tarball), TYPESCRIPT, cwd=project)
    assert result.returncode == 0, result.stderr
    return {"project": project, "tarball": tarball, "info": info}


def test_the_tarball_holds_the_module_its_types_and_readme_and_nothing_else(installed):
    modules = sorted(f"package/{path.relative_to(PACKAGE)}" for path in (PACKAGE / "src").rglob("*.js"))
    assert "package/src/words/fr.js" in modules  # the page words of each shipped language
    with tarfile.open(installed["tarball"]) as tar:
        names = sorted(tar.getnames())
    assert names == sorted(["package/README.md", "package/deniable.d.ts", "package/words.d.ts", "package/deniable.js",
                            "package/package.json", *modules])
    # one source: the files the server serves to browsers are the files in the package
    with tarfile.open(installed["tarball"]) as tar:
        for name in ["package/deniable.js", *modules]:
            assert tar.extractfile(name).read() == (PACKAGE / name.removeprefix("package/")).read_bytes()


def test_the_package_version_follows_the_python_distribution():
    python = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert json.loads((PACKAGE / "package.json").read_text())["version"] == python


def test_node_imports_the_installed_package_without_a_warning(installed):
    script = ("import { Survey } from 'deniable';"
              "const s = Survey.fromSpec({id: 't', title: 'T', questions: [{id: 'q', type: 'yes_no', text: '?'}]});"
              "console.log(JSON.stringify(s.randomize({q: 'yes'})));")
    result = subprocess.run(["node", "--input-type=module", "-e", script], cwd=installed["project"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no MODULE_TYPELESS_PACKAGE_JSON, no experimental warnings
    assert json.loads(result.stdout)["q"] in ("yes", "no")


def test_an_embedder_states_the_guarantee_in_another_language(installed):
    """The page words ship as "deniable/words/<code>" (not loaded by "deniable" itself): the statement in French is the
    Python client's, figure for figure."""
    script = ("import { Survey } from 'deniable'; import fr from 'deniable/words/fr';"
              "const s = Survey.fromSpec({id: 't', title: 'T', questions: [{id: 'q', type: 'yes_no', text: '?'}]});"
              "console.log(s.questions.q.privacyStatement(0.02, fr));")
    result = subprocess.run(["node", "--input-type=module", "-e", script], cwd=installed["project"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    from deniable.client import Survey, catalogue

    survey = Survey.from_dict({"id": "t", "title": "T", "questions": [{"id": "q", "type": "yes_no", "text": "?"}]})
    assert result.stdout.strip() == survey.questions["q"].privacy_statement(words=catalogue.messages("fr"))
    assert "ε = 1,1" in result.stdout


def test_a_commonjs_consumer_requires_the_package(installed):
    """No top-level await: require() of the ES module works (Node ≥ 20.19 / 22.12), no crash with
    ERR_REQUIRE_ASYNC_MODULE."""
    script = ("const { Survey, Memo } = require('deniable');"
              "const s = Survey.fromSpec({id: 't', title: 'T', questions: [{id: 'q', type: 'yes_no', text: '?'}]});"
              "console.log(JSON.stringify({report: s.randomize({q: 'yes'}).q, memo: typeof Memo}));")
    result = subprocess.run(["node", "--input-type=commonjs", "-e", script], cwd=installed["project"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "ERR_REQUIRE" not in result.stderr, result.stderr
    out = json.loads(result.stdout)
    assert out["report"] in ("yes", "no") and out["memo"] == "function"


def test_every_runtime_export_is_declared(installed):
    listed = subprocess.run(["node", "--input-type=module", "-e",
                             "import * as d from 'deniable'; console.log(JSON.stringify(Object.keys(d)))"],
                            cwd=installed["project"], capture_output=True, text=True, timeout=60)
    exported = set(json.loads(listed.stdout))
    declarations = (PACKAGE / "deniable.d.ts").read_text()
    declared = set(re.findall(r"^export (?:declare )?(?:abstract )?(?:class|function|const) (\w+)", declarations, re.M))
    assert exported == declared


def _tsc(project: Path, source: str):
    (project / "consumer.ts").write_text(source)
    return subprocess.run([str(project / "node_modules" / ".bin" / "tsc"), "--noEmit", "--strict", "--target", "es2022",
                           "--module", "nodenext", "--moduleResolution", "nodenext", "consumer.ts"],
                          cwd=project, capture_output=True, text=True, timeout=120)


def test_a_typescript_consumer_type_checks_against_the_declarations(installed):
    result = _tsc(installed["project"], CONSUMER)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_declarations_catch_a_wrong_use(installed):
    result = _tsc(installed["project"], MISUSE)
    assert result.returncode != 0
    assert "not assignable to type 'number'" in result.stdout and "randomise" in result.stdout
