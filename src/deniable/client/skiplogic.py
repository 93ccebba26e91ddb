"""Skip logic: the small expression language of ``relevant`` (and conditional ``required``).

Grammar (keywords are lower case)::

    expression := conjunction ("or" conjunction)*
    conjunction := negation ("and" negation)*
    negation   := "not" negation | atom
    atom       := "(" expression ")"
                | "selected" "(" QUESTION "," TEXT ")"
                | QUESTION ("=" | "!=" | "<" | "<=" | ">" | ">=") (TEXT | NUMBER)

TEXT is quoted with ``'`` or ``"`` (no escapes); NUMBER is a decimal such as ``-2`` or ``0.5``.
An expression is parsed once into a tree of plain dicts (JSON, shared with the JS twin in
``deniable.js``)::

    {"op": "or" | "and", "args": [tree, ...]}      # two or more, never nested in the same op
    {"op": "not", "arg": tree}
    {"op": "=" | "!=" | "<" | "<=" | ">" | ">=", "question": id, "value": {"text": s} | {"number": s}}
    {"op": "selected", "question": id, "value": {"text": s}}

`to_text` prints a tree in canonical form; parsing that text gives the same tree. A question
that is unanswered (or not shown) compares unequal to everything: ``!=`` is true, every other
comparison and ``selected`` are false (as in ODK, where an empty value is '').
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import DeniableError
from .exact import parse_fraction
from .identifiers import ID

KEYWORDS = frozenset({"and", "or", "not", "selected"})
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
ORDERINGS = ("<", "<=", ">", ">=")
MAX_LENGTH = 2000
MAX_DEPTH = 40
MAX_NUMBER_LENGTH = 30

_TOKEN = re.compile(r"""\s*(?:(?P<text>'[^']*'|"[^"]*")|(?P<op><=|>=|!=|=|<|>)|(?P<punct>[(),])|(?P<word>[A-Za-z0-9_.\-]+))""")
_NUMBER = re.compile(r"^-?[0-9]+(?:\.[0-9]+)?$")
_QUESTION = ID


class ExpressionError(DeniableError, ValueError):
    """An expression does not parse; the message says where."""


def _tokens(text: str) -> list[tuple[str, str, int]]:
    tokens, position = [], 0
    stripped_end = len(text.rstrip())
    while position < stripped_end:
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            start = position + (len(text[position:]) - len(text[position:].lstrip()))
            raise ExpressionError(f"unexpected {text[start]!r} at character {start + 1}")
        kind = match.lastgroup
        assert kind is not None  # every alternative of the pattern is a named group
        start = match.start(kind)
        tokens.append((kind, match.group(kind), start))
        position = match.end()
    return tokens


def canonical_number(literal: str) -> str:
    """``007.50`` → ``7.5``, ``-0`` → ``0``: one spelling per decimal value (the JS twin does the same)."""
    negative = literal.startswith("-")
    whole, _, fraction = literal.lstrip("-").partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    digits = whole + ("." + fraction if fraction else "")
    return "-" + digits if negative and digits != "0" else digits


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.index = 0
        self.depth = 0

    def peek(self):
        return self.tokens[self.index] if self.index < len(self.tokens) else ("end", "", -1)

    def take(self):
        token = self.peek()
        self.index += 1
        return token

    def expect(self, kind: str, value: str | None = None):
        token = self.take()
        if token[0] != kind or (value is not None and token[1] != value):
            raise ExpressionError(f"expected '{value}', found {_describe(token)}")
        return token

    def parse(self):
        if not self.tokens:
            raise ExpressionError("empty expression")
        tree = self.disjunction()
        if self.peek()[0] != "end":
            raise ExpressionError(f"unexpected {_describe(self.peek())}")
        return tree

    def _nested(self, method):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"nested more than {MAX_DEPTH} levels deep")
        try:
            return method()
        finally:
            self.depth -= 1

    def _chain(self, keyword: str, operand):
        args = [operand()]
        while self.peek() == ("word", keyword, self.peek()[2]):
            self.take()
            args.append(operand())
        if len(args) == 1:
            return args[0]
        flat: list = []
        for arg in args:  # (a and b) and c is a and b and c: one tree per meaning
            flat.extend(arg["args"] if arg["op"] == keyword else [arg])
        return {"op": keyword, "args": flat}

    def disjunction(self):
        return self._nested(lambda: self._chain("or", self.conjunction))

    def conjunction(self):
        return self._chain("and", self.negation)

    def negation(self):
        kind, value, _ = self.peek()
        if kind == "word" and value == "not":
            self.take()
            return self._nested(lambda: {"op": "not", "arg": self.negation()})
        return self.atom()

    def atom(self):
        token = self.take()
        kind, value, _ = token
        if (kind, value) == ("punct", "("):
            tree = self.disjunction()
            self.expect("punct", ")")
            return tree
        if (kind, value) == ("word", "selected"):
            self.expect("punct", "(")
            question = self.question(self.take())
            self.expect("punct", ",")
            literal = self.take()
            if literal[0] != "text":
                raise ExpressionError(f"selected(...) takes a quoted option, found {_describe(literal)}")
            self.expect("punct", ")")
            return {"op": "selected", "question": question, "value": {"text": literal[1][1:-1]}}
        question = self.question(token)
        operator = self.take()
        if operator[0] != "op":
            raise ExpressionError(f"expected a comparison (=, !=, <, <=, >, >=) after {question}, found {_describe(operator)}")
        return {"op": operator[1], "question": question, "value": self.literal(self.take())}

    @staticmethod
    def question(token) -> str:
        kind, value, _ = token
        if kind != "word" or value in KEYWORDS or not _QUESTION.fullmatch(value):
            raise ExpressionError(f"expected a question id, found {_describe(token)}")
        return value

    @staticmethod
    def literal(token) -> dict:
        kind, value, _ = token
        if kind == "text":
            return {"text": value[1:-1]}
        if kind == "word" and _NUMBER.match(value):
            if len(value) > MAX_NUMBER_LENGTH:
                raise ExpressionError(f"number {value[:12]}... has more than {MAX_NUMBER_LENGTH} characters")
            return {"number": canonical_number(value)}
        raise ExpressionError(f"expected a quoted text or a number, found {_describe(token)}")


