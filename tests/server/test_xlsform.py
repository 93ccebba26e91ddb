"""XLSForm import and export. Forms are built here with openpyxl: no binary fixtures."""

import re

import pytest
from openpyxl import Workbook

from deniable.client import SpecError, Survey
from deniable.client.xlsform import read_xlsform, write_xlsform
from deniable.server.demo import demo_survey
from tests.conftest import EXAMPLES

SURVEY_COLUMNS = ["type", "name", "label::English (en)", "label::Español (es)", "hint::English (en)",
                  "hint::Español (es)", "required", "relevant", "constraint", "constraint_message::English (en)",
                  "privacy::design", "privacy::epsilon", "privacy::variant", "privacy::step", "garbling::answer",
                  "garbling::rate"]


def form(path, survey_rows, choices=(), settings=None, columns=SURVEY_COLUMNS):
    book = Workbook()
    sheet = book.active
    sheet.title = "survey"
    sheet.append(columns)
    for row in survey_rows:
        sheet.append([row.get(c) for c in columns])
    choice_sheet = book.create_sheet("choices")
    choice_sheet.append(["list_name", "name", "label::English (en)", "label::Español (es)"])
    for line in choices:
        choice_sheet.append(list(line))
    settings = settings or {"form_id": "health", "form_title": "Health and habits", "version": "2026-11",
                            "default_language": "English (en)"}
    settings_sheet = book.create_sheet("settings")
    settings_sheet.append(list(settings))
    settings_sheet.append(list(settings.values()))
    book.save(path)
    return path


def row(type_, name=None, en=None, es=None, **extra):
    cells = {"type": type_, "name": name, "label::English (en)": en, "label::Español (es)": es}
    cells.update({k.replace("__", "::"): v for k, v in extra.items()})
    return cells


CHOICES = [
    ("yn", "yes", "Yes", "Sí"), ("yn", "no", "No", "No"),
    ("region", "north", "North", "Norte"), ("region", "south", "South", "Sur"),
    ("freq", "never", "Never", "Nunca"), ("freq", "sometimes", "Sometimes", "A veces"), ("freq", "often", "Often", "A menudo"),
    ("drugs", "cannabis", "Cannabis", "Cannabis"), ("drugs", "cocaine", "Cocaine", "Cocaína"), ("drugs", "none", "None", "Ninguna"),
]

REALISTIC = [
    row("begin group", "about", "About you", "Sobre usted", **{"hint::English (en)": "Sent as given."}),
    row("note", "welcome", "Thank you for taking part.", "Gracias por participar."),
    row("select_one region", "region", "Where do you live?", "¿Dónde vive?", required="yes", privacy__design="none"),
    row("integer", "age", "How old are you?", "¿Qué edad tiene?", required="true()", constraint=". >= 18 and . <= 99",
        privacy__design="none", **{"constraint_message::English (en)": "18 to 99, please."}),
    row("select_one yn", "student", "Are you a student?", "¿Es estudiante?", privacy__design="none"),
    row("end group"),
    row("begin group", "habits", "Habits", "Hábitos", relevant="${age} >= 21 or ${region} = 'north'"),
    row("select_one yn", "smoked", "Have you smoked this month?", "¿Ha fumado este mes?", required="yes"),
    row("select_one freq", "drink", "How often do you drink?", "¿Con qué frecuencia bebe?", privacy__design="ordinal",
        privacy__epsilon=1),
    row("select_multiple drugs", "drugs", "Which have you tried?", "¿Cuáles ha probado?", privacy__design="unary",
        privacy__epsilon=2, privacy__variant="optimized", **{"hint::English (en)": "Tick all that apply."}),
    row("decimal", "units", "Units of alcohol a week?", "¿Unidades de alcohol por semana?",
        constraint=". >= 0 and . <= 20", privacy__design="laplace", privacy__epsilon=1, privacy__step=0.5),
    row("select_one yn", "cheated", "Have you cheated in an exam?", "¿Ha copiado en un examen?",
        relevant="selected(${student}, 'yes')", garbling__answer="yes", garbling__rate=0.4),
    row("select_one freq", "drive", "Driven after drinking?", "¿Conducido tras beber?", privacy__design="k_rr",
        privacy__epsilon="ln 3", relevant="not(${region} = 'south')"),
    row("end group"),
]


