"""RAPL package energy on folders shaped like /sys/class/powercap: which zones count, wrap-around,
and the reasons given when energy cannot be read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from benchsage.agent.energy import EnergyError, Rapl

sys.path.insert(0, str(Path(__file__).parent))
from proctools import AS_ON_A_HOST, PYTHON38, as_user, needs_python38  # noqa: E402

RANGE = 262143328850  # max_energy_range_uj of a typical package


def zone(root: Path, name: str, label: str, energy_uj: int, max_range: int = RANGE) -> Path:
    """A powercap zone folder as the kernel shows it (under /sys/class/powercap, a symlink)."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(label + "\n")
    (folder / "energy_uj").write_text("%d\n" % energy_uj)
    (folder / "max_energy_range_uj").write_text("%d\n" % max_range)
    (folder / "enabled").write_text("1\n")
    return folder


def set_energy(folder: Path, value: int) -> None:
    (folder / "energy_uj").write_text("%d\n" % value)


@pytest.fixture
def two_packages(tmp_path: Path) -> Path:
    """Two sockets with core, uncore and dram sub-zones, a psys zone, and the MMIO interface
    showing package 0 again."""
    root = tmp_path / "powercap"
    root.mkdir()
    (root / "intel-rapl").mkdir()  # the control type's own folder: no counter
    zone(root, "intel-rapl:0", "package-0", 1_000_000)
    zone(root, "intel-rapl:0:0", "core", 500_000)
    zone(root, "intel-rapl:0:1", "uncore", 10_000)
    zone(root, "intel-rapl:0:2", "dram", 70_000)
    zone(root, "intel-rapl:1", "package-1", 2_000_000)
    zone(root, "intel-rapl:1:0", "core", 600_000)
    zone(root, "intel-rapl:2", "psys", 9_000_000)
    zone(root, "intel-rapl-mmio:0", "package-0", 1_000_000)
    return root


def test_only_package_domains_of_one_interface_count(two_packages: Path) -> None:
    rapl = Rapl(str(two_packages))
    support = rapl.probe()
    assert support.available
    assert [(d.zone, d.name) for d in rapl.domains] == [("intel-rapl:0", "package-0"), ("intel-rapl:1", "package-1")]
    assert support.reason == "RAPL package energy: package-0 (intel-rapl:0), package-1 (intel-rapl:1)"
    assert rapl.read() == (1_000_000, 2_000_000)


def test_joules_between_two_readings(two_packages: Path) -> None:
    rapl = Rapl(str(two_packages))
    before = rapl.read()
    set_energy(two_packages / "intel-rapl:0", 3_500_000)
    set_energy(two_packages / "intel-rapl:1", 2_250_000)
    after = rapl.read()
    assert rapl.joules(before, after) == pytest.approx(2.5 + 0.25)


def test_a_counter_that_wrapped_around(two_packages: Path) -> None:
    rapl = Rapl(str(two_packages))
    set_energy(two_packages / "intel-rapl:0", RANGE - 1_000_000)
    before = rapl.read()
    set_energy(two_packages / "intel-rapl:0", 4_000_000)  # wrapped: 1 J to the top, then 4 J
    set_energy(two_packages / "intel-rapl:1", 3_000_000)
    after = rapl.read()
    assert rapl.joules(before, after) == pytest.approx(5.0 + 1.0)


def test_readings_of_the_wrong_length_are_refused(two_packages: Path) -> None:
    rapl = Rapl(str(two_packages))
    with pytest.raises(ValueError, match="2 package domains"):
        rapl.joules((1,), (2,))


def test_amd_zones_in_the_same_layout(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "package-0", 5)  # AMD Zen: the same driver, the same zones
    zone(root, "intel-rapl:0:0", "core", 3)
    assert Rapl(str(root)).read() == (5,)


def test_another_control_type_in_the_same_layout(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    zone(root, "amd-energy:0", "package-0", 7)
    zone(root, "amd-energy:0:0", "core-0", 3)
    rapl = Rapl(str(root))
    assert rapl.probe().available and rapl.read() == (7,)


def test_the_mmio_interface_when_it_is_the_only_one(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    zone(root, "intel-rapl-mmio:0", "package-0", 11)
    assert Rapl(str(root)).read() == (11,)


def test_absent_powercap_says_why(tmp_path: Path) -> None:
    rapl = Rapl(str(tmp_path / "powercap"))
    support = rapl.probe()
    assert not support.available and support.domains == ()
    assert support.reason.startswith("no %s: the kernel has no powercap" % (tmp_path / "powercap"))
    with pytest.raises(EnergyError, match="no .*powercap"):
        rapl.read()


def test_no_package_zone_says_why(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "psys", 1)
    assert Rapl(str(root)).probe().reason == "no package domain among the RAPL zones in %s" % root
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no RAPL zones in %s" % empty in Rapl(str(empty)).probe().reason


def test_a_counter_readable_by_root_only_says_what_enables_it() -> None:
    # A folder every user can enter (pytest's tmp_path is its owner's alone).
    top = Path(tempfile.mkdtemp(prefix="benchsage-test-"))
    try:
        top.chmod(0o755)
        root = top / "powercap"
        zone(root, "intel-rapl:0", "package-0", 1)
        zone(root, "intel-rapl:1", "package-1", 2)
        counter = root / "intel-rapl:1" / "energy_uj"
        counter.chmod(0o400)  # as Linux 5.10+ makes it
        reason = _probe_as_nobody(root) if os.geteuid() == 0 else Rapl(str(root)).probe().reason
    finally:
        shutil.rmtree(top)
    assert reason.startswith("%s is readable by root only (Linux 5.10+, since CVE-2020-8694)" % counter)
    assert "run the agent as root" in reason and "\n" not in reason


def _probe_as_nobody(root: Path) -> str:
    return as_user(65534, 65534, lambda: Rapl(str(root)).probe().reason.encode()).decode()


def test_a_counter_that_cannot_be_read_later_raises(two_packages: Path) -> None:
    rapl = Rapl(str(two_packages))
    rapl.read()
    (two_packages / "intel-rapl:1" / "energy_uj").unlink()
    with pytest.raises(EnergyError, match="cannot read RAPL energy"):
        rapl.read()


@needs_python38
def test_runs_on_python_3_8(two_packages: Path) -> None:
    script = AS_ON_A_HOST + textwrap.dedent(f"""
        from benchsage.agent import energy
        rapl = energy.Rapl({str(two_packages)!r})
        print(rapl.joules(rapl.read(), rapl.read()), "typing" in sys.modules)
    """)
    result = subprocess.run([str(PYTHON38), "-S", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.0", "False"]
