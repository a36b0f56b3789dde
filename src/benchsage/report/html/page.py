"""The page: every section's view in the order the report shows them, the header that links
them, and the file.

A section is a module of this package with a KEY (its anchor, and its template KEY.html), a
TITLE (its link in the header) and view(material): what its template draws, or None when the
report has no such section. A new section is a new module listed in SECTIONS and a template.
Every section below the top one folds (an HTML <details>): its HEADING and gist(view), a few
words with its headline count, stay in sight; OPEN sections are unfolded when the page opens.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Collection, Mapping, Protocol

from markupsafe import Markup

from benchsage.analyze.verdict import Analysis
from benchsage.errors import UsageError
from benchsage.report.html import (
    comparisons,
    contexts,
    curves,
    detail,
    diagnostics,
    factorial,
    figures,
    observer,
    provenance,
    sequential,
    tables,
    verdict,
    warnings,
    workers,
)
from benchsage.report.html.jinja import asset, environment
from benchsage.report.html.material import Material
from benchsage.store.table import TrialTable
from benchsage.vocabulary import VERSION


class Section(Protocol):
    KEY: str
    TITLE: str

    def view(self, material: Material) -> dict[str, Any] | None: ...


class Folding(Section, Protocol):
    HEADING: str
    OPEN: bool

    def gist(self, shown: dict[str, Any]) -> str: ...


# The answer first: the verdict, the claims and the curves the experiment was run for, the
# tests of the primary metrics and the treatments the spec varied on purpose (open); then where
# an effect comes from, the figures, the detail, the warnings and the provenance (folded).
SECTIONS: tuple[Section, ...] = (
    verdict, comparisons, curves, tables, factorial, contexts, observer, sequential, workers, diagnostics, figures, detail,
    warnings, provenance,
)
TOP: Section = verdict  # never folded: it draws its own <section>


def write_report(analysis: Analysis, table: TrialTable, path: str | os.PathLike[str], *, mode: int = 0o666) -> None:
    """Write the HTML report of `analysis` (computed from `table`) to `path` (write_page)."""
    write_page(render_report(analysis, table), path, mode=mode)


def write_page(text: str, path: str | os.PathLike[str], *, mode: int = 0o666) -> None:
    """Write a page to `path`: a new or regular file is written next to its destination, in a
    temporary file of a name nobody can foresee (created anew, never one that was there), and
    renamed into place, so a reader never sees half a report; it gets the permissions a new
    file gets (`mode`, 0666 unless asked for less, less the umask: the report `run` writes
    into an experiment directory is 0644 at most, as store/modes.py says of everything
    there). A symbolic link to a file keeps pointing at it (the file
    it names is the one replaced). A device or a pipe (/dev/stdout, a FIFO) is written into,
    never replaced. Raises UsageError naming the destination."""
    dest = Path(path)
    try:
        found = os.stat(dest)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise UsageError(f"cannot write the report to {dest}: {exc.strerror or exc}") from exc
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise UsageError(f"cannot write the report to {dest}: it is a directory")
    if found is not None and not stat.S_ISREG(found.st_mode):
        try:
            with open(dest, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write the report to {dest}: {exc.strerror or exc}") from exc
        return
    if found is not None and dest.is_symlink():
        dest = Path(os.path.realpath(dest))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), mode & ~_umask())
            f.write(text)
        os.replace(tmp, dest)
        tmp = None
    except OSError as exc:
        raise UsageError(f"cannot write the report to {dest}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            os.unlink(tmp)


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no way to read it without setting it
    os.umask(mask)
    return mask


def render_report(analysis: Analysis, table: TrialTable, sections: Collection[str] | None = None) -> str:
    """The report as one HTML string; `sections`: only the sections of these keys (a notebook
    showing one part; the figures of the others are not drawn)."""
    script = asset("sort.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    # No network at all: nothing may be fetched, only data: images and the page's own script may run.
    csp = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    primary = tuple(v for v in analysis.tests if v.primary)
    chosen, note = detail.choose_detail(primary)
    material = Material(analysis, table, primary, tuple(chosen), note)
    views = {section.KEY: section.view(material) if sections is None or section.KEY in sections else None
             for section in SECTIONS}
    shown = [section for section in SECTIONS if views[section.KEY] is not None]
    page = {
        "title": _title(analysis, table),
        "csp": csp,
        "version": VERSION,
        # Our own files, shipped with the package: markup, not data.
        "css": Markup(asset("report.css")),
        "script": Markup(script),
        "header": {"links": [(s.KEY, s.TITLE) for s in shown], "version": analysis.tool_version or VERSION,
                   "n_values": len(table), "n_tests": len(analysis.tests)},
        "sections": [_fold(s, views[s.KEY]) for s in shown],
        **views,
    }
    return environment().get_template("report.html").render(page)


def _fold(section: Section, shown: dict[str, Any]) -> dict[str, Any]:
    """How report.html wraps a section: the top one as it is, every other one in a <details>
    whose <summary> holds its heading and gist."""
    if section is TOP:
        return {"key": section.KEY, "folds": False}
    folding: Folding = section  # type: ignore[assignment]
    return {"key": section.KEY, "folds": True, "open": folding.OPEN, "heading": folding.HEADING, "gist": folding.gist(shown)}


def _title(analysis: Analysis, table: TrialTable) -> str:
    for prov in (table.provenance, analysis.provenance):
        name = prov.get("name") if isinstance(prov, Mapping) else None
        if name:
            return f"benchsage report: {name}"
    sources = analysis.sources or table.sources
    if sources:
        return f"benchsage report: {Path(sources[0]).name}" + (f" and {len(sources) - 1} more" if len(sources) > 1 else "")
    return "benchsage report"