def _describe(token) -> str:
    kind, value, position = token
    if kind == "end":
        return "the end of the expression"
    return f"{value!r} at character {position + 1}"


def parse(text: str) -> dict:
    """Parse an expression into its tree; `ExpressionError` says what is wrong and where."""
    if not isinstance(text, str):
        raise ExpressionError(f"must be a text expression, got {text!r}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"longer than {MAX_LENGTH} characters")
    return _Parser(text).parse()


def _quote(text: str) -> str:
    return f'"{text}"' if "'" in text else f"'{text}'"


def to_text(tree: dict, xlsform: bool = False) -> str:
    """The canonical spelling of a tree (the spec hash covers this, not the author's spacing).

    ``xlsform=True`` spells it as XLSForm does: ``${q}`` for a question, ``not(...)``."""
    op = tree["op"]
    if op in ("and", "or"):
        parts = []
        for arg in tree["args"]:
            inner = to_text(arg, xlsform)
            parts.append(f"({inner})" if arg["op"] in ("and", "or") else inner)
        return f" {op} ".join(parts)
    if op == "not":
        inner = to_text(tree["arg"], xlsform)
        if xlsform:
            return f"not({inner})"
        return f"not ({inner})" if tree["arg"]["op"] in ("and", "or") else f"not {inner}"
    value = tree["value"]
    literal = _quote(value["text"]) if "text" in value else value["number"]
    question = f"${{{tree['question']}}}" if xlsform else tree["question"]
    if op == "selected":
        return f"selected({question}, {literal})"
    return f"{question} {op} {literal}"


_XLSFORM_REFERENCE = re.compile(r"\$\{([^}]*)\}")


def from_xlsform(text: str) -> dict:
    """Parse XLSForm's spelling (``${q} = 'x'``, ``selected(${q}, 'x')``, ``not(...)``)."""
    if not isinstance(text, str):
        raise ExpressionError(f"must be a text expression, got {text!r}")
    return parse(_XLSFORM_REFERENCE.sub(lambda m: m.group(1), text))


def references(tree: dict) -> list[str]:
    """The questions an expression reads, in order of first mention."""
    if tree["op"] in ("and", "or"):
        found = []
        for arg in tree["args"]:
            found += [q for q in references(arg) if q not in found]
        return found
    if tree["op"] == "not":
        return references(tree["arg"])
    return [tree["question"]]


def comparisons(tree: dict):
    """Every leaf (comparison or selected) of a tree."""
    if tree["op"] in ("and", "or"):
        for arg in tree["args"]:
            yield from comparisons(arg)
    elif tree["op"] == "not":
        yield from comparisons(tree["arg"])
    else:
        yield tree


def evaluate(tree: dict, answers: dict) -> bool:
    """Evaluate a tree against answers (question id → answer; absent or None = unanswered)."""
    op = tree["op"]
    if op == "or":
        return any(evaluate(arg, answers) for arg in tree["args"])
    if op == "and":
        return all(evaluate(arg, answers) for arg in tree["args"])
    if op == "not":
        return not evaluate(tree["arg"], answers)
    answer = answers.get(tree["question"])
    value = tree["value"]
    if answer is None:
        return op == "!="
    if op == "selected":
        return value["text"] in answer if isinstance(answer, list) else answer == value["text"]
    if "text" in value:
        equal = isinstance(answer, str) and answer == value["text"]
        return equal if op == "=" else not equal if op == "!=" else False
    try:  # floats through their shortest decimal (0.1 is the literal 0.1), lengths bounded
        left = parse_fraction(answer, tree["question"])
    except ValueError:
        return op == "!="
    right = Fraction(value["number"])
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[op]
