"""Reading an XLSForm's privacy columns: ``privacy::design`` and its parameters (a design's groups as JSON), the
texts a respondent reads to randomize (``privacy::companion``, ``privacy::randomizer::text``, per language), and
Safely Report's ``garbling::`` columns as the forced-response channel they are."""

from __future__ import annotations

from fractions import Fraction

from .xlsform_cells import _cell_text, _json_cell, _language, _Problems

#: Privacy parameters written as JSON in their cell: a design's groups (cheating detection, the lie detector).
_JSON_PARAMETERS = ("groups",)


def _privacy(number: int, record: dict, problems: _Problems):
    params = {column.partition("::")[2]: value for column, value in record.items() if column.startswith("privacy::")}
    answer, rate = record.get("garbling::answer"), record.get("garbling::rate")
    if answer is not None or rate is not None:
        if params:
            problems.add("survey", number, "garbling::answer", answer, "give either garbling:: or privacy:: columns, not both")
            return None
        try:
            rate_value = float(rate)  # type: ignore[arg-type]  # None is refused as the TypeError below
            if not 0 < rate_value < 1:
                raise ValueError
        except (TypeError, ValueError):
            problems.add("survey", number, "garbling::rate", rate, "must be a probability between 0 and 1")
            return None
        answer = _cell_text(answer).lower()
        if answer not in ("yes", "no"):
            problems.add("survey", number, "garbling::answer", answer, "must be yes or no (garbling applies to yes/no questions)")
            return None
        # Safely Report's garbling: the garbling answer is reported with probability `rate` when the truth is the
        # other answer, and always when it is the truth. As a forced-response channel: truth 1 - rate, the
        # garbling answer forced with `rate`, the other answer never forced (so ε is infinite).
        other = "no" if answer == "yes" else "yes"
        rate_text = _cell_text(rate)
        return {"design": "forced_response", "truth": _complement(rate_text), answer: rate_text, other: 0}
    if not params:
        return None
    design = _cell_text(params.pop("design", "")) or None
    if design is None:
        problems.add("survey", number, "privacy::design", None, "privacy:: parameters need a privacy::design beside them")
        return None
    if design == "none":
        if params:
            problems.add("survey", number, "privacy::design", design, "a public question takes no privacy parameters")
        return "none"
    _respondent_texts(number, params, problems)
    for key in _JSON_PARAMETERS:
        if key in params and isinstance(params[key], str):
            parsed = _json_cell(params[key], number, f"privacy::{key}", problems)
            if parsed is None:
                return None
            params[key] = parsed
    return {"design": design, **{key: value if not isinstance(value, str) else value.strip() for key, value in params.items()}}


#: Privacy parameters that are texts the respondent reads, by column prefix: privacy::companion (crosswise,
#: triangular) and privacy::randomizer::text (a natural randomizer), each optionally ::<language>.
_RESPONDENT_TEXTS = {"companion": "companion", "randomizer::text": "randomizer"}


def _respondent_texts(number: int, params: dict, problems: _Problems):
    """Gather ``privacy::companion[::language]`` and ``privacy::randomizer::text[::language]`` into the
    spec's ``companion`` text and ``randomizer: {text: …}``, localized when the columns name languages."""
    for prefix, name in _RESPONDENT_TEXTS.items():
        columns = [key for key in params if key == prefix or key.startswith(prefix + "::")]
        if not columns:
            continue
        plain, localized = None, {}
        for column in columns:
            value = params.pop(column)
            if value is None:
                continue
            suffix = column[len(prefix) + 2:]
            if not suffix:
                plain = _cell_text(value)
                continue
            code = _language(suffix, "survey", number, f"privacy::{column}", problems)
            if code is not None:
                localized[code] = _cell_text(value)
        if plain is not None and localized:
            problems.add("survey", number, f"privacy::{prefix}", plain,
                         f"give privacy::{prefix} or privacy::{prefix}::<language> columns, not both")
        text = localized or plain
        params[name] = text if name == "companion" else {"text": text}


def _complement(rate_text: str) -> str:
    return str(1 - Fraction(rate_text))
