"""Reading the treatments of a table: the order analysis keeps the lightest observer level, the JSON
of a table without treatments is unchanged, tidy files carry treatment columns."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchsage.analyze.pipeline import Options, analyze_loaded
from benchsage.analyze.treatments import observer_baseline, order_rows
from benchsage.analyze.treatments.notes import ObserverBaselineOnly
from benchsage.store.importers.tidy import read_tidy
from benchsage.store.table import TrialTable
from benchsage.report.json import analysis_json

sys.path.insert(0, str(Path(__file__).parent))
from treatment_data import build, claims, columns_of, const  # noqa: E402


def test_the_order_analysis_uses_the_lightest_observer_level_only() -> None:
    def t(c, o, f):
        return 0.01 * (2.0 if o == "strace" else 1.0)

    table = build({"x": t, "y": const(0.02)}, contexts=0, runs=10, observer=("strace", "none"))
    assert observer_baseline(table) == "none"
    alone = table.select(table.levels("observer")[1] == table.levels("observer")[0].index("none"))
    with_levels, without = analyze_loaded(table, Options()), analyze_loaded(alone, Options())
    assert json.dumps(analysis_json(with_levels)["tests"]) == json.dumps(analysis_json(without)["tests"])
    assert ObserverBaselineOnly("none", len(alone), len(table)) in with_levels.warnings
    declared = TrialTable.from_columns(**columns_of(table), provenance={"observer_baseline": "strace"})
    assert observer_baseline(declared) == "strace" and len(order_rows(declared)) == len(table) - len(alone)


def test_without_treatments_the_json_is_unchanged() -> None:
    table = build({"x": const(1.0), "y": const(2.0)}, contexts=0, runs=6)
    doc = analysis_json(analyze_loaded(table, Options()))
    assert not {"comparisons", "context_effects", "observer", "factorial"} & set(doc)
    with_claim = analysis_json(analyze_loaded(table, Options(), claims(("x", "y"))))
    assert set(with_claim) - set(doc) == {"comparisons"}
    assert with_claim["tests"] == doc["tests"]
    json.dumps(with_claim, allow_nan=False)


def test_tidy_files_carry_treatment_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "test,order,value,status,context,context:env_bytes,observer,factor:A\n"
        "a,fixed,1.0,ok,c2,64,none,lo\n"
        "a,random,1.1,ok,c10,8,strace,hi\n"
        "a,random,9.9,failed,c1,512,none,hi\n"
        "a,fixed,1.2,ok,c1,512,,hi\n"
    )
    table = read_tidy(path)
    assert table.dims == ("context", "context:env_bytes", "observer", "factor:A")
    assert table.dim_levels[0] == ("c1", "c2", "c10") and table.dim_levels[1] == ("8", "64", "512")
    labels = table.to_pandas()[list(table.dims)].astype(object).where(lambda f: f.notna(), None).values.tolist()
    assert labels == [["c2", "64", "none", "lo"], ["c10", "8", "strace", "hi"], ["c1", "512", None, "hi"]]
