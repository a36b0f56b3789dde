"""`benchsage time`'s options as a spec (spec/commandline.py): names, claims, scans, and the TOML
that the loader reads back. Pure: nothing runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchsage.errors import UsageError
from benchsage.spec import load_spec
from benchsage.spec.commandline import NAME_WIDTH, TimeRequest, claims, scan_list, scan_range, short_names, command_names, time_spec_text


@pytest.mark.parametrize(("commands", "names"), [
    (("python3 -c 'import json'", "python3 -c 'import os'"), ("python3 import json", "python3 import os")),
    (("sleep 0.01", "sleep 0.02"), ("sleep 0.01", "sleep 0.02")),
    (("gzip -9 data", "xz -9 data"), ("gzip", "xz")),
    (("/usr/bin/sort big.txt",), ("sort big.txt",)),
    (("true", "true"), ("true #1", "true #2")),
    (("dd if=/dev/zero of=/dev/null bs={bs} count=1000",), ("dd if=/dev/zero of=/dev/null",)),
    (("./bench --mode=" + "x" * 80, "./bench --mode=y"), ("bench --mode=" + "x" * 18 + "…", "bench --mode=y")),
])
def test_short_names_are_readable_unique_and_never_the_whole_command(commands: tuple[str, ...], names: tuple[str, ...]) -> None:
    assert short_names(commands) == names


@given(st.lists(st.text(min_size=1, max_size=60).filter(str.strip), min_size=1, max_size=6))
def test_short_names_are_unique_and_short_for_any_commands(commands: list[str]) -> None:
    names = short_names(tuple(commands))
    assert len(set(names)) == len(names) == len(commands)
    assert all(0 < len(n) <= NAME_WIDTH + 4 for n in names)  # "#12" may follow a cut name


def test_names_from_n_and_their_mistakes() -> None:
    request = TimeRequest(("sleep 0.1", "sleep 0.2"), "/tmp", names=("slow", "slower"))
    assert command_names(request) == ("slow", "slower")
    for names, message in ((("a",), "given 1 times for 2 commands"), (("a", "b", "c"), "given 3 times for 2 commands"),
                           (("a", "a"), "'a' is given twice"), (("a", "b[1]"), "holds no brackets")):
        with pytest.raises(UsageError, match=message.replace("[", r"\[")):
            command_names(TimeRequest(("sleep 0.1", "sleep 0.2"), "/tmp", names=names))


def test_scans_count_in_decimal_and_refuse_bad_ranges() -> None:
    assert scan_range("n", "1", "3", None).levels == ("1", "2", "3")
    assert scan_range("t", "0", "0.3", "0.1").levels == ("0", "0.1", "0.2", "0.3")
    assert scan_range("t", "0.5", "2", "0.5").levels == ("0.5", "1", "1.5", "2")
    assert scan_list("mode", "fast,safe").levels == ("fast", "safe")
    for make, message in ((lambda: scan_range("n", "3", "1", None), "MAX is below MIN"),
                          (lambda: scan_range("n", "1", "x", None), "must be numbers"),
                          (lambda: scan_range("n", "0", "1", "0"), "above 0"),
                          (lambda: scan_range("n", "0", "1e9", None), "at most 1000"),
                          (lambda: scan_range("a-b", "0", "1", None), "a word of letters"),
                          (lambda: scan_list("m", "a,,b"), "a value is empty"),
                          (lambda: scan_list("m", "a,a"), "listed twice")):
        with pytest.raises(UsageError, match=message):
            make()


def test_every_pair_is_a_claim_and_a_scan_pairs_its_levels() -> None:
    request = TimeRequest(("a x", "b x", "c x"), "/tmp")
    assert claims(request, ("a", "b", "c")) == [("a", "b"), ("a", "c"), ("b", "c")]
    scanned = TimeRequest(("a {n}", "b {n}", "c"), "/tmp", scans=(scan_list("n", "1,2"),))
    assert claims(scanned, ("a", "b", "c")) == [("a[n=1]", "b[n=1]"), ("a[n=2]", "b[n=2]"), ("a[n=1]", "c"), ("a[n=2]", "c"),
                                                 ("b[n=1]", "c"), ("b[n=2]", "c")]


def test_the_spec_text_loads_as_the_request_asked(tmp_path: Path) -> None:
    request = TimeRequest(('printf "%s\\n" \'a "quoted" \\\\ word\'', "sleep 0.0{n}"), str(tmp_path), names=("quote", "nap"), runs=7,
                          seed=11, reset="sync", setup="echo ready", timeout=2.5, cpus="0", stop="sequential",
                          scans=(scan_range("n", "1", "2", None),))
    spec = load_spec(tmp_path / "benchsage-time.toml", text=time_spec_text(request))
    assert spec.name == "time" and spec.runs == 7 and spec.seed == 11 and spec.stop == "sequential"
    assert [t.name for t in spec.tests] == ["quote", "nap[n=1]", "nap[n=2]"]
    assert spec.tests[0].command == request.commands[0] and spec.tests[2].command == "sleep 0.02"
    assert all(t.timeout == 2.5 and t.cpus == (0,) and t.cwd == str(tmp_path) for t in spec.tests)
    assert spec.reset is not None and spec.reset.command == "sync" and spec.init is not None and spec.init.command == "echo ready"
    assert [(c.a, c.b) for c in spec.treatments.compare] == [("quote", "nap[n=1]"), ("quote", "nap[n=2]")]


def test_commands_and_parameters_that_cannot_be() -> None:
    with pytest.raises(UsageError, match="at least one command"):
        time_spec_text(TimeRequest((), "/tmp"))
    with pytest.raises(UsageError, match="a command is empty"):
        time_spec_text(TimeRequest(("true", " "), "/tmp"))
    with pytest.raises(UsageError, match="no command names {n}"):
        time_spec_text(TimeRequest(("true",), "/tmp", scans=(scan_list("n", "1,2"),)))


def test_warmup_prepare_cleanup_and_no_shell_reach_the_spec(tmp_path: Path) -> None:
    request = TimeRequest(("sleep 0.1", "sleep 0.2"), str(tmp_path), warmup=3, prepare=("sync",), cleanup="rm -f x", no_shell=True)
    spec = load_spec(tmp_path / "t.toml", text=time_spec_text(request))
    assert spec.warmup == 3 and spec.teardown is not None and spec.teardown.command == "rm -f x"
    assert [(t.prepare, t.shell) for t in spec.tests] == [("sync", False), ("sync", False)]
    each = load_spec(tmp_path / "t.toml", text=time_spec_text(TimeRequest(("a", "b"), str(tmp_path), prepare=("p1", "p2"))))
    assert [(t.prepare, t.shell) for t in each.tests] == [("p1", True), ("p2", True)]
    with pytest.raises(UsageError, match="-p/--prepare given 2 times for 3 commands"):
        time_spec_text(TimeRequest(("a", "b", "c"), str(tmp_path), prepare=("p1", "p2")))
