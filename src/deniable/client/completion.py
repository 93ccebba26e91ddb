"""A recruitment panel's completion: a code the respondent is shown after answering and a link back to the panel
(``completion: {code: C1A2B3, url: "https://panel.example/complete?cc={code}"}`` in the spec).

The code is the survey's, the same for everyone: it says "finished this survey" and carries no answer and no
identity. The JS twin (``src/completion.js``) reads the same specs to the same errors (tests/vectors/completion.json)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SpecError

_CODE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_URL = re.compile(r"https://[^\s<>\"']{1,2000}")


@dataclass(frozen=True)
class Completion:
    code: str | None = None
    url: str | None = None

    @classmethod
    def read(cls, spec) -> "Completion | None":
        if spec is None:
            return None
        where = "survey.completion"
        if not isinstance(spec, dict) or not spec:
            raise SpecError(f"{where}: a mapping with code, url or both, got {spec!r}")
        unknown = sorted(set(spec) - {"code", "url"})
        if unknown:
            raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: code, url)")
        code, url = spec.get("code"), spec.get("url")
        if code is not None and not (isinstance(code, str) and _CODE.fullmatch(code)):
            raise SpecError(f"{where}.code: letters, digits, _ and - (at most 64), got {code!r}")
        if url is not None and not (isinstance(url, str) and _URL.fullmatch(url)):
            raise SpecError(f"{where}.url: an https:// address, got {url!r}")
        if url is not None and "{code}" in url and code is None:
            raise SpecError(f"{where}.url: it names {{code}}, but the completion has no code")
        return cls(code, url)

    @property
    def link(self) -> str | None:
        """The address the respondent follows when done, the code put in where the URL names it."""
        return None if self.url is None else self.url.replace("{code}", self.code or "")

    def to_dict(self) -> dict:
        return {key: value for key, value in (("code", self.code), ("url", self.url)) if value is not None}
