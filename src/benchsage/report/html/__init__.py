"""The self-contained HTML report: verdict, tables, figures, per-test detail, diagnostics,
provenance and warnings in one file that needs no network to open.

One module per section of the report (verdict.py, tables.py, contexts.py, ...) chooses and
orders what its section shows from the analysis, which has computed every number; page.py puts
the sections together. The markup lives in Jinja2 templates (templates/, one per section)
rendered with autoescaping, so every string that came from a spec, a data file or a test's
output is escaped wherever a template prints it. A Content-Security-Policy forbids any script
but the report's own (sort.js: it sorts tables, and opens a folded section a link leads into).
"""

from benchsage.report.html.page import render_report, write_report

__all__ = ["render_report", "write_report"]
