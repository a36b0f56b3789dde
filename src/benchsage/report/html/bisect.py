"""The HTML page of a bisect search (DIR/bisect.html): the answer, the figure, the probes."""

from __future__ import annotations

import os

from markupsafe import Markup

from benchsage.analyze.bisect import BisectResult
from benchsage.report.bisectplot import probes_figure
from benchsage.report.html.jinja import asset, environment
from benchsage.report.html.page import write_page
from benchsage.report.words import bisect as words
from benchsage.vocabulary import VERSION


def render_bisect_page(r: BisectResult) -> str:
    rows = [{"commit": "bad", "subject": r.bad_vs_good.subject, "verdict": r.bad_vs_good.verdict, "runs": r.bad_vs_good.runs,
             "ratio": words.ratio_text(r.bad_vs_good.ratio_to_good, r.bad_vs_good.ci)}]
    rows += [{"commit": words.short(p.commit), "subject": p.subject, "verdict": p.verdict, "runs": p.runs,
              "ratio": words.ratio_text(p.ratio_to_good, p.ci)} for p in sorted(r.probes, key=lambda p: p.index)]
    plot = probes_figure(r)
    page = {
        "title": f"benchsage bisect: {r.test}, {r.metric}",
        "csp": "default-src 'none'; img-src data:; style-src 'unsafe-inline'",
        "version": VERSION,
        "css": Markup(asset("report.css")),
        "answer": words.answer(r),
        "plot": plot,
        "headers": words.HEADERS,
        "rows": rows,
        "skipped": [words.skipped_line(c, why, line) for c, why, line in r.skipped],
        "builds": r.builds,
        "trials": r.trials,
        "method": words.method(r),
    }
    return environment().get_template("bisect.html").render(page)


def write_bisect_page(r: BisectResult, directory: str, path: str | None = None) -> str:
    path = path or os.path.join(directory, "bisect.html")
    write_page(render_bisect_page(r), path)
    return path
