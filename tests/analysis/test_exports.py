"""`deniable.analysis` exports what its stub (`__init__.pyi`) lists, each name from the module the stub names, loaded
on first use: importing the package loads none of scipy, pandas or statsmodels."""

import ast
import subprocess
import sys

import deniable.analysis as analysis
from tests.conftest import ROOT


def test_every_name_the_stub_lists_is_exported_from_its_module():
    stub = ast.parse((ROOT / "src/deniable/analysis/__init__.pyi").read_text(encoding="utf-8"))
    homes = {alias.name: node.module for node in stub.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    declared = next(node.value for node in stub.body if isinstance(node, ast.Assign)
                    and node.targets[0].id == "__all__")
    assert sorted(homes) == sorted(ast.literal_eval(declared)) == sorted(analysis.__all__)
    for name, module in homes.items():
        value = getattr(analysis, name)
        assert value is getattr(sys.modules[f"deniable.analysis.{module}"], name)


def test_importing_the_package_loads_no_heavy_library():
    code = ("import sys, deniable.analysis; "
            "print(sorted(m for m in ('scipy', 'pandas', 'statsmodels') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "[]"
