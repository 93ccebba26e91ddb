"""The JavaScript examples of README.md and docs/*.md run in Node against the docs' server (`doc_examples.doc_server`,
examples/tax.yaml): the module imported from this checkout wherever an example names it ("deniable", "/js/deniable.js",
the repository path), the example's server address the docs' server, and the names an app would have (the spec it
fetched, an invitation token: none, the survey being open) defined first. An example that throws fails."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from deniable.client import Survey

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "src" / "deniable" / "client" / "js" / "deniable.js"
FENCE = re.compile(r"^```js\n(.*?)^```$", re.S | re.M)


def examples() -> list[tuple[str, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        found += [(f"{path.name}:{number}", code) for number, code in enumerate(FENCE.findall(path.read_text()), 1)]
    return found


def test_the_docs_have_javascript_examples():
    assert len(examples()) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("where, code", examples(), ids=[where for where, _ in examples()])
def test_a_javascript_example_runs(where, code, doc_server, node, tmp_path):
    spec = Survey.from_file(ROOT / "examples" / "tax.yaml").to_dict()
    code = re.sub(r'from "(deniable|/js/deniable\.js|\./src/deniable/client/js/deniable\.js)"', f'from "{MODULE.as_uri()}"',
                  code).replace("https://survey.example.org", doc_server)
    prelude = f"const specObject = {json.dumps(spec)};\nconst token = undefined, invitationToken = undefined;\n"
    imports = "".join(line + "\n" for line in code.splitlines() if line.startswith("import "))
    body = "".join(line + "\n" for line in code.splitlines() if not line.startswith("import "))
    script = tmp_path / "example.mjs"
    script.write_text(imports + prelude + body)
    done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{where}:\n{done.stderr}"
