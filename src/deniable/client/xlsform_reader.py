"""XLSForm in: `read_form` turns a form into a deniable spec (a dict for `Survey`), reporting every problem of the
form at once with its sheet, row, column and value (cells: `xlsform_cells`; privacy columns: `xlsform_privacy`).
docs/questionnaires.md has the mapping table."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from . import catalogue, skiplogic
from .errors import SpecError
from .xlsform_cells import _cell_text, _json_cell, _language, _Problems
from .xlsform_privacy import _privacy

#: Columns of the survey sheet this reader understands (besides label::, hint::, privacy:: ...).
_SURVEY_COLUMNS = {"type", "name", "label", "hint", "required", "relevant", "constraint", "constraint_message",
                   "split_ballot", "control", "appearance", "parameters", "check", "bins"}
#: Columns whose cell is a mapping written as JSON text: a split ballot, a known-share control.
_JSON_COLUMNS = ("split_ballot", "control")
_LOCALIZED = ("label", "hint", "constraint_message")
#: Rows read from any one sheet (a survey has at most 1000 items; choices lists share a sheet)
#: and the size of the workbook file: beyond them the form is refused before it is read on.
MAX_SHEET_ROWS = 20_000
MAX_WORKBOOK_BYTES = 4 * 1024 * 1024
#: What a workbook may unpack to, read from its zip directory before anything is parsed: a 0.87 MB file
#: unpacked to half a gigabyte (a zip bomb). A 20,000-row form unpacks to a few MiB.
MAX_UNPACKED_BYTES = 64 * 1024 * 1024
MAX_PART_BYTES = 16 * 1024 * 1024
MAX_PARTS = 1000
#: The formatting part (xl/styles.xml): a questionnaire's is a few KiB; 15 MiB of styles took openpyxl 16 s to read.
MAX_STYLES_BYTES = 1024 * 1024
#: What no workbook Excel, LibreOffice or ODK tools write holds, and an XML entity bomb needs.
_DECLARATIONS = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
_SETTINGS = {"form_id", "form_title", "version", "default_language", "description", "layout", "max_epsilon", "repeated",
             "sample", "opens", "closes", "completion_code", "completion_url", "consent", "quotas",
             "randomize_sections", "invitations", "quality",
             "instant_epsilon"}
_METADATA = {"start", "end", "today", "deviceid", "phonenumber", "username", "simserial", "subscriberid",
             "email", "audit", "start-geopoint", "background-audio"}
_FREE_TEXT = {"text", "date", "time", "datetime", "barcode"}
_LOCATION = {"geopoint", "geotrace", "geoshape"}
_MEDIA = {"image", "audio", "video", "file", "background-audio"}
_CONSTRAINT = re.compile(r"^\s*\.\s*(>=|<=)\s*(-?[0-9]+(?:\.[0-9]+)?)\s+and\s+\.\s*(>=|<=)\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")
_TRUE = {"yes", "true", "true()", "1"}
_FALSE = {"", "no", "false", "false()", "0"}


def _rows(sheet) -> tuple[list[str], list[tuple[int, dict]]]:
    rows = sheet.iter_rows(values_only=True)
    try:
        header = [str(h).strip() if h is not None else "" for h in next(rows)]
    except StopIteration:
        return [], []
    records = []
    for number, values in enumerate(rows, start=2):
        if number > MAX_SHEET_ROWS + 1:
            raise SpecError(f"sheet {sheet.title!r}: more than {MAX_SHEET_ROWS} rows, the limit for an XLSForm")
        record = {h: v for h, v in zip(header, values) if h and v is not None and str(v).strip() != ""}
        if record:
            records.append((number, record))
    return header, records


def _refusal(kind: str) -> str | None:
    if kind in _FREE_TEXT:
        return ("free-text and date answers would be stored exactly as typed: no randomization protects them. "
                "Ask a choice or number question instead (dates as a choice of periods)")
    if kind in _METADATA:
        return "device and time metadata would be stored beside the reports and could identify the respondent; remove the row"
    if kind in _LOCATION:
        return "a location would be stored exactly and identifies people; ask for a region as a choice question instead"
    if kind in _MEDIA:
        return "photos, recordings and files cannot be randomized; remove the row"
    if kind in ("begin repeat", "begin_repeat", "end repeat", "end_repeat"):
        return "repeats are not supported (each repetition would be a report the server could count); ask a number question instead"
    if kind == "calculate":
        return "calculations run on the device and their results would not be randomized; compute them in the analysis instead"
    if kind in ("range", "rank", "acknowledge", "hidden", "xml-external", "csv-external", "trigger"):
        return f"the {kind} type is not supported; use select_one, select_multiple, integer, decimal or note"
    return None


def checked(path: Path, spec: dict, build):
    """``build(spec)`` (a `Survey`), the SpecError it raises named for the form's file: the form read, the spec it gave
    is not a survey."""
    try:
        return build(spec)
    except SpecError as error:
        raise SpecError(f"{Path(path).name}: the form reads, but is not a valid survey: {error}") from None


def read_form(path) -> dict:
    """The spec an XLSForm (.xlsx) writes, every problem of the form raised at once (SpecError); whether that spec is
    a valid survey is `checked` by the caller, which has `Survey` (this module is below it: `Survey.from_xlsform`
    reads forms through it)."""
    try:
        from openpyxl import load_workbook  # the xlsform extra's, and 150 ms: imported when a form is read
    except ImportError:  # pragma: no cover - openpyxl comes with the xlsform and server extras
        raise SpecError("reading XLSForms needs openpyxl: pip install 'deniable[xlsform]'") from None
    path = Path(path)
    try:
        if path.stat().st_size > MAX_WORKBOOK_BYTES:
            raise SpecError(f"{path}: larger than {MAX_WORKBOOK_BYTES // 2**20} MiB, the limit for an XLSForm")
        _check_workbook(path)
        workbook = load_workbook(path, read_only=True, data_only=True)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except SpecError:
        raise
    except Exception as error:  # openpyxl raises many kinds for a file that is not a workbook
        raise SpecError(f"{path}: not an XLSForm workbook (.xlsx): {error}") from None
    try:
        return _read(workbook, path)
    finally:
        workbook.close()


def _check_workbook(path: Path):
    """Refuse a workbook whose parts would unpack past the limits, from the zip's directory alone (the
    sizes it declares are the most Python's zipfile will ever return for each part), whose formatting is larger than
    any questionnaire's, or whose XML declares a document type or entities (an entity bomb expands in the parser, and
    ended in a traceback): checked before openpyxl reads anything."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = archive.infolist()
            _check_parts(path, parts)
            for part in parts:
                if part.filename.lower().endswith((".xml", ".rels", ".vml")):
                    _check_declarations(path, archive, part)
    except zipfile.BadZipFile:
        return  # not a zip: openpyxl says so in its own words below


