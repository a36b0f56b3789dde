"""`output`, `primary` and a regex's unit group in a spec: what they give, and every mistake a
one-line SpecError (exit 2) naming the file, the test and the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchsage.errors import SpecError
from benchsage.spec import load_spec

HEAD = '[experiment]\nname = "x"\nruns = 2\n'
WRK = '[[test]]\nname = "w"\ncommand = "wrk -t2 -c8 -d1s --latency http://127.0.0.1:1/"\noutput = "wrk"\n'


def load(tmp_path: Path, text: str):
    path = tmp_path / "spec.toml"
    path.write_text(HEAD + text)
    return load_spec(path)


def test_a_parser_gives_its_metrics_and_primary_ones(tmp_path: Path) -> None:
    test = load(tmp_path, WRK).tests[0]
    assert test.output == "wrk"
    assert [m.name for m in test.metrics] == ["p50", "p75", "p90", "p99", "latency_mean", "latency_max", "rps", "transfer", "errors"]
    assert {m.source for m in test.metrics} == {"parser"}
    assert test.primary_metrics == ("p99", "rps")
    chosen = load(tmp_path, WRK + 'primary = ["p90", "wall_time"]\n').tests[0]
    assert chosen.primary_metrics == ("p90", "wall_time")


def test_hand_written_metrics_join_the_parser_ones(tmp_path: Path) -> None:
    text = WRK + '[[test.metric]]\nname = "hits"\nregex = "hits: ([0-9]+)"\nbetter = "higher"\n'
    test = load(tmp_path, text).tests[0]
    assert [m.name for m in test.metrics][-1] == "hits"
    assert test.primary_metrics == ("p99", "rps", "hits")


@pytest.mark.parametrize(("text", "message"), [
    ('[[test]]\nname = "t"\ncommand = "wrk"\noutput = "wrkk"\n',
     "[[test]] #1 ('t'): key 'output' names no known parser: 'wrkk' (known: wrk, wrk2, redis-benchmark, memtier, fio, sysbench, "
     "pgbench, ab, hyperfine)"),
    ('[[test]]\nname = "t"\ncommand = "wrk http://x/"\noutput = "wrk"\n',
     "[[test]] #1 ('t'): key 'output' = 'wrk': wrk prints its latency distribution only with --latency: add it to the command"),
    (WRK + 'primary = ["p98"]\n', "[[test]] #1 ('w'): key 'primary' names 'p98', which the test does not record (it records: p50, "),
    ('[[test]]\nname = "t"\ncommand = "true"\nprimary = []\n', "key 'primary' must not be empty"),
    (WRK + '[[test.metric]]\nname = "rps"\nregex = "([0-9]+)"\n', "metric 'rps' is given by output = 'wrk' too"),
    ('[[test]]\ncommand = "true"\n[[test.metric]]\nname = "p99"\nregex = \'99%\\s+([0-9.]+)(us|ms|s)\'\nunit = "MB"\n',
     "key 'regex': its unit group can match 'us', which cannot be converted to 'MB'"),
    ('[[test]]\ncommand = "true"\n[[test.metric]]\nname = "p99"\nregex = \'99%\\s+([0-9.]+)(us|ms|s)\'\n',
     "key 'unit' = '': the regex's second group reads a unit (us|ms|s)"),
    ('[[test]]\ncommand = "true"\n[[test.metric]]\nname = "p99"\nregex = \'99%\\s+([0-9.]+)(ms|fortnight)\'\nunit = "s"\n',
     "key 'regex': its unit group can match 'fortnight', which is not a unit benchsage knows"),
])
def test_mistakes(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load(tmp_path, text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_regex_with_a_unit_group_loads(tmp_path: Path) -> None:
    text = '[[test]]\ncommand = "true"\n[[test.metric]]\nname = "p99"\nregex = \'99%\\s+([0-9.]+)(us|ms|s)\'\nunit = "s"\n'
    assert load(tmp_path, text).tests[0].metrics[0].unit == "s"


def test_the_command_line_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_text(HEAD + '[[test]]\nname = "t"\ncommand = "wrk"\noutput = "nope"\n')
    done = subprocess.run([sys.executable, "-m", "benchsage", "plan", str(path)], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "key 'output' names no known parser: 'nope'" in lines[0] and "Traceback" not in done.stderr