def test_a_realistic_two_language_form_with_groups_and_skip_logic_imports(tmp_path):
    spec = read_xlsform(form(tmp_path / "health.xlsx", REALISTIC, CHOICES))
    survey = Survey.from_dict(spec)
    assert (survey.id, survey.title, survey.version, survey.languages.codes) == ("health", "Health and habits", "2026-11", ["en", "es"])
    assert [s.id for s in survey.sections] == ["about", "habits"]
    assert survey.sections[0].intro_in("es") == "Sent as given."  # hint::es missing: falls back, with a warning
    types = {q.id: q.type for q in survey.questions.values()}
    assert types == {"region": "choice", "age": "number", "student": "yes_no", "smoked": "yes_no", "drink": "ordinal",
                     "drugs": "multi_select", "units": "number", "cheated": "yes_no", "drive": "choice"}
    assert survey.items[0].type == "note"
    assert survey.questions["region"].option_label("north", "es") == "Norte"
    assert survey.questions["age"].grid == (18, 99, 1) and survey.questions["age"].required is True
    assert survey.questions["units"].grid[2] == 0.5
    assert survey.questions["age"].constraint_message_in("en") == "18 to 99, please."
    assert spec["sections"][1]["relevant"] == "age >= 21 or region = 'north'"
    assert spec["sections"][1]["questions"][4]["relevant"] == "selected(student, 'yes')"
    assert spec["sections"][1]["questions"][5]["relevant"] == "not region = 'south'"
    assert survey.questions["drugs"].mechanism.design == "unary"
    # Safely Report's garbling: 'yes' reported with probability 0.4 when the truth is 'no', always when 'yes'
    assert spec["sections"][1]["questions"][4]["privacy"] == {"design": "forced_response", "truth": "3/5", "yes": "0.4", "no": 0}
    cheated = survey.questions["cheated"].mechanism
    assert cheated.probability("yes", "no") == pytest.approx(0.4) and cheated.probability("yes", "yes") == 1
    assert any("'cheated': ε is infinite" in w for w in survey.warnings)
    assert any("no 'es' translation" in w for w in survey.warnings)
    assert survey.shown({"region": "south", "age": 20}) == ["welcome", "region", "age", "student"]


def test_a_leaking_relevant_in_a_form_is_refused(tmp_path):
    rows = [row("select_one yn", "abroad", "Have you ever travelled abroad?", garbling__answer="yes", garbling__rate=0.3),
            row("select_one region", "where", "Where did you go?", privacy__design="k_rr", privacy__epsilon=1,
                relevant="${abroad} = 'yes'")]
    with pytest.raises(SpecError, match=r"question 'where'\.relevant: refers to 'abroad', a private \(randomized\) question"):
        read_xlsform(form(tmp_path / "leak.xlsx", rows, CHOICES))


