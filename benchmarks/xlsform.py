"""Import time of a generated 200-question, two-language XLSForm (10 groups, skip logic), and of
`survey check` on the spec it gives. Run: python benchmarks/xlsform.py"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from openpyxl import Workbook

from deniable.client import Survey
from deniable.client.xlsform import read_xlsform

COLUMNS = ["type", "name", "label::English (en)", "label::Español (es)", "relevant", "constraint", "privacy::design",
           "privacy::epsilon"]


def generated_form(path: Path, questions: int = 200) -> Path:
    book = Workbook()
    survey = book.active
    survey.title = "survey"
    survey.append(COLUMNS)
    survey.append(["begin group", "start", "Start", "Inicio"])
    survey.append(["select_one region", "region", "Region?", "¿Región?", None, None, "none", None])
    survey.append(["end group"])
    for n in range(questions - 1):
        if n % 20 == 0:
            if n:
                survey.append(["end group"])
            survey.append(["begin group", f"s{n // 20}", f"Section {n // 20}", f"Sección {n // 20}",
                           "${region} = 'north'" if n % 40 == 20 else None])
        kind = ("select_one yn", "select_one freq", "select_multiple freq", "integer")[n % 4]
        design = {"select_one yn": (None, None), "select_one freq": ("k_rr", 1), "select_multiple freq": ("unary", 2),
                  "integer": ("laplace", 1)}[kind]
        survey.append([kind, f"q{n}", f"Question {n}?", f"¿Pregunta {n}?", None,
                       ". >= 0 and . <= 20" if kind == "integer" else None, *design])
    survey.append(["end group"])
    choices = book.create_sheet("choices")
    choices.append(["list_name", "name", "label::English (en)", "label::Español (es)"])
    for row in [("yn", "yes", "Yes", "Sí"), ("yn", "no", "No", "No"), ("region", "north", "North", "Norte"),
                ("region", "south", "South", "Sur"), ("freq", "never", "Never", "Nunca"),
                ("freq", "sometimes", "Sometimes", "A veces"), ("freq", "often", "Often", "A menudo")]:
        choices.append(list(row))
    settings = book.create_sheet("settings")
    settings.append(["form_id", "form_title", "default_language"])
    settings.append(["big", "A big form", "English (en)"])
    book.save(path)
    return path


def main():
    with tempfile.TemporaryDirectory() as folder:
        path = generated_form(Path(folder) / "big.xlsx")
        imports, checks = [], []
        for _ in range(5):
            start = time.perf_counter()
            spec = read_xlsform(path)
            imports.append(time.perf_counter() - start)
            start = time.perf_counter()
            survey = Survey.from_dict(spec)
            survey.privacy_summary()
            checks.append(time.perf_counter() - start)
        print(f"200-question XLSForm ({len(survey.questions)} questions, {len(survey.sections)} sections, 2 languages)")
        print(f"  import (read_xlsform, includes validation): median {statistics.median(imports) * 1000:.0f} ms, "
              f"worst {max(imports) * 1000:.0f} ms")
        print(f"  validate + privacy summary of the spec: median {statistics.median(checks) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
