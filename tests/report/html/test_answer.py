"""The report opens with the terminal's one-screen answer: the same lines, in the same order,
from a real experiment whose test failed."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

from benchsage.api import analyze_sources
from benchsage.report.html import render_report
from benchsage.report.words.answer import answer


def test_the_report_opens_with_the_same_answer_as_the_terminal(tmp_path: Path) -> None:
    (tmp_path / "spec.toml").write_text(
        '[experiment]\nname = "answer"\nruns = 6\nseed = 1\n\n[[test]]\nname = "fine"\ncommand = "true"\n\n'
        '[[test]]\nname = "typo"\ncommand = "pyhton3 -c 1"\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", "spec.toml", "-o", "out", "--ignore-failures"], cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300, env={**os.environ, "BENCHSAGE_REPORT": "0"})
    assert done.returncode == 0, done.stderr
    analysis, table = analyze_sources([str(tmp_path / "out")], format="benchsage")
    page = render_report(analysis, table)
    verdict = page[page.index('<section id="verdict">'): page.index("</section>", page.index('<section id="verdict">'))]
    assert 'class="verdict tests-failed' in verdict
    shown = [html.unescape(re.sub(r"<[^>]+>", "", text)).strip()
             for text in re.findall(r'<(?:p|li) class="(?:headline |method|tone-)[^"]*"[^>]*>(.*?)</(?:p|li)>', verdict, re.S)]
    lines = answer(analysis)
    assert shown == [line.text for line in lines]
    assert shown[0] == "Tests failed: typo (12 of 12 trials)."
    assert shown[1] == "typo: 12 of 12 trials failed: exit status 127: /bin/sh: 1: pyhton3: not found"
    # The same lines open the terminal's output.
    terminal = done.stdout.splitlines()
    assert terminal[1:1 + len(lines)] == ["  " * line.indent + line.text for line in lines]
