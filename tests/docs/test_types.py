"""Types a user's checker sees: the package says it is typed (PEP 561's ``py.typed``, in the wheel too), and a user's
own code that misuses what the client and the analysis return is flagged by mypy, as it would be in their editor (the
annotations are read, not taken as Any). The package's own check is scripts/suite.sh's ``mypy``."""

import fcntl
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]

USER_CODE = '''
from deniable.client import Survey
from deniable.analysis import estimate, load

survey = Survey.from_dict({})
hashed: int = survey.hash
data = load("survey.csv", spec="survey.yaml")
level: str = estimate(data, "dodged").level
fine: float = estimate(data, "dodged").level
'''


def test_a_users_checker_reads_the_annotations(tmp_path):
    (tmp_path / "user.py").write_text(USER_CODE)
    out, _, status = api.run([str(tmp_path / "user.py"), "--cache-dir", str(tmp_path / "cache"), "--no-error-summary",
                              "--ignore-missing-imports"])
    flagged = sorted(line.split(": error: ")[1] for line in out.splitlines() if ": error: " in line)
    assert status == 1 and flagged == [
        'Incompatible types in assignment (expression has type "float", variable has type "str")  [assignment]',
        'Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]'], out


@pytest.mark.slow
def test_the_wheel_says_the_package_is_typed(tmp_path):
    uv = ROOT / ".uv" / "bin" / "uv"
    with open(ROOT / ".uv" / "extras.lock", "w") as lock:  # building writes into the checkout, as the extras' installs do
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run([str(uv), "build", "--wheel", "--out-dir", str(tmp_path), "--python", sys.executable,
                               str(ROOT)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("deniable-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "deniable/py.typed" in names and "deniable/analysis/__init__.pyi" in names
