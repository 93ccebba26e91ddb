"""Write client/js/src/statuses.js from client/statuses.py's STATUS_TABLE: what each answer to a sent response means
to a client, one table for both clients (a test checks the module matches).

    python scripts/statuses_js.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.client.statuses import STATUS_TABLE  # noqa: E402

TARGET = ROOT / "src" / "deniable" / "client" / "js" / "src" / "statuses.js"


def render() -> str:
    rows = ",\n".join("  " + json.dumps({"status": status, "field": field, "kind": kind, "retry": retry, "meaning": meaning},
                                        ensure_ascii=False)
                      for status, field, kind, retry, meaning in STATUS_TABLE)
    return ("// What the server's answer to a sent response means to the client, written by scripts/statuses_js.py from\n"
            "// client/statuses.py: do not edit. A response is kept (in an outbox) until an answer whose retry is false.\n"
            f"export const STATUS_TABLE = Object.freeze([\n{rows},\n].map(Object.freeze));\n")


def main():
    TARGET.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()
