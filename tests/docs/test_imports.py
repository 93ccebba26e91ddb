"""Imports a reader and a tool can follow: at the top of the module, unless putting one inside a function buys
something, and then the import says what (a start-up measured by `benchmarks/startup.py`, an optional extra, a
front door on a data object whose functions read it). An import inside a function hides an arrow from IDEs, type
checkers and the structure tools; one without its reason is one nobody can tell is still needed."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "deniable"


def _unexplained(path: Path, root: Path = PACKAGE.parent) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []

    def explained(number: int) -> bool:
        """A comment on the import's line, or on a line above it among the imports (and blank lines) it stands with."""
        index = number - 1
        if "#" in lines[index]:
            return True
        index -= 1
        while index >= 0:
            line = lines[index].strip()
            if line.startswith("#"):
                return True
            if line and not line.startswith(("import ", "from ")):
                return False
            if "#" in line:
                return True
            index -= 1
        return False

    def visit(node, inside_function: bool):
        for child in ast.iter_child_nodes(node):
            if inside_function and isinstance(child, (ast.Import, ast.ImportFrom)) and not explained(child.lineno):
                found.append(f"{path.relative_to(root)}:{child.lineno}: {lines[child.lineno - 1].strip()}")
            visit(child, inside_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(text), False)
    return found


def test_every_import_inside_a_function_says_why():
    unexplained = [line for path in sorted(PACKAGE.rglob("*.py")) for line in _unexplained(path)]
    assert unexplained == [], "imports inside functions without their reason (move them to the top, or say why):\n" + \
        "\n".join(unexplained)


def test_the_rule_sees_an_unexplained_import(tmp_path):
    module = tmp_path / "deniable" / "example.py"
    module.parent.mkdir()
    module.write_text("import os\n\n\ndef f():\n    import json\n\n    # scipy: 0.3 s\n    import scipy\n"
                      "    import numpy  # numpy\n    return json\n", encoding="utf-8")
    assert _unexplained(module, tmp_path) == ["deniable/example.py:5: import json"]