def _check_declarations(path: Path, archive, part):
    """Refuse a part that declares a DOCTYPE or an ENTITY, read in chunks (a declaration split across two is found)."""
    tail = b""
    with archive.open(part) as stream:
        while chunk := stream.read(1 << 16):
            if _DECLARATIONS.search(tail + chunk):
                raise SpecError(f"{path}: {part.filename} declares a document type or entities, which no spreadsheet "
                                "program writes (an XML entity expansion); save the workbook again from a spreadsheet "
                                "program")
            tail = chunk[-16:]


def _check_parts(path: Path, parts: list):
    """The limits on the parts' number and declared sizes, the formatting part's included."""
    if len(parts) > MAX_PARTS:
        raise SpecError(f"{path}: {len(parts):,} parts in the workbook, more than the {MAX_PARTS:,} an XLSForm may have")
    largest = max(parts, key=lambda part: part.file_size, default=None)
    if largest is not None and largest.file_size > MAX_PART_BYTES:
        raise SpecError(f"{path}: {largest.filename} unpacks to {largest.file_size / 2**20:,.0f} MiB, more than the "
                        f"{MAX_PART_BYTES // 2**20} MiB a sheet of an XLSForm may have")
    total = sum(part.file_size for part in parts)
    if total > MAX_UNPACKED_BYTES:
        raise SpecError(f"{path}: unpacks to {total / 2**20:,.0f} MiB, more than the {MAX_UNPACKED_BYTES // 2**20} MiB "
                        "an XLSForm may have")
    styles = [part for part in parts if part.filename.lower() == "xl/styles.xml"]
    if styles and styles[0].file_size > MAX_STYLES_BYTES:
        raise SpecError(f"{path}: its formatting (xl/styles.xml) unpacks to {styles[0].file_size / 2**20:,.1f} MiB, more "
                        f"than the {MAX_STYLES_BYTES // 2**20} MiB any questionnaire needs; copy the sheets into a new "
                        "workbook (values only) and save that")


