"""The issue's numbers for treatments, from real experiments run by `benchsage run`: a test whose
time depends on the environment size is flagged across 8 contexts and a `sleep` is not; a
comparison whose winner depends on the environment flips; `sleep 0.02` vs `sleep 0.03` gets its
ratio; strace perturbs a syscall-heavy program significantly and more than a CPU loop; in a 2^2
design where A adds 20 ms and B 2 ms, A takes the variation, q_A's CI covers 10 ms."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TIMING = pytest.mark.timing  # decisions taken from measured times


def run(tmp_path: Path, text: str) -> dict:
    spec = tmp_path / "experiment.toml"
    spec.write_text(text)
    done = subprocess.run([sys.executable, "-m", "benchsage", "run", str(spec), "-o", "out", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# A sleep of BENCHSAGE_ENV_PAD's size / 100 ms: its time depends on the context's environment size.
ENVSIZE = "sh -c 'sleep 0.$(printf %03d $((${#BENCHSAGE_ENV_PAD} / 100)))'"


@pytest.mark.slow
@TIMING
def test_contexts_flag_an_environment_dependent_test_and_a_flipping_comparison(tmp_path: Path) -> None:
    doc = run(tmp_path, f"""
[experiment]
name = "contexts"
runs = 24
seed = 21

[[test]]
name = "envsize"
command = "{ENVSIZE}"

[[test]]
name = "s0"
command = "sleep 0"

[[test]]
name = "s20"
command = "sleep 0.02"

[[test]]
name = "s30"
command = "sleep 0.03"

[[test]]
name = "s50"
command = "sleep 0.05"

[context]
variants = 8
env_bytes = [0, 9900]

[[compare]]
a = "s20"
b = "s30"

[[compare]]
a = "envsize"
b = "s50"
""")
    effects = {e["test"]: e for e in doc["context_effects"] if e["metric"] == "wall_time"}
    assert effects["envsize"]["significant"] and effects["envsize"]["by"]["env_bytes"] < 0.01
    assert effects["envsize"]["spread_pct"] > 100
    assert not effects["s50"]["significant"] and effects["s50"]["spread_pct"] < 25
    compare = {(c["a"], c["b"]): c for c in doc["comparisons"]}
    sleeps = compare[("s20", "s30")]
    # Each trial also spends the program's start and exit (the `sleep 0` trial): the ratio of
    # the wall times is (20 ms + that) / (30 ms + that), about 0.67 and a little above.
    start = next(t for t in doc["tests"] if t["test"] == "s0" and t["metric"] == "wall_time")
    start_s = (start["median_fixed"] + start["median_random"]) / 2
    expected = (0.02 + start_s) / (0.03 + start_s)
    assert sleeps["better"] == "a" and sleeps["ci"][0] < sleeps["ratio"] < sleeps["ci"][1]
    assert 0.66 <= sleeps["ratio"] <= 0.70 and abs(sleeps["ratio"] - expected) < 0.01
    assert sleeps["holds_in"] == {"fixed": True, "random": True}
    assert sleeps["contexts"]["flips"] is False and sleeps["contexts"]["b_better"] == 0
    flip = compare[("envsize", "s50")]
    assert flip["contexts"]["n"] == 8 and flip["contexts"]["flips"] is True
    assert flip["contexts"]["a_better"] >= 1 and flip["contexts"]["b_better"] >= 1


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None or shutil.which("cc") is None, reason="needs strace and a C compiler")
def test_strace_perturbs_a_syscall_heavy_program_more_than_a_cpu_loop(tmp_path: Path) -> None:
    # Not a timing test: strace multiplies the syscall program's time many times over, and
    # adds a few percent to the loop's, whatever else the machine runs.
    (tmp_path / "sys.c").write_text("#include <unistd.h>\n#include <sys/syscall.h>\n"
                                    "int main(void){ for (int i = 0; i < 5000; i++) syscall(SYS_getppid); return 0; }\n")
    (tmp_path / "cpu.c").write_text("int main(void){ volatile unsigned long x = 0; "
                                    "for (unsigned long i = 0; i < 20000000UL; i++) x += i; return (int)(x & 1); }\n")
    for name in ("sys", "cpu"):
        subprocess.run(["cc", "-O1", "-o", str(tmp_path / name), str(tmp_path / f"{name}.c")], check=True)
    doc = run(tmp_path, """
[experiment]
name = "observer"
runs = 8
seed = 4

[[test]]
name = "syscalls"
command = "./sys"

[[test]]
name = "loop"
command = "./cpu"

[observer]
levels = {none = "", strace = "strace -f -c -o /dev/null --"}
""")
    effect = {e["test"]: e for e in doc["observer"] if e["metric"] == "wall_time" and e["level"] == "strace"}
    assert effect["syscalls"]["significant"] and effect["syscalls"]["effect_pct"] > 100
    assert effect["syscalls"]["effect_pct"] > 5 * abs(effect["loop"]["effect_pct"])


@TIMING
def test_a_2x2_factorial_gives_factor_a_its_variation_and_q(tmp_path: Path) -> None:
    # The allocation of variation compares q_A^2 with the trials' own variance and q_B^2 (A's
    # share is 400 / 416 without noise), whatever r is: A's 90 % needs a noise below about 4 ms,
    # which a quiet machine gives (0.3 ms here) and a machine running other jobs may not.
    doc = run(tmp_path, """
[experiment]
name = "factorial"
runs = 16
seed = 9

[[test]]
name = "work"
command = "sh -c 'a=0; b=0; [ \\"$A\\" = hi ] && a=40; [ \\"$B\\" = hi ] && b=8; sleep 0.0$((10 + a + b))'"

[[factor]]
name = "A"
levels = ["lo", "hi"]
env = "A"

[[factor]]
name = "B"
levels = ["lo", "hi"]
env = "B"
""")
    (result,) = [f for f in doc["factorial"] if f["test"] == "work" and f["metric"] == "wall_time"]
    terms = {t["term"]: t for t in result["terms"]}
    assert terms["A"]["variation_pct"] >= 90
    # q_A is 20 ms and q_B 4 ms, and sleep overshoots in proportion to what it is asked (30 ms
    # sleeps took 20.1-20.3 ms longer than 10 ms ones on a quiet machine, 21.9 ms longer in a
    # full suite on a slow day). The estimates are held to the truth within what a shared
    # machine's wake-ups allow (trials jittered by about 1.5 ms on a slow day: q_B came out 0.54
    # and 1.48 ms when it was 1), not to a 95 % interval covering it (which misses one time in
    # twenty by design); each interval must exclude no effect.
    assert terms["A"]["effect"] == pytest.approx(0.020, rel=0.15) and terms["A"]["ci"][0] > 0.016
    assert terms["B"]["effect"] == pytest.approx(0.004, rel=0.3) and terms["B"]["ci"][0] > 0
    assert terms["A:B"]["variation_pct"] < 2
    assert sum(t["variation_pct"] for t in result["terms"]) == pytest.approx(100, abs=0.01)
