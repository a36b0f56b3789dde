"""The declared claims a vs b (report/html/comparisons.py): the winner, where it holds, and where
it flips, over contexts, factor cells and a fleet's workers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchsage.analyze.verdict import Analysis
from benchsage.report.html import write_report
from benchsage.report.html.numbers import fmt, fmt_p
from benchsage.report.words import comparison_sentence
from benchsage.store.table import TrialTable

from reports import CLAIM_A, CLAIM_B, Page, row_text, section_of


def test_comparisons_state_each_claim_its_winner_and_where_it_flips(treated: tuple[Analysis, TrialTable, Path]) -> None:
    analysis, _, path = treated
    section = section_of(path.read_text(encoding="utf-8"), "comparisons")
    claim, missing = analysis.comparisons
    assert claim.better == "a" and claim.contexts.flips and claim.contexts.b_better >= 1  # the data flips
    shown = Page(section).all_text
    assert comparison_sentence(claim) in shown and comparison_sentence(missing) in shown
    (row,) = row_text(section, f"{CLAIM_A} vs {CLAIM_B}")
    assert row[1] == "wall_time"
    assert row[2] == f"{fmt(claim.ratio)}[{fmt(claim.ci[0])}, {fmt(claim.ci[1])}]"
    assert row[3:5] == [fmt_p(claim.p), fmt_p(claim.p_adjusted)]
    assert row[5] == "mann-whitneyCI: bonett-price"
    assert row[6] == CLAIM_A  # the winner, by name
    assert row[7:9] == ["yes", "yes"]
    s = claim.contexts
    assert row[9] == f"{CLAIM_A} {s.a_better} · {CLAIM_B} {s.b_better} · undecided {s.undecided} of {s.n}"
    assert row[10] == "yes"
    cells = claim.factor_cells  # the table has two factors: smt and governor
    assert cells.n == 4 and row[11] == f"{CLAIM_A} {cells.a_better} · {CLAIM_B} {cells.b_better} · undecided {cells.undecided} of 4"
    assert row[12] == ("yes" if cells.flips else "no") and row[13] == ""
    (gone,) = row_text(section, f"{CLAIM_A} vs gone")
    assert gone[2:5] == ["—"] * 3 and gone[6] == "—" and gone[11:13] == ["—", "—"]
    assert "no test 'gone' in the data" in gone[13]


def test_a_fleets_comparison_counts_the_workers_each_test_wins_on(tmp_path: Path) -> None:
    # Two machines where o3 beats o2, and one that runs another build of o3 (10% slower).
    from benchsage.analyze.pipeline import analyze_loaded
    from benchsage.analyze.treatments import CompareRequest, TreatmentOptions

    rng = np.random.default_rng(4)
    medians = {"w1": {"o3": 0.093, "o2": 0.100}, "w2": {"o3": 0.093, "o2": 0.100}, "w3": {"o3": 0.110, "o2": 0.100}}
    cols: dict[str, list] = {k: [] for k in ("test", "arm", "value", "run", "position", "worker")}
    for w, (worker, tests) in enumerate(medians.items()):
        for run in range(40):
            for position, test in enumerate(tests if run % 2 == 0 else list(rng.permutation(list(tests)))):
                cols["test"].append(test)
                cols["arm"].append(("fixed", "random")[run % 2])
                cols["value"].append(tests[test] * (1 + 0.01 * rng.standard_normal()))
                cols["run"].append(w * 100 + run)
                cols["position"].append(position)
                cols["worker"].append(worker)
    table = TrialTable.from_columns(**cols)
    analysis = analyze_loaded(table, treatments=TreatmentOptions(compare=(CompareRequest("o3", "o2"),)))
    path = tmp_path / "fleet.html"
    write_report(analysis, table, path)
    section = section_of(path.read_text(encoding="utf-8"), "comparisons")
    (claim,) = analysis.comparisons
    sentence = comparison_sentence(claim)
    assert "flips on 1 of 3 workers" in sentence and sentence in Page(section).all_text
    (row,) = row_text(section, "o3 vs o2")
    assert row[11:13] == ["o3 2 · o2 1 · undecided 0 of 3", "yes"]  # workers won, flips on workers
    assert "workers count the same on each machine" in Page(section).all_text
    # One worker's report has no workers columns.
    alone = TrialTable.from_columns(**{k: [v for v, w in zip(col, cols["worker"]) if w == "w1"] for k, col in cols.items()})
    write_report(analyze_loaded(alone, treatments=TreatmentOptions(compare=(CompareRequest("o3", "o2"),))), alone, path)
    assert "workers won" not in section_of(path.read_text(encoding="utf-8"), "comparisons")
