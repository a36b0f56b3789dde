"""The TOML emitter of the spec writer: whatever it is given, tomllib reads back exactly that,
strings with quotes, backslashes, newlines, control characters and any Unicode included."""

from __future__ import annotations

import math
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.spec.emit import Inline, dumps, key, string

TEXT = st.text(st.characters(blacklist_categories=("Cs",)))  # any Unicode scalar: TOML holds no lone surrogates
SCALARS = st.one_of(TEXT, st.integers(-(1 << 63), (1 << 63) - 1), st.booleans(),
                    st.floats(allow_nan=False), st.just(math.inf), st.just(-math.inf))


def _values(depth: int) -> st.SearchStrategy[Any]:
    if depth == 0:
        return SCALARS
    inner = _values(depth - 1)
    return st.one_of(SCALARS, st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3).map(Inline))


def _tables(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    """A table: plain values, tables and arrays of tables (non-empty lists of tables)."""
    plain = st.dictionaries(TEXT, _values(2), max_size=4)
    if depth == 0:
        return plain
    sub = _tables(depth - 1)
    nested = st.dictionaries(TEXT, st.one_of(sub, st.lists(sub, min_size=1, max_size=2)), max_size=3)
    return st.tuples(plain, nested).map(lambda pair: {**pair[1], **pair[0]})


@settings(max_examples=150, deadline=None)
@given(_tables(2))
def test_tomllib_reads_back_every_document_the_emitter_writes(doc: dict[str, Any]) -> None:
    assert tomllib.loads(dumps(doc)) == doc


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_every_string_reads_back_as_itself_as_a_value_on_one_line_on_several_and_as_a_key(text: str) -> None:
    assert tomllib.loads(f"v = {string(text)}")["v"] == text
    assert "\n" not in string(text)
    assert tomllib.loads(f"v = {string(text, multiline=True)}")["v"] == text
    assert tomllib.loads(f"{key(text)} = 1") == {text: 1}


@pytest.mark.parametrize("text, written", [
    ("sleep 0.1", '"sleep 0.1"'),
    ("grep -E '^a\\s' f", '"grep -E \'^a\\\\s\' f"'),  # a ' and a backslash: a basic string, the backslash escaped
    ('python3 -c "print(1)"', "'python3 -c \"print(1)\"'"),  # double quotes and no ': a literal string, as a person writes it
    ("a\\b", "'a\\b'"),
    ("tab\there", '"tab\\there"'),
    ("bell\x07 del\x7f nul\x00", '"bell\\u0007 del\\u007F nul\\u0000"'),
    ("naïve ☃ 🐍", '"naïve ☃ 🐍"'),  # Unicode as it is (UTF-8)
])
def test_strings_are_written_as_a_person_would_and_escaped_where_toml_needs(text: str, written: str) -> None:
    assert string(text) == written
    assert tomllib.loads(f"v = {written}")["v"] == text


def test_a_string_with_newlines_is_written_on_several_lines_where_a_table_holds_it() -> None:
    script = 'set -e\nprintf "%s\\n" $HOME\r\necho \'done\'\n'
    text = dumps({"test": [{"command": script, "env": Inline(A=script)}]})
    assert '"""\nset -e\nprintf \\"%s\\\\n\\" $HOME\\r\necho \'done\'\n"""' in text  # only \r escaped among the line ends
    assert tomllib.loads(text) == {"test": [{"command": script, "env": {"A": script}}]}


def test_keys_are_bare_where_toml_allows_and_quoted_otherwise() -> None:
    assert [key(k) for k in ("conns", "A_B-1", "a.b", "", "a b", "é")] == ["conns", "A_B-1", '"a.b"', '""', '"a b"', '"é"']


def test_tables_come_after_plain_values_and_nested_headers_name_their_path() -> None:
    doc = {"experiment": {"name": "x", "env": Inline(A="1")},
           "worker": [{"name": "pair", "roles": {"server": {"kind": "ssh", "host": "s"}, "client": {}}}],
           "test": [{"command": "a", "metric": [{"name": "m", "json": "m"}]}, {"command": "b", "metric": []}]}
    text = dumps(doc)
    assert text == ('[experiment]\nname = "x"\nenv = {A = "1"}\n\n'
                    '[[worker]]\nname = "pair"\n[worker.roles.server]\nkind = "ssh"\nhost = "s"\n[worker.roles.client]\n\n'
                    '[[test]]\ncommand = "a"\n[[test.metric]]\nname = "m"\njson = "m"\n\n'
                    '[[test]]\ncommand = "b"\nmetric = []\n')
    assert tomllib.loads(text) == doc


def test_numbers_keep_their_type_and_value() -> None:
    doc = {"a": 1, "b": 1.0, "c": 0.05, "d": 1e-300, "e": 1e16, "f": -0.0, "g": math.inf, "h": -math.inf, "i": True}
    back = tomllib.loads(dumps(doc))
    assert back == doc and {k: type(v) for k, v in back.items()} == {k: type(v) for k, v in doc.items()}
    assert math.copysign(1, back["f"]) == -1
    assert math.isnan(tomllib.loads(dumps({"n": math.nan}))["n"])


def test_what_toml_cannot_hold_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not UTF-8"):
        dumps({"command": "cat caf\udce9"})  # a file name's byte as Python's argv decoding keeps it
    with pytest.raises(ValueError, match="cannot write"):
        dumps({"x": None})
