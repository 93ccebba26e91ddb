"""A process that only stores and reads (the server's respondent pages, `deniable survey list`) loads neither pandas nor
numpy (0.3 s of CPU and 45 MB each) nor sqlite-utils: the engine speaks to SQLite through the standard library, and
nothing is hidden from the import system to get there."""

import json
import subprocess
import sys


def run(code: str) -> dict:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout)


def test_a_process_that_opens_a_sqlite_store_loads_neither_pandas_nor_numpy_nor_sqlite_utils(tmp_path):
    found = run(
        "import json, sys; finders = list(sys.meta_path)\n"
        "from deniable import storage; from deniable.client import Survey\n"
        "survey = Survey.from_dict({'id': 's', 'title': 't', 'questions': [{'id': 'q', 'text': '?', 'type': 'yes_no'}]})\n"
        f"with storage.Store({str(tmp_path / 'x.db')!r}) as store: store.add_survey(survey); store.get_survey('s')\n"
        "loaded = sorted(m for m in ('pandas', 'numpy', 'sqlite_utils') if m in sys.modules)\n"
        "print(json.dumps({'loaded': loaded, 'finders_unchanged': sys.meta_path == finders}))")
    assert found == {"loaded": [], "finders_unchanged": True}
