"""Write client/js/src/words/<code>.js from client/words/<code>.json: the page words of each shipped language as an
ES module, for the JS client's statements (the JSON tables are the one source; a test checks the modules match).

    python scripts/words_js.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.client import catalogue  # noqa: E402

FOLDER = ROOT / "src" / "deniable" / "client" / "js" / "src" / "words"


def render(code: str) -> str:
    table = json.dumps(catalogue.shipped(code), ensure_ascii=False, indent=1)
    return (f"// Page words in {code!r}, written by scripts/words_js.py from client/words/{code}.json: do not edit.\n"
            f"export default Object.freeze({table});\n")


def main():
    FOLDER.mkdir(exist_ok=True)
    for code in catalogue.SHIPPED:
        FOLDER.joinpath(f"{code}.js").write_text(render(code), encoding="utf-8")


if __name__ == "__main__":
    main()
