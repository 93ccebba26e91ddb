"""Reading a spec's text: JSON, YAML 1.2 (where ``yes`` and ``no`` stay strings) or a file, with
the size limits that keep a hostile spec from costing more than a glance."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import SpecError
from .json_text import MAX_JSON_DEPTH

#: A spec file or body larger than this is refused before it is parsed (a 200-question bilingual
#: survey is about 120 KB).
MAX_SPEC_BYTES = 256 * 1024
#: The pure-Python YAML 1.2 parser costs 50-60 µs per structural mark (line breaks, commas, colons,
#: dashes, brackets) on the dense flow lists of the worst case: a YAML spec with more marks than this is
#: refused before it is parsed, so the largest one checks in about 0.6 s of CPU (at 15,000 it took
#: 0.86-1.24 s, over the second every input must be answered in). A 200-question bilingual survey has
#: about 7,500; larger questionnaires fit as JSON, which has no such cost.
MAX_YAML_MARKS = 10_000
_YAML_MARKS = re.compile(r"[\n,:\-\[\]{}]")


def from_json(text: str):
    """The spec in a JSON text (a dict, unvalidated)."""
    check_size(text)
    _check_nesting(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise SpecError(f"survey: not valid JSON ({error})") from None
    except RecursionError:
        raise SpecError("survey: nested too deeply to be a survey spec") from None
    except ValueError as error:  # an integer past Python's digit limit (4300)
        raise SpecError(f"survey: {error}") from None


def from_yaml(text: str):
    """The spec in a YAML text (a dict, unvalidated); JSON is YAML 1.2 too."""
    check_size(text)
    marks = len(_YAML_MARKS.findall(text))
    if marks > MAX_YAML_MARKS:
        raise SpecError(f"survey: {marks:,} YAML tokens, more than the {MAX_YAML_MARKS:,} a spec may have "
                        f"(long option lists cost the most; JSON specs are read without this limit)")
    _check_nesting(text)
    return load_yaml(text)


def _check_nesting(text: str):
    """Refuse flow collections ({ [) nested deeper than any spec needs, before a parser recurses into them
    (5,000 '{' took a YAML parser 5 to 16 s to fail). Quoted text is skipped."""
    depth, deepest, quote = 0, 0, None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                raise SpecError(f"survey: nested deeper than {MAX_JSON_DEPTH} levels, more than any survey spec needs")
        elif char in "}]":
            depth = max(depth - 1, 0)


def read_text(path: Path) -> str:
    """A spec file's text, refused before reading when larger than `MAX_SPEC_BYTES`."""
    try:
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError(f"{path}: larger than {MAX_SPEC_BYTES // 1024} KiB, the limit for a survey spec")
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not a text file (a spec is UTF-8 YAML or JSON; an XLSForm ends in .xlsx)") from None


def check_size(text: str):
    if len(text) > MAX_SPEC_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_SPEC_BYTES:
        raise SpecError(f"survey: larger than {MAX_SPEC_BYTES // 1024} KiB, the limit for a survey spec")


def load_yaml(text: str):
    """Parse YAML 1.2, where ``yes``, ``no``, ``on`` and ``off`` are strings, not booleans.

    PyYAML's YAML 1.1 rules would turn ``{yes: 1/4, no: 1/4}`` into boolean keys.
    """
    try:
        from ruamel.yaml import YAML  # an optional extra: the client needs only the standard library
        from ruamel.yaml.error import YAMLError
    except ImportError:  # the client itself needs only the standard library
        raise SpecError("reading YAML specs needs ruamel.yaml: pip install 'deniable[yaml]' (or use JSON)") from None
    try:
        # pure: ruamel's C parser (libyaml) follows the YAML 1.1 grammar and refuses some 1.2
        # plain scalars ("Which region do you live in?, …" in a flow mapping).
        # Parsed once: the node graph (an alias is its anchor's node again, so the graph is the size of the text) is
        # checked, then built; a second parse for the check took half of a large spec's 1.1 s.
        yaml = YAML(typ="safe", pure=True)
        node = yaml.compose(text)
        _check_expansion(node)
        data = None if node is None else yaml.constructor.construct_document(node)
    except SpecError:
        raise
    except YAMLError as error:
        raise SpecError(f"survey: not valid YAML ({error})") from None
    except RecursionError:  # block nesting deep enough to exhaust the parser
        raise SpecError("survey: nested too deeply to be a survey spec") from None
    except ValueError as error:  # an integer past Python's digit limit (4300)
        raise SpecError(f"survey: {error}") from None
    try:
        return _plain(data)
    except RecursionError:  # a recursive alias (a: &a [*a]) or absurd nesting
        raise SpecError("survey: the YAML refers to itself (a recursive alias) or is nested too deeply") from None


#: The most values a YAML spec may hold once its aliases are expanded (a spec of 10,000 marks without aliases
#: holds fewer): each alias repeats what its anchor holds, so nine of them, nested, turned 562 bytes into 10⁹.
MAX_YAML_VALUES = 100_000


def _check_expansion(root) -> None:
    """Count what the document holds with every alias expanded, on the composed node graph (where an alias is its
    anchor's node again), before anything is built: an alias bomb ("billion laughs": a 562-byte spec took 31 s and
    377 MB, and grew a server's worker past 590 MiB) is refused, and so is an alias inside its own anchor. Each node
    is counted once (its expanded size kept), so the check is linear in the text."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode  # loaded with the YAML parser that called this

    def children(node) -> list:
        if isinstance(node, MappingNode):
            return [part for pair in node.value for part in pair]
        return list(node.value) if isinstance(node, SequenceNode) else []

    sizes: dict = {}  # id(node) -> values under it, aliases expanded
    counting: set = set()  # the nodes whose children are being counted: reaching one again is a cycle
    pending = [] if root is None else [(root, False)]
    while pending:
        node, counted = pending.pop()
        key = id(node)
        if counted:
            counting.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children(node))
            if sizes[key] > MAX_YAML_VALUES:
                raise SpecError(f"survey: the YAML's aliases expand to more than {MAX_YAML_VALUES:,} values; a survey "
                                "spec holds far fewer (write the repeated parts out, or use fewer aliases)")
        elif key not in sizes:
            if key in counting:
                raise SpecError("survey: the YAML refers to itself (a recursive alias) or is nested too deeply")
            counting.add(key)
            pending.append((node, True))
            pending.extend((child, False) for child in children(node))


def _plain(value):
    """ruamel's safe loader already yields dict/list/str/int/float/bool/None; dates become text."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (str, bool)) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)
