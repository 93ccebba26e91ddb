"""XLSForm out: a survey written as a form that `read_xlsform` reads back to the same spec hash."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from . import skiplogic
from .catalogue import messages
from .errors import SpecError
from .json_text import canonical_json
from .survey import Survey
from .xlsform_reader import checked, read_form

#: Question fields that are mappings, written as JSON text in a column of their own (read back by `read_xlsform`).
STRUCTURED_COLUMNS = ("split_ballot", "control")


def write_xlsform(survey: Survey, path) -> None:
    """Write `survey` as an XLSForm that `read_xlsform` reads back to the same spec hash."""
    from openpyxl import Workbook  # the xlsform extra's, and 150 ms: imported when a form is written

    codes = survey.languages.codes if survey.languages.declared else []
    suffixes = [f"::{code}" for code in codes] or [""]

    def cells(text) -> list:
        if isinstance(text, dict):
            return [text.get(code) for code in codes]
        if text is None:
            return [None] * len(suffixes)
        # A plain text in a form with languages is the default language's.
        return [text if (not codes or code == survey.languages.default) else None for code in codes] or [text]

    spec = survey.to_dict()
    items: list[tuple[Any, Any]] = [(None, item) for item in spec.get("questions", [])]
    if "sections" in spec:
        items = [(section, item) for section in spec["sections"] for item in [None] + section["questions"] + ["end"]]
    params = sorted({key for _, item in items if isinstance(item, dict) and isinstance(item.get("privacy"), dict)
                     for key in item["privacy"] if key != "design"} | {"step"})
    # Texts the respondent reads (a companion question, a randomizer's instruction) get a column per language.
    text_columns = {"companion": "companion", "randomizer": "randomizer::text"}
    privacy_columns = [f"privacy::{text_columns[p]}{s}" for p in params if p in text_columns for s in suffixes] + \
                      [f"privacy::{p}" for p in params if p not in text_columns]
    # A question's split ballot and known-share control have a column each (their value as JSON), when used.
    extras = [key for key in STRUCTURED_COLUMNS if any(isinstance(item, dict) and key in item for _, item in items)]
    # An ordered scale whose design does not say so (k-ary RR on a scale, a public scale): ODK's likert appearance.
    scales = any(isinstance(item, dict) and item.get("type") == "ordinal" for _, item in items)
    # ODK's parameters column carries randomize=true: a group's questions or a select's choices in a random order.
    checks = any(isinstance(item, dict) and "check" in item for _, item in items)
    binned = any(isinstance(item, dict) and "bins" in item for _, item in items)
    randomized = any((isinstance(item, dict) and item.get("randomize")) or (item is None and section.get("randomize"))
                     for section, item in items)
    columns = ["type", "name", *[f"label{s}" for s in suffixes], *[f"hint{s}" for s in suffixes], "required",
               "relevant", "constraint", *[f"constraint_message{s}" for s in suffixes], *(["appearance"] * scales),
               *(["parameters"] * randomized), *(["check"] * checks), *(["bins"] * binned), "privacy::design", *privacy_columns, *extras]
    book = Workbook()
    sheet = book.active
    sheet.title = "survey"
    sheet.append(columns)
    choices = [("list_name", "name", *[f"label{s}" for s in suffixes])]
    yes_no_written = False
    for section, item in items:
        row = dict.fromkeys(columns)
        if item is None:  # begin group
            row.update(type="begin group", name=section["id"], relevant=_xlsform_expression(section.get("relevant")))
            row.update(zip([f"label{s}" for s in suffixes], cells(section["title"])))
            row.update(zip([f"hint{s}" for s in suffixes], cells(section.get("intro"))))
            if section.get("randomize"):
                row["parameters"] = "randomize=true"
        elif item == "end":
            row.update(type="end group")
        else:
            row.update(name=item["id"], relevant=_xlsform_expression(item.get("relevant")))
            row.update(zip([f"label{s}" for s in suffixes], cells(item["text"])))
            row.update(zip([f"hint{s}" for s in suffixes], cells(item.get("hint"))))
            qtype = item["type"]
            if qtype == "note":
                row["type"] = "note"
            else:
                required = item.get("required", False)
                row["required"] = "yes" if required is True else None if required is False else _xlsform_expression(required)
                row.update(zip([f"constraint_message{s}" for s in suffixes], cells(item.get("constraint_message"))))
                privacy = item["privacy"]
                row["privacy::design"] = "none" if privacy == "none" else privacy["design"]
                if isinstance(privacy, dict):
                    for key, value in privacy.items():
                        if key in text_columns:
                            text = value["text"] if key == "randomizer" else value
                            row.update(zip([f"privacy::{text_columns[key]}{s}" for s in suffixes], cells(text)))
                        elif key != "design":
                            # a design's groups (cheating detection, the lie detector) are a mapping: as JSON text
                            row[f"privacy::{key}"] = canonical_json(value) if isinstance(value, (dict, list)) else value
                for key in extras:
                    if key in item:
                        row[key] = canonical_json(item[key])
                if item.get("randomize"):
                    row["parameters"] = "randomize=true"
                if "check" in item:
                    row["check"] = item["check"]
                if "bins" in item:
                    row["bins"] = " ".join(str(edge) for edge in item["bins"])
                if qtype == "yes_no" and "options" in item:  # its own labels: a list of its own
                    row["type"] = f"select_one {item['id']}"
                    for option in item["options"]:
                        choices.append((item["id"], option["value"], *cells(option["label"])))
                elif qtype == "yes_no":
                    row["type"] = "select_one yes_no"
                    if not yes_no_written:
                        for value in ("yes", "no"):
                            labels = [messages(code)[value] for code in codes] or [messages(None)[value]]
                            choices.append(("yes_no", value, *labels))
                        yes_no_written = True
                elif qtype in ("choice", "ordinal", "multi_select"):
                    row["type"] = f"{'select_multiple' if qtype == 'multi_select' else 'select_one'} {item['id']}"
                    if qtype == "ordinal":
                        row["appearance"] = "likert"
                    for option in item["options"]:
                        if isinstance(option, dict):
                            choices.append((item["id"], option["value"], *cells(option["label"])))
                        else:
                            choices.append((item["id"], option, *cells(option)))
                else:
                    whole = all(isinstance(item[k], int) for k in ("min", "max", "step"))
                    row["type"] = "integer" if whole else "decimal"
                    row["constraint"] = f". >= {item['min']} and . <= {item['max']}"
                    if item["step"] != 1 or not whole:
                        row["privacy::step"] = item["step"]
        sheet.append([row[c] for c in columns])
    choice_sheet = book.create_sheet("choices")
    for line in choices:
        choice_sheet.append(list(line))
    settings = {"form_id": spec["id"]}
    for key in ("title", "description", "consent"):
        target = "form_title" if key == "title" else key
        value = spec.get(key)
        if isinstance(value, dict):
            settings.update({f"{target}::{code}": text for code, text in value.items()})
        elif value is not None:
            settings[target] = value
    for key in ("version", "layout", "default_language", "max_epsilon", "opens", "closes"):
        if key in spec:
            settings[key] = spec[key]
    for key, value in spec.get("completion", {}).items():
        settings[f"completion_{key}"] = value
    if "sample" in spec:  # the sample design the analysis uses by default: as JSON
        settings["sample"] = canonical_json(spec["sample"])
    if "quality" in spec:
        settings["quality"] = canonical_json(spec["quality"])
    if "invitations" in spec:  # the e-mails' texts (one or one per language): as JSON
        settings["invitations"] = canonical_json(spec["invitations"])
    if "quotas" in spec:  # as JSON, like the sample: ODK has no quotas
        settings["quotas"] = canonical_json(spec["quotas"])
    if "randomize_sections" in spec:
        shuffled = spec["randomize_sections"]
        settings["randomize_sections"] = "true" if shuffled is True else " ".join(shuffled)
    if "repeated" in spec:  # a panel: repeated = yes, and the instantaneous layer's ε when the spec sets one
        settings["repeated"] = "yes"
        if isinstance(spec["repeated"], dict):
            settings["instant_epsilon"] = spec["repeated"]["instant_epsilon"]
    if "page_words" in spec:  # the ui sheet: a row per page word, a label column per language
        languages = list(spec["page_words"])
        ui = book.create_sheet("ui")
        ui.append(["name", *[f"label::{code}" for code in languages]])
        for name in dict.fromkeys(name for words in spec["page_words"].values() for name in words):
            ui.append([name, *[spec["page_words"][code].get(name) for code in languages]])
    settings_sheet = book.create_sheet("settings")
    settings_sheet.append(list(settings))
    settings_sheet.append(list(settings.values()))
    with tempfile.TemporaryDirectory() as folder:
        draft = os.path.join(folder, "form.xlsx")
        book.save(draft)
        _check_round_trip(survey, draft)
        shutil.copyfile(draft, path)


def _check_round_trip(survey: Survey, path) -> None:
    """Read the form back: a survey it would carry changed (a field no column holds) is refused, before anything is
    written where it was asked, with the first difference named; never a form that silently drops part of a design."""
    try:
        back = checked(path, read_form(path), Survey)
        if back.hash == survey.hash:
            return
        difference = _first_difference(survey.to_dict(), back.to_dict())
    except SpecError as error:
        difference = str(error)
    raise SpecError(f"xlsform: this survey cannot be written as an XLSForm without changing it ({difference}); "
                    "keep it as YAML or JSON")


def _first_difference(before, after, where: str = "survey") -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in list(before) + [k for k in after if k not in before]:
            if before.get(key) != after.get(key):
                return _first_difference(before.get(key), after.get(key), f"{where}.{key}")
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for position, (one, other) in enumerate(zip(before, after)):
            if one != other:
                name = one.get("id", position) if isinstance(one, dict) else position
                return _first_difference(one, other, f"{where}.{name}" if isinstance(name, str) else f"{where}[{name}]")
    return f"{where}: {before!r} would read back as {after!r}"


def _xlsform_expression(text):
    return None if text is None else skiplogic.to_text(skiplogic.parse(text), xlsform=True)