def _read(workbook, path: Path) -> dict:
    problems = _Problems()
    sheets = {name.strip().lower(): workbook[name] for name in workbook.sheetnames}
    if "survey" not in sheets:
        raise SpecError(f"{path}: no 'survey' sheet (an XLSForm has survey, choices and settings sheets)")
    choices = _read_choices(sheets.get("choices"), problems)
    settings = _read_settings(sheets.get("settings"), problems)
    header, rows = _rows(sheets["survey"])
    languages = []  # in the order of the label columns: the order is part of the spec
    for column in header:
        base, _, suffix = column.partition("::")
        if base in _LOCALIZED and suffix:
            code = _language(suffix, "survey", 1, column, problems)
            if code and code not in languages:
                languages.append(code)
        elif base in ("privacy", "garbling") and suffix:
            continue
        elif column and column not in _SURVEY_COLUMNS:
            used = [(n, r[column]) for n, r in rows if column in r]
            if used:
                problems.add("survey", used[0][0], column, used[0][1],
                             "this column is not supported; remove it (deniable reads type, name, label, hint, required, "
                             "relevant, constraint, constraint_message, appearance, split_ballot, control, bins and the "
                             "privacy:: columns)")
    for column in header:
        for base in _LOCALIZED:
            if column == base and any(c.startswith(base + "::") for c in header):
                problems.add("survey", 1, column, None, f"mixes '{base}' with '{base}::Language' columns; "
                                                        f"give every {base} a language")
    declared = languages + [code for code in settings.pop("_languages", []) if code not in languages]
    default = settings.get("default_language")
    if default is not None and declared and default not in declared:
        problems.add("settings", 2, "default_language", default, f"is not one of the form's languages ({', '.join(declared)})")
    if declared and default is None:
        default = "en" if "en" in declared else declared[0]

    def localized(record: dict, base: str, number: int, sheet: str = "survey"):
        if base in record:
            return _cell_text(record[base])
        texts = {}
        for column, value in record.items():
            name, _, suffix = column.partition("::")
            if name == base and suffix:
                code = _language(suffix, sheet, number, column, _Problems())
                if code:
                    texts[code] = _cell_text(value)
        return texts or None

    sections: list[dict] = []
    loose: list = []
    current: dict | None = None
    for number, record in rows:
        kind = " ".join(_cell_text(record.get("type", "")).split())
        name = _cell_text(record.get("name", ""))
        word = kind.split(" ")[0] if kind else ""
        if word in ("begin", "begin_group") and kind in ("begin group", "begin_group"):
            if current is not None:
                problems.add("survey", number, "type", kind, "groups inside groups are not supported; close the "
                                                               "outer group first")
                continue
            current = {"id": name, "title": localized(record, "label", number) or name, "questions": []}
            intro = localized(record, "hint", number)
            if intro:
                current["intro"] = intro
            if "relevant" in record:
                current["relevant"] = _expression(record["relevant"], "survey", number, "relevant", problems)
            if _randomized(record, number, problems):
                current["randomize"] = True
            continue
        if kind in ("end group", "end_group"):
            if current is None:
                problems.add("survey", number, "type", kind, "an 'end group' with no 'begin group' before it")
                continue
            sections.append(current)
            current = None
            continue
        item = _read_item(number, record, kind, name, choices, localized, problems)
        if item is None:
            continue
        (current["questions"] if current is not None else loose).append((number, item))
    if current is not None:
        problems.add("survey", None, "type", None, f"group {current['id']!r} is never closed with 'end group'")
        sections.append(current)
    if sections and loose:
        problems.add("survey", loose[0][0], "type", None, "this question sits outside every group while others are "
                                                          "in groups; put every question in a group, or none")
    if not problems.items and not sections and not loose:
        problems.add("survey", None, None, None, "the form has no questions")
    repeated = _repeated_setting(settings, problems)
    sample = (_json_cell(settings["sample"], 2, "sample", problems, "settings") if _cell_text(settings.get("sample", ""))
              else None)
    quotas = (_json_cell(settings["quotas"], 2, "quotas", problems, "settings", kind=list)
              if _cell_text(settings.get("quotas", "")) else None)
    invitations = (_json_cell(settings["invitations"], 2, "invitations", problems, "settings")
                   if _cell_text(settings.get("invitations", "")) else None)
    quality = (_json_cell(settings["quality"], 2, "quality", problems, "settings")
               if _cell_text(settings.get("quality", "")) else None)
    page_words = _read_page_words(sheets.get("ui"), default, problems)
    if problems.items:
        count = len(problems.items)
        raise SpecError(f"{path.name}: {count} problem{'s' if count > 1 else ''} in the form:\n"
                        + "\n".join(f"  - {p}" for p in problems.items))
    spec = {"id": settings.get("form_id") or _default_id(path), "title": settings.get("form_title") or path.stem}
    for key in ("description", "consent", "version", "layout", "max_epsilon", "opens", "closes"):
        if key in settings:
            spec[key] = settings[key]
    completion = {key: settings[f"completion_{key}"] for key in ("code", "url") if f"completion_{key}" in settings}
    if completion:  # a panel's completion: code and link back (`client.completion`)
        spec["completion"] = completion
    if repeated is not None:
        spec["repeated"] = repeated
    if declared:
        spec["languages"] = declared
        spec["default_language"] = default
    if page_words:
        spec["page_words"] = page_words
    if sample:
        spec["sample"] = sample
    if invitations:  # the invitation and reminder e-mails' texts (`client.invitations`): as JSON
        spec["invitations"] = invitations
    if quality:  # attention and speed checks (`client.quality`): as JSON
        spec["quality"] = quality
    if quotas:  # how many responses each group of public answers may send (`client.quotas`): as JSON
        spec["quotas"] = quotas
    shuffled = _cell_text(settings.get("randomize_sections", "")).strip()
    if shuffled:  # true (every group) or the names of the groups that change places
        spec["randomize_sections"] = True if shuffled.lower() in ("true", "yes") else shuffled.replace(",", " ").split()
    for section in sections:
        section["questions"] = [item for _, item in section["questions"]]
    if sections:
        spec["sections"] = sections
    else:
        spec["questions"] = [item for _, item in loose]
    return spec


