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


def _circles(edges: dict) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_its_way_back_to_itself():
    """No circle of imports inside a room, also through an import inside a function (grimp sees those): following
    `deniable estimate` through a circle, a reader keeps coming back to a module already left."""
    import grimp

    graph = grimp.build_graph("deniable", cache_dir=None)  # read afresh: a cache kept what the files no longer say
    modules = [module for module in graph.modules if module.count(".") >= 2]  # the rooms' modules, not their packages
    edges = {module: {other for other in graph.find_modules_directly_imported_by(module) if other in modules}
             for module in modules}
    assert _circles(edges) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
