"""The e-mails that invite respondents and remind them (``deniable invite``, ``deniable remind``): their text per
language, from the spec's ``invitations`` or else the page words shipped in every language deniable has.

    invitations:
      subject: {en: "Your views on taxes", es: "Su opinión sobre los impuestos"}
      body: {en: "Dear member, ... {link} ... To receive no more e-mails: {opt_out}", es: ...}
      reminder_subject: ...
      reminder_body: ...

A body names ``{link}`` (the respondent's own link, which answers once) and ``{opt_out}`` (the link that stops the
e-mails); ``{title}`` is the survey's title in the respondent's language, and ``{privacy}`` what the survey does with
the answers, derived from its questions (`promises.email_promise`: all randomized, some, or none, and where).
Nothing else is put in: an e-mail carries no answer and no frame value."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SpecError
from .promises import email_promise
from .questions import LINE_BREAKS, localize

_FIELDS = {"subject": "invite_subject", "body": "invite_body", "reminder_subject": "remind_subject",
           "reminder_body": "remind_body"}
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _check(text: str, field: str, where: str):
    named = set(_PLACEHOLDER.findall(text))
    allowed = {"title"} if field.endswith("subject") else {"title", "link", "opt_out", "privacy"}
    unknown = sorted(named - allowed)
    if unknown:
        raise SpecError(f"{where}: {{{unknown[0]}}} is not a placeholder (allowed: "
                        + ", ".join(f"{{{name}}}" for name in sorted(allowed)) + ")")
    if field.endswith("subject") and any(mark in text for mark in LINE_BREAKS):
        raise SpecError(f"{where}: a subject is one line")
    if field.endswith("body"):
        for needed in ("link", "opt_out"):
            if needed not in named:
                raise SpecError(f"{where}: must name {{{needed}}} (the respondent's own link, and the link that stops "
                                "the e-mails)")


@dataclass(frozen=True)
class Invitations:
    """The spec's texts by field (each one text or one per language; None: the shipped words)."""
    texts: dict

    @classmethod
    def read(cls, raw, languages) -> "Invitations | None":
        if raw is None:
            return None
        where = "survey.invitations"
        if not isinstance(raw, dict) or not raw:
            raise SpecError(f"{where}: a mapping of {', '.join(_FIELDS)} (each a text, or one per language), got {raw!r}")
        unknown = sorted(set(raw) - set(_FIELDS))
        if unknown:
            raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(_FIELDS)})")
        texts = {}
        for field, value in raw.items():
            texts[field] = languages.text(value, f"{where}.{field}")
            for code, text in (texts[field].items() if isinstance(texts[field], dict) else [(None, texts[field])]):
                _check(text, field, f"{where}.{field}" + (f".{code}" if code else ""))
        return cls(texts)

    def to_dict(self) -> dict:
        return dict(self.texts)


def message(survey, kind: str, language: str | None, link: str, opt_out: str) -> tuple[str, str]:
    """(subject, body) of an invitation (``kind`` "invite") or a reminder ("remind") in ``language``."""
    prefix = "" if kind == "invite" else "reminder_"
    own = survey.invitations.texts if survey.invitations is not None else {}
    words = survey.words(language)
    values = {"title": survey.title_in(language), "link": link, "opt_out": opt_out,
              "privacy": email_promise(survey, words)}
    parts = []
    for field in (f"{prefix}subject", f"{prefix}body"):
        text = localize(own.get(field), language, survey.default_language) or words[_FIELDS[field]]
        parts.append(_PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text))  # one pass
    return parts[0], parts[1]

