"""TOML text from plain values, for the spec writer (write.py): Python's standard library reads
TOML (tomllib) but does not write it. Only what a spec holds: strings, integers, floats, booleans,
arrays, inline tables, tables and arrays of tables; tomllib reads back exactly what was given.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# The characters a basic string must escape: TOML 1.0 allows every other Unicode scalar as it is.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_CONTROL = re.compile(r'["\\\x00-\x1f\x7f]')
_CONTROL_BUT_NEWLINE = re.compile(r'["\\\x00-\x09\x0b-\x1f\x7f]')
_LITERAL_REFUSED = re.compile(r"['\x00-\x1f\x7f]")  # a literal string holds anything but ' and control characters


class Inline(dict):  # type: ignore[type-arg]
    """A table written inline, `{a = 1, b = "x"}`, where a plain dict would become a `[table]`."""


def dumps(doc: Mapping[str, Any]) -> str:
    """The TOML document of `doc`: its plain values first, then its tables (`[a]`, `[a.b]`) and
    arrays of tables (`[[a]]`, a list of dicts); an empty list is the empty array `[]`. Raises
    ValueError for what TOML cannot hold (a string with a lone surrogate, a value of another type)."""
    lines: list[str] = []
    _table(lines, (), doc)
    return "\n".join(lines) + "\n"


def key(name: str) -> str:
    """A key: bare when TOML allows (letters, digits, _ and -), else a quoted string."""
    return name if _BARE_KEY.fullmatch(name) else string(name)


def string(text: str, *, multiline: bool = False) -> str:
    """A string TOML reads back as `text`: a literal string ('...') where it reads better (a
    backslash or a double quote in it, and nothing a literal string refuses), a multi-line
    basic string where `multiline` and it holds a newline, else a basic string with escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{text!r} is not Unicode text (it holds bytes that are not UTF-8); TOML cannot hold it") from None
    if ("\\" in text or '"' in text) and not _LITERAL_REFUSED.search(text):
        return f"'{text}'"
    if multiline and "\n" in text:
        # After the opening quotes a newline is dropped by the reader: the text starts on the next line.
        return '"""\n' + _CONTROL_BUT_NEWLINE.sub(_escape, text) + '"""'
    return '"' + _CONTROL.sub(_escape, text) + '"'


def _escape(match: re.Match[str]) -> str:
    c = match[0]
    return _ESCAPES.get(c) or f"\\u{ord(c):04X}"


def value(v: Any, *, multiline: bool = False) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return repr(v)  # finite: digits with '.' or an exponent, as TOML wants; else inf or -inf
    if isinstance(v, str):
        return string(v, multiline=multiline)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + "}"
    raise ValueError(f"cannot write {type(v).__name__} as TOML: {v!r}")


def _is_table(v: Any) -> bool:
    return isinstance(v, Mapping) and not isinstance(v, Inline)


def _is_tables(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(_is_table(x) for x in v)


def _table(lines: list[str], path: tuple[str, ...], table: Mapping[str, Any], header: str = "") -> None:
    plain = [(k, v) for k, v in table.items() if not _is_table(v) and not _is_tables(v)]
    # A table below the top holding only tables needs no header; an element of an array of tables always does.
    if header and (plain or len(path) == 1 or header.startswith("[[") or not any(_is_table(v) or _is_tables(v) for v in table.values())):
        if lines and len(path) == 1:  # a blank line before each top-level table; its own tables follow it closely
            lines.append("")
        lines.append(header)
    lines += [f"{key(k)} = {value(v, multiline=True)}" for k, v in plain]
    for k, v in table.items():
        if _is_table(v):
            _table(lines, (*path, k), v, "[" + ".".join(key(p) for p in (*path, k)) + "]")
    for k, v in table.items():
        if _is_tables(v):
            for item in v:
                _table(lines, (*path, k), item, "[[" + ".".join(key(p) for p in (*path, k)) + "]]")