def _default_id(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)[:64] or "survey"


def _expression(value, sheet: str, row: int, column: str, problems: _Problems):
    text = _cell_text(value)
    try:
        return skiplogic.to_text(skiplogic.from_xlsform(text))
    except skiplogic.ExpressionError as error:
        problems.add(sheet, row, column, text, f"{error}. deniable reads comparisons of a question to a constant "
                                               f"(${{q}} = 'x', ${{n}} >= 3), selected(${{q}}, 'x'), and, or, not(...)")
        return text


def _read_item(number, record, kind, name, choices, localized, problems):
    word, _, rest = kind.partition(" ")
    refusal = _refusal(kind) or _refusal(word)
    if refusal:
        problems.add("survey", number, "type", kind, refusal)
        return None
    if word not in ("select_one", "select_multiple", "integer", "decimal", "note"):
        problems.add("survey", number, "type", kind or None,
                     "unknown type; deniable reads select_one, select_multiple, integer, decimal, note and groups")
        return None
    if not name:
        problems.add("survey", number, "name", None, "every row needs a name")
        return None
    item = {"id": name}
    text = localized(record, "label", number)
    if text is None:
        problems.add("survey", number, "label", None, "every question needs a label")
        return None
    if "garbling::covariate" in record:
        problems.add("survey", number, "garbling::covariate", record["garbling::covariate"],
                     "block garbling needs a central coordinator who sees the true answers of a whole block; deniable "
                     "randomizes each answer on the respondent's own device. Use garbling::answer and garbling::rate, "
                     "or a privacy::design")
    hint = localized(record, "hint", number)
    appearance = _cell_text(record.get("appearance", "")).strip().lower()
    if appearance and (appearance != "likert" or word != "select_one"):
        problems.add("survey", number, "appearance", record["appearance"],
                     "only 'likert' on a select_one is read (an ordered scale); layout appearances have no effect here")
    if word == "note":
        item.update(type="note", text=text)
        if hint:
            item["hint"] = hint
        if "relevant" in record:
            item["relevant"] = _expression(record["relevant"], "survey", number, "relevant", problems)
        for column in ("required", "constraint"):
            if column in record:
                problems.add("survey", number, column, record[column], "a note is never answered; remove the value")
        return item
    privacy = _privacy(number, record, problems)
    if word in ("select_one", "select_multiple"):
        list_name = rest.strip()
        if " or_other" in f" {list_name}" or not list_name:
            problems.add("survey", number, "type", kind, "name one choice list (or_other would be free text)")
            return None
        options = choices.get(list_name)
        if options is None:
            problems.add("survey", number, "type", kind, f"no choice list {list_name!r} in the choices sheet")
            return None
        values = [o["value"] if isinstance(o, dict) else o for o in options]
        if word == "select_one" and sorted(values) == ["no", "yes"]:
            item["type"] = "yes_no"
            labels = _yes_no_labels(options)
            if labels:
                item["options"] = labels
        else:
            design = privacy.get("design") if isinstance(privacy, dict) else None
            # an ordered scale: ODK's likert appearance, or implied by the ordinal design
            scale = design == "ordinal" or appearance == "likert"
            item["type"] = "multi_select" if word == "select_multiple" else "ordinal" if scale else "choice"
            item["options"] = options
    elif word in ("integer", "decimal"):
        item["type"] = "number"
        constraint = _cell_text(record.get("constraint", ""))
        match = _CONSTRAINT.match(constraint)
        if not match or {match.group(1), match.group(3)} != {">=", "<="}:
            problems.add("survey", number, "constraint", constraint or None,
                         "a number question needs its range as '. >= MIN and . <= MAX' (the randomization works on a "
                         "bounded grid)")
        else:
            bounds = {match.group(1): match.group(2), match.group(3): match.group(4)}
            item["min"], item["max"] = (_number(bounds[">="]), _number(bounds["<="]))
        step = privacy.pop("step", None) if isinstance(privacy, dict) else None
        if step is None and word == "decimal":
            problems.add("survey", number, "privacy::step", None, "a decimal question needs privacy::step, the grid "
                                                                  "its answers are rounded to (e.g. 0.5)")
        item["step"] = _number(_cell_text(step)) if step is not None else 1
        bins = _cell_text(record.get("bins", "")).replace(",", " ").split()
        if bins:  # a wide number's bins: their lower edges, written "0 1 5 10" (the spec checks them)
            try:
                item["bins"] = [_number(edge) for edge in bins]
            except ValueError:
                problems.add("survey", number, "bins", record["bins"],
                             "the bins' lower edges as numbers separated by spaces, e.g. '0 1 5 10 20 50'")
    item["text"] = text
    if hint:
        item["hint"] = hint
    required = _cell_text(record.get("required", "")).lower()
    if required in _TRUE:
        item["required"] = True
    elif required not in _FALSE:
        item["required"] = _expression(record["required"], "survey", number, "required", problems)
    if "relevant" in record:
        item["relevant"] = _expression(record["relevant"], "survey", number, "relevant", problems)
    message = localized(record, "constraint_message", number)
    if message:
        item["constraint_message"] = message
    if privacy is not None:
        item["privacy"] = privacy
    for column in _JSON_COLUMNS:
        if _cell_text(record.get(column, "")):
            value = _json_cell(record[column], number, column, problems)
            if value is not None:
                item[column] = value
    if _randomized(record, number, problems):
        item["randomize"] = True
    if _cell_text(record.get("check", "")).strip():  # an attention check's instructed answer
        item["check"] = _cell_text(record["check"]).strip()
    return item


