"""What the HTML report tests share: names that try to inject markup, a parser of the page,
the cells of a section's rows, a treatment experiment, and the report of an experiment with the
harness metrics of measurement control."""

from __future__ import annotations

import itertools
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import write_report
from benchsage.store.table import TrialTable

import browser

# Names and texts that try to become markup: the report must show them as text.
XSS_TEST = "<img src=x onerror=\"document.title='pwned'\">"
SCRIPT_TEST = "<script>document.title='pwned'</script>"
SCRIPT_METRIC = "ops</title><script>document.title='pwned'</script>"
BOLD_TEST = "cost $x^2$ & <b>bold</b>"
SPEC_TEXT = "[experiment]\nname = \"</pre><script>document.title='pwned'</script>\"\n"
STDOUT = "<img src=x onerror=\"document.title='pwned'\">"
AMP_SCRIPT_TEST = "<script>document.title='pwned'</script> & <b>co</b> &amp;"
# The two tests of the treatment experiment's claim.
CLAIM_A = "o3 <i>fast</i> & co"
CLAIM_B = "o2"
# The headings of the metrics measurement control adds, where the host allows them.
MEASURED_HEADINGS = {
    "peak_memory": "metric peak_memory (peak_memory (KiB), lower is better; not in the correction family; 3 tests)",
    "cpu_time": "metric cpu_time (cpu_time (s), lower is better; not in the correction family; 3 tests)",
    "energy": "metric energy (energy (J), lower is better; not in the correction family; 3 tests)",
}

needs_chromium = pytest.mark.skipif(not browser.available(), reason="chromium is not installed")


class Page(HTMLParser):
    """Every element (tag, attributes) and the text of a page, entities decoded."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        self._in_script = tag == "script"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)

    def tags(self, name: str) -> list[dict[str, str]]:
        return [attrs for tag, attrs in self.elements if tag == name]

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def assert_nothing_injected(page: Page) -> None:
    """Only the report's own sorter runs; no markup from data became an element."""
    handlers = [(tag, a) for tag, attrs in page.elements for a in attrs if a.lower().startswith("on")]
    assert handlers == []
    assert len(page.tags("script")) == 1
    for tag in ("img", "iframe", "object", "embed", "link", "base", "form", "b", "i", "u"):
        assert page.tags(tag) == [], tag


def section_of(text: str, name: str) -> str:
    """The markup of the report's section `name`: up to the next section of the page (or its
    script), whatever order the sections come in."""
    start = text.index(f'<section id="{name}">')
    ends = [i for i in (text.find('<section id="', start + 1), text.find("<script>", start)) if i >= 0]
    return text[start: min(ends) if ends else len(text)]


def row_text(section: str, first_cell: str) -> list[str]:
    """The text of each cell of the rows whose first cell reads `first_cell`."""
    out = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", section, re.S):
        cells = [Page(c).all_text for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells and cells[0] == first_cell:
            out.append(cells)
    return out


def treatment_table(seed: int = 0, contexts: int = 8, reps: int = 3) -> TrialTable:
    """o3 vs o2 measured in `contexts` contexts (env_bytes, cpus), with and without strace, on a
    2^2 design (smt, governor), in both arms. o3 is 7% faster, except in contexts with 2,600
    environment bytes or more, where it is 10% slower (Mytkowicz et al.'s flip); strace adds 35%;
    smt on saves 10%, the performance governor 3%."""
    rng = np.random.default_rng(seed)
    env = rng.integers(0, 4096, contexts)
    env[:3] = (3000, 3800, 100)  # contexts on both sides of the flip
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "context", "env", "cpus", "observer", "smt", "gov")}
    run = 0
    for c, obs, smt, gov, arm, _ in itertools.product(range(contexts), ("none", "strace"), ("off", "on"), ("powersave", "performance"),
                                                      ("fixed", "random"), range(reps)):
        order = [CLAIM_A, CLAIM_B] if arm == "fixed" or rng.random() < 0.5 else [CLAIM_B, CLAIM_A]
        for pos, test in enumerate(order):
            value = 1.0 if test == CLAIM_B else (0.93 if env[c] < 2600 else 1.1)
            value *= (1.35 if obs == "strace" else 1.0) * (0.9 if smt == "on" else 1.0) * (0.97 if gov == "performance" else 1.0)
            value *= 1 + 0.01 * rng.standard_normal()
            for k, x in zip(cols, (test, arm, value, run, pos, f"c{c}", str(env[c]), str(c % 2), obs, smt, gov)):
                cols[k].append(x)
        run += 1
    return TrialTable.from_columns(
        test=cols["test"], arm=cols["arm"], value=cols["value"], run=cols["run"], position=cols["position"],
        metric=["wall_time"] * len(cols["test"]),
        treatments={"context": cols["context"], "context:env_bytes": cols["env"], "context:cpus": cols["cpus"],
                    "observer": cols["observer"], "factor:smt": cols["smt"], "factor:governor": cols["gov"]},
        provenance={"compare": [{"a": CLAIM_A, "b": CLAIM_B, "metric": "wall_time"}, {"a": CLAIM_A, "b": "gone"}],
                    "factors": [{"name": "smt", "levels": ["off", "on"]}, {"name": "governor", "levels": ["powersave", "performance"]}],
                    "observer_baseline": "none"},
    )


def measured_report(tmp_path: Path, **kw) -> tuple[Path, Analysis]:
    """The report of a journal with the harness metrics (tests/analyze/measured_data.py)."""
    import sys

    from benchsage.api import analyze_sources

    sys.path.insert(0, str(Path(__file__).parents[2] / "analyze"))
    from measured_data import write_measured

    analysis, table = analyze_sources([str(write_measured(tmp_path / "exp", **kw))], format="benchsage")
    path = tmp_path / "report.html"
    write_report(analysis, table, path)
    return path, analysis
