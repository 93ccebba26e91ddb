"""Opening a SQLite store loads sqlite-utils without the pandas and numpy it would import when installed: a process
that only stores and reads (the server's respondent pages, `deniable survey list`) pays neither (0.3 s of CPU and
45 MB each); one that loaded them already keeps them, for sqlite-utils too."""

import json
import subprocess
import sys
import threading

import pytest

from deniable.storage import engines


def run(code: str) -> dict:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout)


def test_a_process_that_opens_a_sqlite_store_loads_neither_pandas_nor_numpy(tmp_path):
    found = run(
        "import json, sys; from deniable import storage; from deniable.client import Survey\n"
        "survey = Survey.from_dict({'id': 's', 'title': 't', 'questions': [{'id': 'q', 'text': '?', 'type': 'yes_no'}]})\n"
        f"with storage.Store({str(tmp_path / 'x.db')!r}) as store: store.add_survey(survey); store.get_survey('s')\n"
        "loaded = sorted(m for m in ('pandas', 'numpy') if m in sys.modules)\n"
        "finders = [type(f).__name__ for f in sys.meta_path]\n"
        "import numpy, pandas, sqlite_utils.db\n"  # nothing is left refused: the program may load them later
        "print(json.dumps({'loaded': loaded, 'finders': finders, 'sqlite_utils_pandas': sqlite_utils.db.pd is not None}))")
    assert found["loaded"] == []
    assert "_WithoutDataFrames" not in found["finders"]
    assert found["sqlite_utils_pandas"] is False


def test_a_program_that_loaded_pandas_first_keeps_it_for_sqlite_utils(tmp_path):
    found = run(
        "import json, pandas; from deniable import storage\n"
        f"storage.Store({str(tmp_path / 'x.db')!r}).close()\n"
        "import sqlite_utils.db\n"
        "print(json.dumps({'pandas': sqlite_utils.db.pd is pandas}))")
    assert found["pandas"] is True


def test_only_the_importing_thread_is_refused():
    finder = engines._WithoutDataFrames()
    with pytest.raises(ImportError, match="not loaded for sqlite-utils"):
        finder.find_spec("pandas.core")
    assert finder.find_spec("sqlite_utils") is None  # everything else is found as usual
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(finder.find_spec("numpy")))
    thread.start()
    thread.join()
    assert elsewhere == [None]  # another thread importing numpy meanwhile is not refused