def _randomized(record, number, problems) -> bool:
    """ODK's ``parameters`` column, of which deniable reads ``randomize=true`` (a group's questions, a select's
    choices, in an order drawn on the device; `client.order`)."""
    text = _cell_text(record.get("parameters", "")).strip()
    if not text:
        return False
    found = {}
    for pair in text.replace(",", " ").split():
        key, _, value = pair.partition("=")
        found[key.strip().lower()] = value.strip().lower()
    unknown = sorted(set(found) - {"randomize"})
    if unknown or found.get("randomize") not in ("true", "false", "yes", "no"):
        problems.add("survey", number, "parameters", text, "deniable reads randomize=true (or false) here; the order is "
                                                           "drawn on the respondent's device, so there is no seed")
        return False
    return found["randomize"] in ("true", "yes")


def _number(text: str):
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def _read_choices(sheet, problems: _Problems) -> dict:
    lists: dict[str, list] = {}
    if sheet is None:
        return lists
    header, rows = _rows(sheet)
    for number, record in rows:
        list_name = _cell_text(record.get("list_name", record.get("list name", "")))
        name = _cell_text(record.get("name", ""))
        if not list_name or not name:
            problems.add("choices", number, "name" if list_name else "list_name", None, "every choice needs a list_name and a name")
            continue
        labels = {}
        plain = None
        for column, value in record.items():
            base, _, suffix = column.partition("::")
            if base == "label" and suffix:
                code = _language(suffix, "choices", number, column, problems)
                if code:
                    labels[code] = _cell_text(value)
            elif column == "label":
                plain = _cell_text(value)
            elif column not in ("list_name", "list name", "name"):
                problems.add("choices", number, column, value, "this column is not supported (filters and media would "
                                                                "show different options to different people); remove it")
        option: str | dict
        if plain is not None:
            option = name if plain == name else {"value": name, "label": plain}
        elif labels:
            option = {"value": name, "label": labels}
        else:
            option = name
        lists.setdefault(list_name, []).append(option)
    return {name: _simplify(options) for name, options in lists.items()}


