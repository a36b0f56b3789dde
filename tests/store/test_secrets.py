"""Which env names look like secrets, and the spec text as shown with their values masked: in
every way TOML writes a key and a string, checked by reading the masked text again, and
withheld when a value cannot be masked in place."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.store.secrets import MASK, SPREAD_MIN, WHY, env_secrets, looks_secret, mask_spec_text, spec_secret_names


@pytest.mark.parametrize("name", ["API_TOKEN", "aws_secret_access_key", "DB_PASSWORD", "PASSWD", "GITHUB_TOKENS", "apiKey",
                                  "API_KEY2", "APIKEY", "PGPASSWORD", "authToken", "DB_PASS", "MYSQL_PWD", "SSH_KEY", "credentials",
                                  "GPG_PASSPHRASE", "client-secret", "x.token"])
def test_names_that_look_like_secrets(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["MONKEY", "KEYBOARD", "TURKEY", "BYPASS", "PASSPORT", "PASSWORDLESS", "SECRETARY",
                                  "TOKENIZERS_PARALLELISM", "PWD", "OLDPWD", "PATH", "HOME", "OMP_NUM_THREADS", "SMT", ""])
def test_names_that_do_not(name: str) -> None:
    assert not looks_secret(name)


SPEC = "\n".join([
    '[experiment]',
    'name = "s"',
    """env = { API_TOKEN = "s3cret", PLAIN = "visible", "DB_PASSWORD" = 'hunter22' }""",
    '[[test]]',
    'name = "a"',
    'command = "curl -u me:s3cret http://x/"',
    'env.apiKey = """k3y',
    'value"""',
    '[[test]]',
    'name = "b"',
    'command = "true"',
    '[test.env]',
    'aws_secret_access_key = "ab\\"cd"',
    'MONKEY = "banana"',
    '[reset]',
    'command = "true"',
    "env = { GPG_PASSPHRASE = '''pp1234''' }",
    '',
])


def test_every_way_toml_writes_a_secret_is_masked() -> None:
    shown = mask_spec_text(SPEC)
    assert shown.names == ("API_TOKEN", "DB_PASSWORD", "apiKey", "aws_secret_access_key", "GPG_PASSPHRASE")
    assert shown.text is not None
    for secret in ("s3cret", "hunter22", "k3y", 'ab\\"cd', "pp1234"):
        assert secret not in shown.text
    doc = tomllib.loads(shown.text)
    assert doc["experiment"]["env"] == {"API_TOKEN": MASK, "PLAIN": "visible", "DB_PASSWORD": MASK}
    assert doc["test"][0]["command"] == f"curl -u me:{MASK} http://x/"  # the secret pasted into a command too
    assert doc["test"][1]["env"] == {"aws_secret_access_key": MASK, "MONKEY": "banana"}
    assert doc["reset"]["env"] == {"GPG_PASSPHRASE": MASK}
    # Everything else is the text as written.
    assert shown.text.replace(MASK, "") == SPEC.replace("s3cret", "").replace("hunter22", "").replace("k3y\nvalue", "").replace(
        'ab\\"cd', "").replace("pp1234", "")
    assert shown.notes()[0] == f"API_TOKEN = {MASK} ({WHY})" == "API_TOKEN = •••••• (masked: its name looks like a secret)"


def test_a_value_that_cannot_be_masked_in_place_withholds_the_text() -> None:
    # The key's name through an escape, and a value too short to be masked wherever it appears.
    text = '[experiment]\nname = "s"\nenv = { "API\\u005FTOKEN" = "abc" }\n'
    assert tomllib.loads(text)["experiment"]["env"] == {"API_TOKEN": "abc"}
    shown = mask_spec_text(text)
    assert shown.text is None and shown.names == ("API_TOKEN",)
    assert shown.notes() == ["the spec is not shown: it holds values whose names look like secrets (API_TOKEN) that could not be "
                             "masked in place"]


def test_a_spec_without_secrets_or_not_toml_is_shown_as_it_is() -> None:
    plain = '[experiment]\nname = "s"\nenv = { MONKEY = "banana" }\n'
    assert mask_spec_text(plain).text == plain and mask_spec_text(plain).notes() == []
    assert mask_spec_text("API_TOKEN = = s3cret").text == "API_TOKEN = = s3cret"
    assert spec_secret_names(plain) == () and spec_secret_names("not toml [") == () and spec_secret_names(None) == ()
    assert spec_secret_names(SPEC) == ("API_TOKEN", "DB_PASSWORD", "apiKey", "aws_secret_access_key", "GPG_PASSPHRASE")


_NAMES = st.sampled_from(["API_TOKEN", "db_password", "SecretKey", "PLAIN", "MONKEY", "N"])
# No "•" in a value: a secret that is the mask itself (or part of it) shows as the mask, which
# is then no leak, and "nowhere in what is shown" could not hold.
_VALUES = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"], exclude_characters="•"), max_size=12)
_STYLES = st.sampled_from(["basic", "literal", "multi", "multi_literal"])


def _toml_string(value: str, style: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    if style == "literal" and "'" not in value:
        return f"'{value}'"
    if style == "multi_literal" and "'''" not in value and not value.endswith("'"):
        return f"'''{value}'''"
    if style == "multi":
        return f'"""{escaped}"""' if not escaped.endswith('"') else f'"{escaped}"'
    return f'"{escaped}"'


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_NAMES, _VALUES, _STYLES), min_size=1, max_size=6, unique_by=lambda t: t[0]),
       st.sampled_from(["inline", "table", "dotted"]))
def test_masked_text_reads_as_the_spec_with_every_secret_masked(entries: list[tuple[str, str, str]], layout: str) -> None:
    """Whatever the values (quotes, backslashes, the key's name inside a value) and however the
    env is laid out: either every secret reads back as MASK and the other values as written,
    or the text is withheld; a long secret is nowhere in what is shown."""
    pairs = [(name, _toml_string(value, style)) for name, value, style in entries]
    if layout == "inline":
        body = "env = { " + ", ".join(f"{n} = {v}" for n, v in pairs) + " }\n"
    elif layout == "table":
        body = "[experiment.env]\n" + "".join(f"{n} = {v}\n" for n, v in pairs)
    else:
        body = "".join(f"env.{n} = {v}\n" for n, v in pairs)
    text = '[experiment]\nname = "p"\n' + body
    env = tomllib.loads(text)["experiment"]["env"]
    shown = mask_spec_text(text)
    secrets = {n: v for n, v in env.items() if looks_secret(n)}
    assert set(shown.names) == set(secrets)
    if shown.text is None:
        return
    again = tomllib.loads(shown.text)["experiment"]["env"]
    assert {n: v for n, v in again.items() if looks_secret(n)} == {n: MASK for n in secrets}
    assert list(env_secrets(tomllib.loads(shown.text))) == [(n, MASK) for n in secrets]
    for n, v in env.items():
        if not looks_secret(n) and not any(len(s) >= SPREAD_MIN and s in v for s in secrets.values()):
            assert again[n] == v
    for v in secrets.values():
        if len(v) >= SPREAD_MIN:
            assert v not in shown.text