def test_every_problem_of_a_form_is_reported_at_once_with_its_place(tmp_path):
    rows = [row("start", "started"), row("text", "name", "Your name?"), row("date", "born", "Birthday?"),
            row("geopoint", "where", "Location?"), row("calculate", "score"), row("begin repeat", "kids", "Children"),
            row("select_one yn", "x", "X?", relevant="string-length(${y}) > 3"),
            row("integer", "n", "How many?", constraint=". > 3"),
            row("select_one nolist", "z", "Z?"), row("image", "photo", "Photo?"),
            row("select_one yn", "g", "G?", **{"garbling::covariate": "block"})]
    columns = SURVEY_COLUMNS + ["garbling::covariate", "appearance"]
    rows.append({"type": "note", "name": "look", "label::English (en)": "Look", "appearance": "w2"})
    with pytest.raises(SpecError) as raised:
        read_xlsform(form(tmp_path / "bad.xlsx", rows, CHOICES, columns=columns))
    message = str(raised.value)
    assert message.startswith("bad.xlsx: 12 problems in the form:")
    for expected in ["survey sheet, row 2, column type: 'start': device and time metadata",
                     "row 3, column type: 'text': free-text and date answers would be stored exactly as typed",
                     "row 4, column type: 'date': free-text and date answers would be stored exactly as typed",
                     "row 5, column type: 'geopoint': a location would be stored exactly",
                     "row 6, column type: 'calculate': calculations run on the device",
                     "row 7, column type: 'begin repeat': repeats are not supported",
                     "row 8, column relevant: 'string-length(${y}) > 3'",
                     "row 9, column constraint: '. > 3': a number question needs its range",
                     "row 10, column type: 'select_one nolist': no choice list 'nolist'",
                     "row 11, column type: 'image': photos, recordings and files cannot be randomized",
                     "row 12, column garbling::covariate: 'block': block garbling needs a central coordinator",
                     "row 13, column appearance: 'w2': only 'likert' on a select_one is read"]:
        assert expected in message, expected


def test_a_spec_without_groups_and_in_one_language_imports_flat(tmp_path):
    columns = ["type", "name", "label", "required", "privacy::design", "privacy::epsilon"]
    rows = [{"type": "select_one yn", "name": "q1", "label": "Q1?", "required": "yes"},
            {"type": "select_one c", "name": "q2", "label": "Q2?", "privacy::design": "k_rr", "privacy::epsilon": 1}]
    book = Workbook()
    sheet = book.active
    sheet.title = "survey"
    sheet.append(columns)
    for r in rows:
        sheet.append([r.get(c) for c in columns])
    choices = book.create_sheet("choices")
    for line in [("list_name", "name", "label"), ("yn", "yes", "Yes"), ("yn", "no", "No"), ("c", "a", "a"), ("c", "b", "Bee")]:
        choices.append(list(line))
    book.save(tmp_path / "flat.xlsx")
    spec = read_xlsform(tmp_path / "flat.xlsx")
    assert spec["id"] == "flat" and "sections" not in spec and "languages" not in spec
    assert spec["questions"][1]["options"] == ["a", {"value": "b", "label": "Bee"}]


PANEL = Survey.from_file(EXAMPLES / "panel.yaml")


@pytest.mark.parametrize("survey", [demo_survey(), Survey.from_file(EXAMPLES / "tax.yaml"), PANEL,
                                    Survey.from_dict({**PANEL.to_dict(), "repeated": {"instant_epsilon": "ln 9"}})],
                         ids=["demo", "tax", "panel (repeated, max_epsilon)", "panel with instant_epsilon"])
