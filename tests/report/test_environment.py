"""`benchsage env` output: the noise sources and how trials are measured, rendered from the
readings given (tables or JSON); and the comparison of per-run environment snapshots."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
from typing import Any

import pytest
from rich.console import Console

from benchsage.agent.noise import SOURCES, Reading, collect_noise
from benchsage.agent.snapshot import collect
from benchsage.analyze.snapshots import compare_snapshots
from benchsage.report.words import said
from benchsage.execute.measuring import MeasurementDescription
from benchsage.report.environment import env_json, measurement_summary, render_env
from benchsage.vocabulary import HARNESS_METRICS, OFF, OK, OPTIONAL_HARNESS_METRICS, UNKNOWN, WARN

READINGS = [
    Reading("governor", "CPU scaling governor", "powersave", WARN, "Use the 'performance' governor: now.", {"per_cpu": {0: "powersave"}}),
    Reading("aslr", "Address space layout randomization", "full", OK, None, {"mode": 2}),
    Reading("turbo", "Turbo boost", None, UNKNOWN, None, {"reason": "no turbo control found"}),
    Reading("kernel", "Kernel", "[bold]not markup[/bold]", OK, None, {}),
]

NO_CGROUPS = "no cgroups: v2: not root; to enable: start the agent with `systemd-run --user --scope -p Delegate=yes ...`"
NO_RAPL = "no /sys/class/powercap: the kernel has no powercap"
ADOPTED = "killed and counted (the agent adopts them as child subreaper)"
# How trials are measured on a host without cgroups or RAPL, as execute/measuring.py describes it.
MEASURED = MeasurementDescription(
    agent={"cgroup": None, "cgroup_reason": NO_CGROUPS, "leftovers": "subreaper", "energy": False, "cpus_online": (0, 1, 2, 3)},
    aspects=(
        Reading("cgroups", "Trial cgroups (peak_memory, cpu_time)", "none", OFF, f"peak_memory and cpu_time are not recorded: {NO_CGROUPS}",
                {"method": None, "reason": NO_CGROUPS}),
        Reading("leftovers", "Leftover processes", ADOPTED, OK, None, {"method": "subreaper"}),
        Reading("energy", "Package energy (RAPL)", "not measured", OFF, f"energy is not recorded: {NO_RAPL}", {"reason": NO_RAPL}),
        Reading("cpus", "CPUs for trials", "online 0-3; allowed 0-3; isolated none; nohz_full none", WARN,
                'no CPU is isolated: pin single-threaded trials elsewhere, e.g. cpus = "3" under [experiment]', {"suggested": "3"}),
    ),
    metrics=HARNESS_METRICS, missing=OPTIONAL_HARNESS_METRICS, leftovers=ADOPTED,
)
NOT_STARTED = MeasurementDescription(None, (Reading("agent", "Local agent", None, UNKNOWN, None,
                                                    {"reason": "the local agent did not start: worker local: no python"}),))


def render(readings: list[Reading], terminal: bool, width: int = 80, measurement: MeasurementDescription | None = None) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=width, color_system="standard" if terminal else None)
    render_env(readings, console, measurement)
    return buf.getvalue()


def flat(text: str) -> str:
    """The words of a rendering with its line breaks undone (a narrow console wraps notes)."""
    return " ".join(text.split())


def test_render_env_plain_when_not_a_terminal() -> None:
    text = render(READINGS, terminal=False, width=120)
    assert "\x1b[" not in text
    for expected in ("CPU scaling governor", "powersave", "warn", "Use the 'performance' governor", "Turbo boost",
                     "no turbo control found", "[bold]not markup[/bold]", "1 of 4 sources can add noise", "1 could not be read"):
        assert expected in text, expected


def test_render_env_layouts() -> None:
    narrow = render(READINGS, terminal=False, width=80).splitlines()
    assert narrow[0].split() == ["source", "value", "state"]
    assert any(line.startswith("CPU scaling governor: Use the 'performance' governor") for line in narrow)
    assert any(line.startswith("Turbo boost (unknown): no turbo control found") for line in narrow)
    wide = render(READINGS, terminal=False, width=160).splitlines()
    assert wide[0].split() == ["source", "value", "state", "advice"]
    assert any("powersave" in line and "Use the 'performance' governor" in line for line in wide)


def test_render_env_colours_on_a_terminal() -> None:
    assert "\x1b[" in render(READINGS, terminal=True)


def test_render_env_on_this_machine() -> None:
    text = render(collect_noise(), terminal=False)
    for source in SOURCES:
        assert source.title in text


def test_env_json() -> None:
    doc = env_json(READINGS)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["tool"]["name"] == "benchsage"
    assert doc["summary"] == {"ok": 2, "warn": 1, "unknown": 1}
    first = doc["sources"][0]
    assert first == {
        "name": "governor", "title": "CPU scaling governor", "value": "powersave", "state": "warn",
        "advice": "Use the 'performance' governor: now.", "data": {"per_cpu": {"0": "powersave"}},
    }
    real = env_json(collect_noise())
    assert [s["name"] for s in real["sources"]] == [s.name for s in SOURCES]
    json.dumps(real)


# --- how trials are measured ------------------------------------------------------------------


def test_the_sentence_on_what_each_trial_records() -> None:
    assert measurement_summary(MEASURED) == (
        "Each trial here records wall_time, user_time, sys_time, max_rss (not peak_memory, cpu_time, energy: see above); "
        "processes it leaves running: killed and counted (the agent adopts them as child subreaper)."
    )
    everything = dataclasses.replace(MEASURED, metrics=HARNESS_METRICS + OPTIONAL_HARNESS_METRICS, missing=(),
                                     leftovers="killed and counted (the trial's cgroup)")
    assert measurement_summary(everything) == (
        "Each trial here records wall_time, user_time, sys_time, max_rss, peak_memory, cpu_time, energy; "
        "processes it leaves running: killed and counted (the trial's cgroup)."
    )


def test_what_is_not_measured_says_why_and_what_would_enable_it() -> None:
    text = flat(render(collect_noise(), terminal=False, measurement=MEASURED))
    assert "Trial cgroups (peak_memory, cpu_time): peak_memory and cpu_time are not recorded: no cgroups: v2: not root" in text
    assert "systemd-run --user --scope -p Delegate=yes" in text
    assert f"Package energy (RAPL): energy is not recorded: {NO_RAPL}" in text


def test_an_agent_that_did_not_start() -> None:
    text = flat(render(collect_noise(), terminal=False, measurement=NOT_STARTED))
    assert "Local agent (unknown): the local agent did not start: worker local: no python" in text
    assert "How trials are measured here is not known: the local agent did not start" in text


def test_env_json_holds_the_agents_words_and_each_aspect() -> None:
    doc = env_json(collect_noise(), MEASURED)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["measurement"]["agent"] == {**MEASURED.agent, "cpus_online": [0, 1, 2, 3]}
    aspects = {a["name"]: a for a in doc["measurement"]["aspects"]}
    assert aspects["cgroups"] == {
        "name": "cgroups", "title": "Trial cgroups (peak_memory, cpu_time)", "value": "none", "state": "off",
        "advice": f"peak_memory and cpu_time are not recorded: {NO_CGROUPS}", "data": {"method": None, "reason": NO_CGROUPS},
    }
    assert aspects["cpus"]["data"]["suggested"] == "3"
    assert env_json(collect_noise(), NOT_STARTED)["measurement"] == {"agent": None, "aspects": [
        {"name": "agent", "title": "Local agent", "value": None, "state": "unknown", "advice": None,
         "data": {"reason": "the local agent did not start: worker local: no python"}}]}
    assert "measurement" not in env_json(collect_noise())  # the noise alone, as before


@pytest.mark.parametrize("width", [80, 160])
def test_the_table_on_narrow_and_wide_terminals(width: int) -> None:
    text = render(collect_noise(), terminal=False, width=width, measurement=MEASURED)
    section = text[text.index("How trials are measured here"):]
    head = section.splitlines()[1].split()
    assert head == (["aspect", "value", "state"] if width < 140 else ["aspect", "value", "state", "advice"])
    assert max(len(line) for line in section.splitlines()) <= width
    assert 'cpus = "3"' in section and "\x1b[" not in text


# --- snapshots compared -----------------------------------------------------------------------


def snapshot(governor: str | None = "performance", files: dict[str, str | None] | None = None, load: str = "ok", **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "host": "h", "kernel": "6.1.0", "os": "Debian 12", "cpu_model": "X", "cpu_count": 8,
        "governor": governor, "turbo": "off", "smt": "off", "aslr": "full", "python": "3.11.7", "benchsage": "0.1.0",
        "load_average": [0.1, 0.1, 0.1],
        "noise": {"load": {"value": "0.10 0.10 0.10 (8 CPUs)" if load == "ok" else "3.00 1.00 0.50 (8 CPUs)", "state": load}},
        "files": files if files is not None else {"/exp/bench": "a" * 64},
    }
    base.update(kw)
    return base


def test_identical_snapshots_give_no_warnings() -> None:
    snaps = {f"local:run {i}": snapshot() for i in range(1, 21)}
    assert said(compare_snapshots(snaps)) == []
    assert said(compare_snapshots({})) == []
    assert said(compare_snapshots({"local:run 1": None})) == []


def test_a_setting_that_differs_between_runs() -> None:
    snaps = {f"local:run {i}": snapshot("performance" if i <= 12 else "powersave") for i in range(1, 21)}
    (warning,) = said(compare_snapshots(snaps))
    assert warning == "governor differs between runs: 'performance' in 12 runs, 'powersave' in 8 runs"


def test_settings_split_by_worker_say_so() -> None:
    snaps = {f"a:run {i}": snapshot(kernel="6.1.0") for i in range(3)}
    snaps |= {f"b:run {i}": snapshot(kernel="6.5.0", governor=None) for i in range(2)}
    warnings = said(compare_snapshots(snaps))
    assert "governor differs between runs: 'performance' in 3 runs, unknown in 2 runs (by worker: a 'performance', b unknown)" in warnings
    assert "kernel differs between runs: '6.1.0' in 3 runs, '6.5.0' in 2 runs (by worker: a '6.1.0', b '6.5.0')" in warnings


def test_transient_noise_that_warned_before_some_runs() -> None:
    snaps = {f"local:run {i}": snapshot(load="warn" if i < 3 else "ok") for i in range(10)}
    (warning,) = said(compare_snapshots(snaps))
    assert warning == "load average warned before 3 of 10 runs (e.g. 3.00 1.00 0.50 (8 CPUs))"


def test_files_that_differ_between_workers_and_change_within_one() -> None:
    same, other, newer = "1" * 64, "2" * 64, "3" * 64
    snaps = {
        "a:run 1": snapshot(files={"/exp/bench": same, "/exp/lib.so": same}),
        "a:run 2": snapshot(files={"/exp/bench": same, "/exp/lib.so": same}),
        "b:run 3": snapshot(files={"/exp/bench": other, "/exp/lib.so": same}),
        "c:run 4": snapshot(files={"/exp/bench": None, "/exp/lib.so": same}),
        "c:run 5": snapshot(files={"/exp/bench": None, "/exp/lib.so": newer}),
    }
    warnings = said(compare_snapshots(snaps))
    assert "/exp/bench differs between workers: 111111111111 on a; 222222222222 on b; missing on c" in warnings
    assert "/exp/lib.so changed between runs on worker c: 111111111111 in 1 run, 333333333333 in 1 run" in warnings
    assert any(w.startswith("/exp/lib.so differs between workers") for w in warnings)
    assert len(warnings) == 3


def test_worker_from_the_snapshot_when_labels_have_none() -> None:
    snaps = {"1": snapshot(worker="a", files={"/x": "1" * 64}), "2": snapshot(host="h2", files={"/x": "2" * 64})}
    assert said(compare_snapshots(snaps)) == ["/x differs between workers: 111111111111 on a; 222222222222 on h2"]


def test_real_snapshots_compare_clean(tmp_path: Any) -> None:
    (tmp_path / "t.sh").write_text("echo\n")
    first = collect(["t.sh"], str(tmp_path))
    second = copy.deepcopy(first)
    second["noise"]["load"]["state"] = first["noise"]["load"]["state"]
    assert [w for w in said(compare_snapshots({"local:run 1": first, "local:run 2": second})) if "warned" not in w] == []
    (tmp_path / "t.sh").write_text("echo changed\n")
    third = collect(["t.sh"], str(tmp_path))
    assert any(w.startswith("t.sh changed between runs on worker local") for w in said(compare_snapshots({"local:run 1": first, "local:run 3": third})))


def test_the_snapshot_comparison_words_are_the_noise_sources_titles() -> None:
    from benchsage.analyze.snapshots import _TRANSIENT
    from benchsage.report.words.notes import NOISE_WORDS

    titles = {source.name: source.title.lower() for source in SOURCES}
    assert set(NOISE_WORDS) == set(_TRANSIENT)
    assert {name: titles.get(name) for name in _TRANSIENT} == NOISE_WORDS
