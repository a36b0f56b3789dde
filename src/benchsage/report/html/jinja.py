"""The templates: Jinja2 with autoescaping, from the installed package (a wheel carries them as
package data), and the report's own files (stylesheet, table sorter) beside them."""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from benchsage.report.html.numbers import DASH, ci_in_unit, commas, fmt, fmt_p, fmt_pct, in_unit, sortkey, yes_no
from benchsage.report.words import said
from benchsage.report.words.effects import shift_text

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def asset(name: str) -> str:
    """One of the report's own files (report.css, sort.js) as text."""
    return resources.files("benchsage.report.html").joinpath(name).read_text(encoding="utf-8")


def _no_control(value: Any) -> Any:
    """Every printed value passes here before it is escaped: control characters (which HTML
    does not allow, e.g. NUL in a test's output) become U+FFFD, and a value that is not known
    (None, which Jinja would print as "None") a dash. Markup is ours and left alone."""
    if value is None:
        return DASH
    if isinstance(value, str) and not isinstance(value, Markup):
        return _CONTROL.sub("\ufffd", value)
    return value


@functools.cache
def environment() -> jinja2.Environment:
    """The templates, from the installed package (a wheel carries them as package data)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("benchsage.report.html", "templates"),
        autoescape=True,  # every template, whatever its name: data never becomes markup
        undefined=jinja2.StrictUndefined,  # a misspelt field is an error, not an empty cell
        finalize=_no_control,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(fmt=fmt, fmt_p=fmt_p, fmt_pct=fmt_pct, sortkey=sortkey, yes_no=yes_no, commas=commas, said=said,
                       in_unit=in_unit, ci_in_unit=ci_in_unit, effect=shift_text)
    env.globals["DASH"] = DASH
    return env
