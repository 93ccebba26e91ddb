"""A spec's ``page_words``: the words of its pages it completes or overrides, per language, checked against the
shipped catalogue (`catalogue`)."""

from __future__ import annotations

import difflib

from . import catalogue
from .errors import SpecError
from .questions import _plain_text, refuse_line_breaks

#: Placeholders a page word of a spec's own may leave out: what the e-mails say the survey does with the answers (the
#: spec's own text then says it; older specs' texts had no such placeholder).
OPTIONAL_PLACEHOLDERS = {"invite_body": {"privacy"}, "remind_body": {"privacy"}}


def read_page_words(raw, page_languages: list[str]) -> dict:
    """``page_words: {fr: {send: …}}``: page words a survey completes or overrides per language, each a word the
    catalogue has, keeping English's placeholders exactly (a statement's figures cannot be dropped or added).
    Whether every language has its privacy statements is `check_fieldable`'s question."""
    where = "survey.page_words"
    read = {}
    if raw is not None:
        if not isinstance(raw, dict) or not raw:
            raise SpecError(f"{where}: a mapping of language to {{word: text}}, e.g. {{fr: {{send: Envoyer}}}}, got {raw!r}")
        english = catalogue.shipped(catalogue.DEFAULT)
        for code, words in raw.items():
            if code not in page_languages:
                raise SpecError(f"{where}.{code}: not one of the survey's languages ({', '.join(page_languages)})")
            if not isinstance(words, dict) or not words:
                raise SpecError(f"{where}.{code}: a mapping of page word to text, e.g. {{send: Envoyer}}, got {words!r}")
            for key, text in words.items():
                if key not in english:
                    close = difflib.get_close_matches(str(key), english, n=1)
                    raise SpecError(f"{where}.{code}.{key}: not a page word"
                                    + (f" (did you mean {close[0]!r}?)" if close else "")
                                    + "; `deniable survey words` lists them")
                _plain_text(text, f"{where}.{code}.{key}")
                if key.endswith("_subject"):
                    refuse_line_breaks(text, f"{where}.{code}.{key}")
                try:
                    names = catalogue.placeholders(text)
                except ValueError as error:
                    raise SpecError(f"{where}.{code}.{key}: {error} (write a literal brace as {{{{ or }}}})") from None
                wanted = catalogue.placeholders(english[key])
                if key in OPTIONAL_PLACEHOLDERS:  # an e-mail of a spec's own may leave the survey's promise out
                    names, wanted = names - OPTIONAL_PLACEHOLDERS[key], wanted - OPTIONAL_PLACEHOLDERS[key]
                if names != wanted:
                    shown = ", ".join(f"{{{name}}}" for name in sorted(wanted)) or "no placeholder"
                    raise SpecError(f"{where}.{code}.{key}: must fill in exactly {shown}, as English does "
                                    f"(got {', '.join(f'{{{n}}}' for n in sorted(names)) or 'none'})")
            read[code] = dict(words)
    return read
