"""The journal importer's record of what each test ran: the provenance's "commands", test name ->
command line as the journal's tests table holds it (an expanded sweep level's own command), for
exports that name a test by its command (hyperfine's "command")."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from benchsage.store.importers.benchsage import read_experiment
from benchsage.store.journal import journal_path

sys.path.insert(0, str(Path(__file__).parents[1] / "analyze"))
from measured_data import TESTS, write_measured  # noqa: E402


def test_each_test_maps_to_the_command_the_journal_recorded(tmp_path: Path) -> None:
    table = read_experiment(write_measured(tmp_path))
    assert table.provenance["commands"] == {name: f"./{name}" for name in TESTS}
    assert list(table.provenance["commands"]) == list(table.test_names)


def test_a_command_is_read_as_written_not_derived_from_the_name(tmp_path: Path) -> None:
    write_measured(tmp_path)
    with sqlite3.connect(journal_path(tmp_path)) as conn:
        conn.execute("UPDATE tests SET command = 'sleep 0.01 | cat' WHERE name = 'tiny'")
    conn.close()
    assert read_experiment(tmp_path).provenance["commands"]["tiny"] == "sleep 0.01 | cat"
