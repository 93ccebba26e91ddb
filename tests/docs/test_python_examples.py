"""Every Python example in README.md and docs/*.md runs, its output checked: each is a ```pycon doctest that pytest
collects (``--doctest-glob=*.md``, README.md among the test paths) and runs in the docs' workspace
(`tests/support/doc_examples.py`). A ```python block would be read and never run, so there are none."""

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_python_block_goes_unrun():
    unrun = [f"{path.name}:{text.count(chr(10), 0, match.start()) + 1}" for path in DOCUMENTS
             for text in [path.read_text()] for match in re.finditer(r"^```(?:python|py)$", text, re.M)]
    assert unrun == [], f"write these as ```pycon doctests: {unrun}"


def test_every_doctest_block_is_one_doctest_reads_whole():
    for path in DOCUMENTS:
        for block in re.findall(r"^```pycon\n(.*?)^```$", path.read_text(), re.S | re.M):
            assert block.startswith(">>> "), (path.name, block[:60])
            # doctest reads an example's output up to a blank line: without one the fence would be output
            assert block.endswith("\n\n"), (path.name, block[-80:])


def test_the_readme_is_among_the_test_paths():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "README.md" in options["testpaths"] and "--doctest-glob=*.md" in options["addopts"]
    assert sum(path.read_text().count(">>> ") for path in DOCUMENTS) > 80
