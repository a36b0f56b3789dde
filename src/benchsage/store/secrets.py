"""Env values whose names look like secrets (API_TOKEN, DB_PASSWORD, aws_secret_access_key): which
names look so, and the spec text as benchsage shows it, with those values masked. The journal
keeps the spec as written (it is the user's own file); reports show the masked text, and an
experiment whose spec holds such a value is kept private to its user (store/modes.py).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

MASK = "••••••"
WHY = "masked: its name looks like a secret"

# A word part that ends with one of these looks like a secret (PGPASSWORD, authToken, DB_SECRETS).
_ENDINGS = ("token", "secret", "password", "passwd", "passphrase", "credential")
# These are too short to match inside a word (MONKEY, BYPASS): the whole part, or a compound of a key.
_WHOLE = {"key", "pass", "pwd"}
_KEY_COMPOUNDS = {"apikey", "accesskey", "authkey", "privatekey", "secretkey", "signingkey", "encryptionkey", "masterkey",
                  "licensekey", "sshkey"}
_NOT_SECRET = ("PWD", "OLDPWD")  # the shell's working directories
# Word parts: a run of capitals not followed by a lower-case letter (API, AWS), or one capital
# and lower-case letters (Token); digits and punctuation separate them.
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
# A secret value also found elsewhere in the spec text (pasted into a command) is masked there
# too when it is at least this long: a shorter one would mask ordinary words and numbers.
SPREAD_MIN = 6


def looks_secret(name: str) -> bool:
    """Whether an env variable's name looks like it holds a secret: a word part (split at `_`,
    `-`, `.`, digits and camelCase) that is TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE or
    CREDENTIAL, or ends with one (PGPASSWORD), or is KEY, PASS or PWD, or a compound key
    (APIKEY); plurals too; case-insensitive. API_TOKEN, aws_secret_access_key, DB_PASSWORD,
    apiKey and MYSQL_PWD do; MONKEY, KEYBOARD, BYPASS, TOKENIZERS_PARALLELISM and PWD do not."""
    if name in _NOT_SECRET:
        return False
    for part in _PARTS.findall(name):
        p = part.lower()
        singular = p[:-1] if p.endswith("s") else p
        if {p, singular} & _WHOLE or singular in _KEY_COMPOUNDS or any(singular.endswith(w) for w in _ENDINGS):
            return True
    return False


def masked_env(env: Mapping[str, Any]) -> dict[str, Any]:
    """`env` with the values of names that look like secrets replaced by MASK."""
    return {k: MASK if looks_secret(str(k)) else v for k, v in env.items()}


def env_secrets(doc: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of every entry of an `env` table, anywhere in a parsed spec, whose name
    looks like a secret ([experiment], [[test]], [reset] and its steps, [init], services...)."""
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            if key == "env" and isinstance(value, Mapping):
                yield from ((str(k), v) for k, v in value.items() if looks_secret(str(k)))
            else:
                yield from env_secrets(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from env_secrets(item)


def spec_secret_names(text: str | None) -> tuple[str, ...]:
    """The names, in order and once each, of the env entries of a spec text that look like
    secrets; none when the text is not TOML."""
    try:
        doc = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return ()
    return tuple(dict.fromkeys(name for name, _ in env_secrets(doc)))


@dataclass(frozen=True)
class MaskedSpec:
    """A spec text as shown: `text` with the masked values, or None when they could not be
    masked in place (then the text is not shown at all); `names`: what was masked."""

    text: str | None
    names: tuple[str, ...]

    def notes(self) -> list[str]:
        """One line per masked name, as the reader sees it next to the text."""
        if self.text is None:
            return [f"the spec is not shown: it holds values whose names look like secrets ({', '.join(self.names)}) "
                    "that could not be masked in place"]
        return [f"{name} = {MASK} ({WHY})" for name in self.names]


# A TOML string: multi-line basic or literal first, then basic (with escapes) or literal.
_STRING = r'("""[\s\S]*?"""(?!")|\'\'\'[\s\S]*?\'\'\'(?!\')|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\')'


def mask_spec_text(text: str) -> MaskedSpec:
    """The spec text with the values of its env entries whose names look like secrets masked,
    where they are assigned and wherever else a value of SPREAD_MIN characters or more
    appears. Checked by reading the masked text again: every such entry must hold MASK, else
    the text is withheld (MaskedSpec.text None). A text that is not TOML is returned as it is."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return MaskedSpec(text, ())
    secrets = list(env_secrets(doc))
    if not secrets:
        return MaskedSpec(text, ())
    names = tuple(dict.fromkeys(name for name, _ in secrets))
    masked = text
    for name in names:
        key = re.escape(name)
        assigned = re.compile(rf'(?:"{key}"|\'{key}\'|(?<![\w-]){key}(?![\w-]))\s*=\s*{_STRING}')
        masked = assigned.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + _quoted(m.group(1)), masked)
    for value in sorted({v for _, v in secrets if isinstance(v, str) and len(v) >= SPREAD_MIN}, key=len, reverse=True):
        masked = masked.replace(value, MASK)
    try:
        again = list(env_secrets(tomllib.loads(masked)))
    except tomllib.TOMLDecodeError:
        return MaskedSpec(None, names)
    if len(again) != len(secrets) or any(value != MASK for _, value in again):
        return MaskedSpec(None, names)
    return MaskedSpec(masked, names)


def _quoted(token: str) -> str:
    """MASK in the quotes of the string token it replaces."""
    quote = token[:3] if token[:3] in ('"""', "'''") else token[0]
    return f"{quote}{MASK}{quote}"