def _yes_no_labels(options: list) -> list | None:
    """A yes/no list's labels as the question's own, unless they are the page's words for Yes and No (the shipped
    catalogue's, in every language given): then the page says them and the spec needs none."""
    by_value = {option["value"] if isinstance(option, dict) else option: option for option in options}
    if not all(isinstance(by_value[value], dict) for value in ("yes", "no")):
        return None  # a list without labels: the page's words

    def page_words(label, value) -> bool:
        texts = label.items() if isinstance(label, dict) else [(None, label)]
        return all(text == catalogue.messages(code)[value] for code, text in texts)

    if all(page_words(by_value[value]["label"], value) for value in ("yes", "no")):
        return None
    return [{"value": value, "label": by_value[value]["label"]} for value in ("yes", "no")]


def _read_page_words(sheet, default: str | None, problems: _Problems) -> dict:
    """The ``ui`` sheet: a row per page word (``name``), a ``label::Language (code)`` column per language (or one
    ``label`` column in the default language) → the spec's ``page_words``."""
    words: dict[str, dict] = {}
    if sheet is None:
        return words
    header, rows = _rows(sheet)
    for number, record in rows:
        name = _cell_text(record.get("name", ""))
        if not name:
            problems.add("ui", number, "name", None, "every row names a page word (e.g. send); `deniable survey words` "
                                                     "lists them")
            continue
        for column, value in record.items():
            base, _, suffix = column.partition("::")
            if base == "label" and suffix:
                code = _language(suffix, "ui", number, column, problems)
            elif column == "label":
                code = default or catalogue.DEFAULT
            elif column == "name":
                continue
            else:
                problems.add("ui", number, column, value, "the ui sheet has a name and label (or label::Language) columns")
                continue
            if code:
                words.setdefault(code, {})[name] = _cell_text(value)
    return words


