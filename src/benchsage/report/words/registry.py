"""The words of each kind of note: a note of the analysis (analyze/notes.py and its kin) is a
small frozen value, its kind and the data it is about; `say` puts it into words with the one
function registered for its kind. A new kind of note is a new function here, in the module of
its subject, registered with @words(Kind).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

_F = TypeVar("_F", bound=Callable[[Any], str])
_WORDS: dict[type, Callable[[Any], str]] = {}


def words(kind: type) -> Callable[[_F], _F]:
    """Register the function that words every note of `kind`."""

    def register(say_it: _F) -> _F:
        if kind in _WORDS:
            raise ValueError(f"{kind.__name__} has words already: {_WORDS[kind].__qualname__}")
        _WORDS[kind] = say_it
        return say_it

    return register


def say(note: Any) -> str:
    """The note in words. A string is said as it is: the words a data file's importer chose."""
    if isinstance(note, str):
        return note
    try:
        say_it = _WORDS[type(note)]
    except KeyError:
        raise TypeError(f"no words for a note of kind {type(note).__name__}: register them in benchsage.report.words") from None
    return say_it(note)


def said(notes: Iterable[Any], *, once: bool = False) -> list[str]:
    """Each note in words, in order; with `once`, each sentence once (two notes of different
    data may read the same)."""
    sentences = [say(n) for n in notes]
    return list(dict.fromkeys(sentences)) if once else sentences


def count(n: int, unit: str) -> str:
    """'1 test', '3 tests'."""
    return f"{n} {unit}{'' if n == 1 else 's'}"