def test_export_reads_back_to_the_same_hash(tmp_path, survey):
    write_xlsform(survey, tmp_path / "out.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "out.xlsx")).hash == survey.hash
    assert Survey.from_file(tmp_path / "out.xlsx").hash == survey.hash
    assert Survey.from_xlsform(tmp_path / "out.xlsx").hash == survey.hash


def test_the_examples_xlsform_is_the_demo_questionnaire():
    assert Survey.from_file(EXAMPLES / "questionnaire.xlsx").hash == demo_survey().hash


def test_a_generated_200_question_form_imports(tmp_path):
    rows = []
    for section in range(10):
        rows.append(row("begin group", f"s{section}", f"Section {section}", f"Sección {section}"))
        for i in range(20):
            n = section * 20 + i
            kind = ["select_one yn", "select_one freq", "select_multiple drugs", "integer"][n % 4]
            extra = {"constraint": ". >= 0 and . <= 10", "privacy__design": "laplace", "privacy__epsilon": 1} if kind == "integer" \
                else {"privacy__design": "k_rr", "privacy__epsilon": 1} if kind == "select_one freq" \
                else {"privacy__design": "unary", "privacy__epsilon": 2} if kind.startswith("select_multiple") else {}
            rows.append(row(kind, f"q{n}", f"Question {n}?", f"¿Pregunta {n}?", **extra))
        rows.append(row("end group"))
    spec = read_xlsform(form(tmp_path / "big.xlsx", rows, CHOICES))
    assert len(Survey.from_dict(spec).questions) == 200


def test_the_cli_imports_and_exports_and_refuses_cleanly(tmp_path, runner, db_path):
    from deniable.server.cli import main

    path = form(tmp_path / "health.xlsx", REALISTIC, CHOICES)
    imported = runner.invoke(main, ["survey", "import", str(path), "--output", str(tmp_path / "health.yaml")])
    assert imported.exit_code == 0, imported.output
    assert "WARNING: question 'cheated': ε is infinite" in imported.output
    expected = Survey.from_dict(read_xlsform(path)).hash
    assert Survey.from_file(tmp_path / "health.yaml").hash == expected
    assert runner.invoke(main, ["survey", "add", str(path), "--db", db_path]).exit_code == 0
    out = tmp_path / "again.xlsx"
    exported = runner.invoke(main, ["survey", "export", "health", "--format", "xlsform", "--output", str(out), "--db", db_path])
    assert exported.exit_code == 0, exported.output
    assert Survey.from_file(out).hash == expected
    not_a_form = tmp_path / "notes.xlsx"
    not_a_form.write_bytes(b"\x00\x01 not a zip")
    refused = runner.invoke(main, ["survey", "import", str(not_a_form)])
    assert refused.exit_code == 1 and "not an XLSForm workbook" in refused.output and "Traceback" not in refused.output
    missing = runner.invoke(main, ["survey", "export", "health", "--format", "xlsform", "--db", db_path])
    assert missing.exit_code == 1 and "--output FILE.xlsx is required" in missing.output


def test_designs_the_respondent_randomizes_read_from_and_write_to_a_form(tmp_path):
    columns = SURVEY_COLUMNS + ["privacy::p", "privacy::truth", "privacy::yes", "privacy::no",
                                "privacy::companion::English (en)", "privacy::companion::Español (es)",
                                "privacy::randomizer::text::English (en)", "privacy::randomizer::text::Español (es)"]
    rows = [row("select_one yn", "took", "Have you taken supplies home?", "¿Se ha llevado material a casa?",
                privacy__design="crosswise", privacy__p="1/4",
                **{"privacy::companion::English (en)": "Is your mother's birthday in January, February or March?",
                   "privacy::companion::Español (es)": "¿Nació su madre en enero, febrero o marzo?"}),
            row("select_one yn", "lied", "Have you lied on a timesheet?", "¿Ha mentido en un parte de horas?",
                privacy__design="forced_response", privacy__truth="3/4", privacy__yes="1/6", privacy__no="1/12",
                **{"privacy::randomizer::text::English (en)": "If your mother's birthday is in January or February, answer yes.",
                   "privacy::randomizer::text::Español (es)": "Si su madre nació en enero o febrero, responda sí."})]
    spec = read_xlsform(form(tmp_path / "conduct.xlsx", rows, CHOICES, columns=columns))
    survey = Survey.from_dict(spec)
    took, lied = survey.questions["took"].mechanism, survey.questions["lied"].mechanism
    assert took.design == "crosswise" and took.respondent_randomizes and took.exp_epsilon == 3
    assert took.params["companion"]["es"] == "¿Nació su madre en enero, febrero o marzo?"
    assert lied.params["randomizer"]["text"]["en"].startswith("If your mother's birthday")
    write_xlsform(survey, tmp_path / "out.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "out.xlsx")).hash == survey.hash
    both = [dict(rows[0], **{"privacy::companion": "Plain?"})]
    with pytest.raises(SpecError, match=r"privacy::companion.*not both"):
        read_xlsform(form(tmp_path / "both.xlsx", both, CHOICES, columns=columns + ["privacy::companion"]))


@pytest.mark.serial  # a CPU-time bound: measured alone (scripts/test.sh runs these after the rest)
def test_a_zip_bomb_is_refused_from_the_zip_directory_before_parsing(tmp_path):
    """A workbook whose sheet unpacks to 200 MiB (a few hundred KiB on disk), and one whose single row has
    three million cells: refused in well under a second of CPU, nothing parsed."""
    import time
    import zipfile

    base = form(tmp_path / "base.xlsx", [row("select_one yn", "q", "Q?", "¿Q?")], CHOICES)
    bomb = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(base) as source, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as target:
        for part in source.infolist():
            data = source.read(part)
            if part.filename == "xl/worksheets/sheet1.xml":
                data = data + b" " * (200 * 2**20)
            target.writestr(part, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    wide = tmp_path / "wide.xlsx"
    with zipfile.ZipFile(base) as source, zipfile.ZipFile(wide, "w", zipfile.ZIP_DEFLATED) as target:
        for part in source.infolist():
            data = source.read(part)
            if part.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"</sheetData>", b"<row r=\"3\">" + b"<c t=\"n\"><v>1</v></c>" * 3_000_000 + b"</row></sheetData>")
            target.writestr(part, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    for path in (bomb, wide):
        assert path.stat().st_size < 4 * 2**20
        start = time.process_time()
        with pytest.raises(SpecError, match="unpacks to"):
            read_xlsform(path)
        assert time.process_time() - start < 1.0
    from click.testing import CliRunner

    from deniable.server.cli import main

    refused = CliRunner().invoke(main, ["survey", "check", str(bomb)])
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert refused.output.count(str(bomb)) == 1, refused.output  # the file named once, not twice


def _rewritten(base, target, part_name: str, change):
    import zipfile

    with zipfile.ZipFile(base) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as written:
        for part in source.infolist():
            data = source.read(part)
            written.writestr(part, change(data) if part.filename == part_name else data,
                             compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return target


@pytest.mark.serial  # a CPU-time bound: measured alone (scripts/test.sh runs these after the rest)
def test_an_entity_bomb_and_a_flood_of_styles_are_refused_before_parsing(tmp_path):
    """A sheet whose XML declares nested entities (a "billion laughs": it had ended in a traceback) and a workbook
    with 15 MiB of formatting (16 s to read): refused naming the part, in well under a second of CPU."""
    import time

    base = form(tmp_path / "base.xlsx", [row("select_one yn", "q", "Q?", "¿Q?")], CHOICES)
    laughs = b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">' + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10) for i in range(1, 10)) + b"]>"
    bomb = _rewritten(base, tmp_path / "laughs.xlsx", "xl/worksheets/sheet1.xml",
                      lambda data: laughs + re.sub(rb"^<\?xml[^>]*\?>", b"", data).replace(b"</sheetData>",
                                                                                           b"</sheetData><!-- &lol9; -->"))
    styles = _rewritten(base, tmp_path / "styles.xlsx", "xl/styles.xml",
                        lambda data: data.replace(b"</styleSheet>", b"<!-- " + b"x" * (15 * 2**20) + b" --></styleSheet>"))
    for path, words in ((bomb, "declares a document type or entities"), (styles, "its formatting (xl/styles.xml)")):
        start = time.process_time()
        with pytest.raises(SpecError, match=re.escape(words)):
            read_xlsform(path)
        assert time.process_time() - start < 1.0
    assert read_xlsform(base)["questions"][0]["id"] == "q"  # the workbook as written reads


def test_a_settings_sheet_says_repeated_yes_or_no(tmp_path):
    from openpyxl import load_workbook

    write_xlsform(PANEL, tmp_path / "panel.xlsx")
    book = load_workbook(tmp_path / "panel.xlsx")
    sheet = book["settings"]
    header = [cell.value for cell in sheet[1]]
    sheet.cell(row=2, column=header.index("repeated") + 1, value="sometimes")
    book.save(tmp_path / "bad.xlsx")
    with pytest.raises(SpecError, match="repeated.*must be yes or no"):
        read_xlsform(tmp_path / "bad.xlsx")


def test_every_design_in_the_registry_round_trips_through_a_form(tmp_path):
    """Every design the spec accepts (the shared test vectors hold each), with a split ballot and a known-share
    control beside them, the examples among them: exported, imported, the same spec hash. Before, a cheating-detection
    or lie-detector question crashed the export (its groups are a mapping) and a split ballot and a control were
    dropped silently (0b9ac6eb2287 → 49513eea2670)."""
    import json
    from pathlib import Path

    from deniable.client.designs import DESIGNS

    root = Path(__file__).resolve().parents[2]
    specs = [vector["spec"] for vector in json.loads((root / "tests" / "vectors" / "channels.json").read_text())]
    specs += [Survey.from_file(path).to_dict() for path in sorted((root / "examples").glob("*.yaml"))]
    specs.append({"id": "extras", "title": "Split ballot and control", "questions": [
        {"id": "dodged", "type": "yes_no", "text": "Dodged?", "split_ballot": {"direct": "1/4"},
         "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}},
        {"id": "atlantis", "type": "yes_no", "text": "Visited Atlantis?", "control": {"share": 0},
         "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]})
    covered = set()
    for position, spec in enumerate(specs):
        survey = Survey.from_dict(spec)
        path = tmp_path / f"form{position}.xlsx"
        write_xlsform(survey, path)
        back = read_xlsform(path)
        back = back if isinstance(back, Survey) else Survey.from_dict(back)
        assert back.hash == survey.hash, spec["id"]
        covered |= {q.mechanism.design for q in survey.questions.values() if q.is_private}
    assert set(DESIGNS) <= covered


def test_a_survey_the_form_cannot_carry_is_refused_before_a_file_is_left(tmp_path, monkeypatch):
    """Whatever the writer would drop is refused with the first difference named, and no file is left behind."""
    from deniable.client import xlsform_writer

    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    monkeypatch.setattr(xlsform_writer, "STRUCTURED_COLUMNS", ("control",))  # as before: split ballots not written
    target = tmp_path / "form.xlsx"
    with pytest.raises(SpecError, match=r"cannot be written as an XLSForm without changing it \(survey\.questions\."
                                        r"dodged\.split_ballot: \{'direct': '1/4'\} would read back as None\)"):
        write_xlsform(survey, target)
    assert not target.exists()


@pytest.mark.parametrize("base", ["consent", "form_title", "description"])
def test_a_settings_text_with_and_without_a_language_is_a_problem_not_a_traceback(tmp_path, runner, base):
    """`consent` beside `consent::Español (es)` (either order) names the mix, as the survey sheet does for a label."""
    from deniable.server.cli import main

    for columns in ((base, f"{base}::Español (es)"), (f"{base}::Español (es)", base)):
        settings = {"form_id": "health", "form_title": "Health", "default_language": "English (en)",
                    **{column: "Texto" if "::" in column else "Text" for column in columns}}
        path = form(tmp_path / "mixed.xlsx", REALISTIC, CHOICES, settings=settings)
        with pytest.raises(SpecError, match=rf"mixes '{base}' with '{base}::Language' columns; give every {base} a language"):
            read_xlsform(path)
        imported = runner.invoke(main, ["survey", "import", str(path)])
        assert imported.exit_code == 1 and "Traceback" not in imported.output and f"mixes '{base}'" in imported.output