def _simplify(options: list) -> list:
    """An option whose only label is its own name (in one language) is just its name."""
    simple = []
    for option in options:
        if isinstance(option, dict) and isinstance(option["label"], dict) and len(option["label"]) == 1 \
                and next(iter(option["label"].values())) == option["value"]:
            simple.append(option["value"])
        else:
            simple.append(option)
    return simple


def _repeated_setting(settings: dict, problems: "_Problems"):
    """The settings sheet's ``repeated`` (yes/no) and ``instant_epsilon`` as the spec's ``repeated``."""
    flag = settings.get("repeated", "").strip().lower()
    if flag in ("", "no", "false"):
        if "instant_epsilon" in settings:
            problems.add("settings", 2, "instant_epsilon", settings["instant_epsilon"], "needs repeated = yes")
        return None
    if flag not in ("yes", "true"):
        problems.add("settings", 2, "repeated", settings["repeated"], "must be yes or no")
        return None
    return {"instant_epsilon": settings["instant_epsilon"]} if "instant_epsilon" in settings else True


def _read_settings(sheet, problems: _Problems) -> dict:
    settings: dict = {}
    if sheet is None:
        return settings
    header, rows = _rows(sheet)
    if not rows:
        return settings
    number, record = rows[0]
    languages = []
    for column, value in record.items():
        base, _, suffix = column.partition("::")
        if base in ("form_title", "description", "consent") and suffix:
            code = _language(suffix, "settings", number, column, problems)
            if code:
                settings.setdefault(base, {})[code] = _cell_text(value)
                languages += [code] if code not in languages else []
        elif column == "default_language":
            code = _language(_cell_text(value), "settings", number, column, problems)
            if code:
                settings["default_language"] = code
        elif column in ("form_title", "description", "consent") and any(c.startswith(column + "::") for c in record):
            problems.add("settings", number, column, value, f"mixes '{column}' with '{column}::Language' columns; "
                                                            f"give every {column} a language")
        elif column in _SETTINGS:
            settings[column] = _cell_text(value)
        elif column in ("instance_name", "style", "public_key", "submission_url", "allow_choice_duplicates",
                        "auto_send", "auto_delete", "name", "namespaces", "clean_text_values"):
            if column in ("public_key", "submission_url", "instance_name"):
                problems.add("settings", number, column, value, "deniable's own server receives the reports; remove it")
        else:
            problems.add("settings", number, column, value, "this setting is not supported; remove it")
    settings["_languages"] = languages
    return settings
