"""The readers of agent replies (execute/replies.py) on the replies of a real agent: what it
sends is accepted as it is, each field made wrong is named, and anything at all in any field,
or as a whole reply, ends in Malformed, never in another exception. The caps: a legitimate
result at its largest fits its line cap (a collected file of COLLECT_LIMIT bytes, full output
tails), a file past COLLECT_LIMIT is left out and said."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsage.agent.protocol import COLLECT_LIMIT, TEXT_LIMIT
from benchsage.errors import BadReply
from benchsage.execute import replies
from benchsage.execute.local import LocalWorker
from benchsage.execute.replies import Malformed, read_hello, read_result, read_snapshot
from benchsage.execute.worker import ProcessRequest

LIMIT = 4096
COLLECTORS = [{"name": "c", "kind": "cpu", "command": None, "delta": True, "cwd": "/", "env": {}, "timeout": 5},
              {"name": "n", "kind": "command", "command": "echo 1e999", "delta": False, "cwd": "/", "env": {}, "timeout": 5}]


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What a real agent says: its hello, a trial's result (output on both streams, a collected
    file and a missing one), a snapshot, a boot id, a window's open and close."""
    folder = tmp_path_factory.mktemp("agent")
    worker = LocalWorker()
    worker.connect()
    conn = worker._conn
    assert conn is not None
    hello = {"benchsage-agent": 1, "hello": conn.hello}
    said = {name: conn.request(message) for name, message in {
        "result": {"op": "run", "command": "echo out; echo err >&2; echo 3.5 > r.txt", "cwd": str(folder), "env": {},
                   "timeout": 10, "output_limit": LIMIT, "collect": ["r.txt", "gone.txt"], "cpus": None, "trial": True},
        "snapshot": {"op": "snapshot", "files": [], "cwd": str(folder), "commands": [["echo hi", str(folder)]], "boot_id": True,
                     "boot_id_command": None},
        "boot_id": {"op": "boot_id", "command": None},
        "open": {"op": "window", "phase": "open", "collectors": COLLECTORS},
        "close": {"op": "window", "phase": "close", "collectors": COLLECTORS},
    }.items()}
    worker.close()
    return {"hello": hello, **said}


COLLECT = frozenset({"r.txt", "gone.txt"})


def test_what_a_real_agent_says_is_accepted_as_it_is(real: dict[str, Any]) -> None:
    assert read_hello(real["hello"]) == real["hello"]["hello"]
    result = read_result(real["result"], LIMIT, COLLECT)
    assert (result.exit_status, result.stdout, result.stderr, dict(result.files)) == (0, b"out\n", b"err\n",
                                                                                    {"r.txt": b"3.5\n", "gone.txt": None})
    assert result.wall_time > 0 and result.started <= result.ended and result.max_rss > 0
    assert read_snapshot(real["snapshot"]) == real["snapshot"]
    assert replies.BOOT_ID.read(real["boot_id"]) == real["boot_id"]["boot_id"]
    names = [c["name"] for c in COLLECTORS]
    assert replies.window("open", names).read(real["open"]) == real["open"]
    closed = replies.window("close", names).read(real["close"])
    assert closed == real["close"] and math.isfinite(closed["values"]["c"])


def test_a_collector_that_prints_a_number_past_the_floats_is_a_problem_not_an_infinity(real: dict[str, Any]) -> None:
    assert "n" not in real["close"]["values"]
    assert real["close"]["problems"]["n"] == "the value is not a finite number (inf)"


def changed(reply: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `reply` with the field at `path` (dotted) set to `value`, or removed for DROP."""
    out = json.loads(json.dumps(reply))
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[key]
    if value is DROP:
        del node[last]
    else:
        node[last] = value
    return out


DROP = object()


@pytest.mark.parametrize("path, value, problem", [
    ("result.exit_status", "0", "has 'exit_status' = '0', expected an integer"),
    ("result.exit_status", True, "has 'exit_status' = true, expected an integer"),
    ("result.exit_status", 300, "has 'exit_status' = 300, expected an integer from -255 to 255"),
    ("result.exit_status", DROP, "has no 'exit_status'"),
    ("result.wall_time", float("nan"), "has 'wall_time' = NaN, expected a finite number of seconds"),
    ("result.wall_time", -1.0, "has 'wall_time' = -1.0, expected a finite number of seconds from 0"),
    ("result.started", float("inf"), "has 'started' = Infinity, expected a finite number of seconds"),
    ("result.max_rss", 1.5, "has 'max_rss' = 1.5, expected an integer"),
    ("result.max_rss", -1, "has 'max_rss' = -1, expected an integer from 0 to 4611686018427387904"),
    ("result.timed_out", 0, "has 'timed_out' = 0, expected true or false"),
    ("result.stdout", base64.b64encode(b"x" * (LIMIT + 1)).decode(), f"has 'stdout' of {LIMIT + 1} bytes, more than output_limit ({LIMIT})"),
    ("result.stderr", "not base64!", "has 'stderr' = 'not base64!', expected base64 text"),
    ("result.stderr", "é", "has 'stderr' = 'é', expected base64 text"),
    ("result.files", {"other.txt": None}, "has a file 'other.txt' it was not asked to collect"),
    ("result.files", ["r.txt"], "has 'files' = [\"r.txt\"], expected an object"),
    ("result.files.r.txt", 5, "has 'files.r.txt' = 5, expected base64 text"),
    ("result.error", {"a": 1}, "has 'error' = {\"a\": 1}, expected text"),
    ("result.peak_memory", "512", "has 'peak_memory' = '512', expected an integer"),
    ("result.cpu_time", float("nan"), "has 'cpu_time' = NaN, expected a finite number of seconds"),
    ("result.energy", "1 J", "has 'energy' = '1 J', expected a finite number"),
    ("result.oom_kills", None, "has 'oom_kills' = null, expected an integer"),
    ("result", "ok", "has 'result' = 'ok', expected an object"),
])
def test_each_field_of_a_result_made_wrong_is_named(real: dict[str, Any], path: str, value: Any, problem: str) -> None:
    if path == "result.files.r.txt":  # a file name holds a dot: set it directly
        reply = json.loads(json.dumps(real["result"]))
        reply["result"]["files"]["r.txt"] = value
    else:
        reply = changed(real["result"], path, value)
    with pytest.raises(Malformed) as caught:
        read_result(reply, LIMIT, COLLECT)
    assert str(caught.value) == problem


@pytest.mark.parametrize("path, value, problem", [
    ("hello.measurement.cpus_online", "0-3", "has 'measurement.cpus_online' = '0-3', expected a list of CPU numbers"),
    ("hello.measurement.cpus_allowed", [0, -1], "has 'measurement.cpus_allowed' = [0, -1], expected a list of CPU numbers"),
    ("hello.measurement.cpus_allowed", DROP, "has no 'measurement.cpus_allowed'"),
    ("hello.measurement.energy", "yes", "has 'measurement.energy' = 'yes', expected true or false"),
    ("hello.measurement", None, "has 'measurement' = null, expected an object"),
    ("hello.host", ["a"], "has 'host' = [\"a\"], expected text"),
    ("hello.boot_id", "x" * 5000, "has 'boot_id' of 5000 characters, more than 4096"),
    ("hello.pid", float("nan"), "has 'pid' = NaN, expected a finite number"),
    ("hello.protocol", 2, "has 'protocol' = 2, expected an integer from 1 to 1"),
    ("benchsage-agent", "1", "speaks protocol '1', this controller speaks 1"),
])
def test_each_field_of_a_hello_made_wrong_is_named(real: dict[str, Any], path: str, value: Any, problem: str) -> None:
    with pytest.raises(Malformed) as caught:
        read_hello(changed(real["hello"], path, value))
    assert str(caught.value) == problem


@pytest.mark.parametrize("path, value, problem", [
    ("snapshot.boot_id", 5, "has 'snapshot.boot_id' = 5, expected text"),
    ("snapshot.files", {"/bin/echo": 7}, "has 'snapshot.files./bin/echo' = 7, expected text"),
    ("snapshot.noise.load.value", float("-inf"), "has 'snapshot.noise.load.value' = -Infinity, expected a finite number"),
    ("snapshot.cpu_model", [[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]], "nests deeper than 16 levels at 'snapshot.cpu_model[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]'"),
    ("snapshot", [], "has 'snapshot' = [], expected an object"),
    ("boot_id", {}, "has 'boot_id' = {}, expected text"),
])
def test_each_field_of_a_snapshot_made_wrong_is_named(real: dict[str, Any], path: str, value: Any, problem: str) -> None:
    with pytest.raises(Malformed) as caught:
        read_snapshot(changed(real["snapshot"], path, value))
    assert str(caught.value) == problem


def test_a_window_names_a_value_of_a_collector_it_was_not_sent(real: dict[str, Any]) -> None:
    close = replies.window("close", ["c", "n"])
    with pytest.raises(Malformed, match="has a value of 'x', a collector it was not sent"):
        close.read(changed(real["close"], "values.x", 1.0))
    with pytest.raises(Malformed, match=r"has 'values.c' = NaN, expected a finite number"):
        close.read(changed(real["close"], "values.c", float("nan")))
    with pytest.raises(Malformed, match=r"has 'time' = '12:00', expected a finite number of seconds"):
        replies.window("open", ["c"]).read({"time": "12:00"})


def test_the_agents_words_reach_a_message_cut_and_without_control_characters() -> None:
    assert replies.words("cannot start 'x': No such file", "error") == "cannot start 'x': No such file"
    assert replies.words("\x1b[2Jgone\nnext\x07", "error") == "\\x1b[2Jgone\\nnext\\x07"
    assert len(replies.words("y" * 10 * TEXT_LIMIT, "error")) == TEXT_LIMIT


def test_a_bad_reply_is_the_workers_error_naming_the_request() -> None:
    with pytest.raises(BadReply) as caught:
        replies.accept("node1", replies.result(ProcessRequest("true", "/")), {"pong": 1.5})
    assert str(caught.value) == "worker node1: the agent's reply to 'run' has no 'result' (it holds 'pong')"
    assert caught.value.exit_status == 3


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


def only_malformed(read: Callable[[Any], Any], reply: Any) -> None:
    try:
        read(reply)
    except Malformed:
        pass


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(["exit_status", "timed_out", "wall_time", "user_time", "sys_time", "max_rss", "started", "ended",
                              "stdout", "stderr", "stdout_dropped", "stderr_dropped", "files", "error", "spawn", "peak_memory",
                              "cpu_time", "energy", "leftovers", "oom_kills", "note"]), value=JSON)
def test_anything_in_any_field_of_a_result_is_read_or_malformed(field: str, value: Any) -> None:
    base = {"exit_status": 0, "wall_time": 0.1, "user_time": 0.0, "sys_time": 0.0, "max_rss": 1, "started": 1.0, "ended": 1.1}
    only_malformed(lambda r: read_result(r, LIMIT, COLLECT), {"result": {**base, field: value}})


@settings(max_examples=300, deadline=None)
@given(reply=st.dictionaries(st.sampled_from(["result", "snapshot", "boot_id", "pong", "time", "values", "problems", "need",
                                              "refused", "tree", "files", "removed", "why", "hello", "benchsage-agent", "bye"]),
                             JSON, max_size=5))
def test_any_reply_at_all_is_read_or_malformed(reply: dict[str, Any]) -> None:
    for read in (lambda r: read_result(r, LIMIT, COLLECT), read_snapshot, read_hello, replies.BOOT_ID.read, replies.PONG.read,
                 replies.BYE.read, replies.window("close", ["c"]).read, replies.DEPLOY_SCAN.read, replies.DEPLOY_FINISH.read,
                 replies.DEPLOY_REMOVE.read):
        only_malformed(read, reply)


def test_the_largest_legitimate_result_fits_its_line_cap(tmp_path: Path) -> None:
    """Full tails on both streams and a collected file of COLLECT_LIMIT bytes, of characters JSON
    escapes in its name: through a real agent and the controller's cap; one byte more of the
    file, and it is left out, said in the note."""
    name = "r\u00e9\"\\.txt"
    write = (f"python3 -c \"import sys; sys.stdout.write('o' * 8192); sys.stderr.write('e' * 8192); "
             f"open(sys.argv[1], 'wb').write(b'7' * int(sys.argv[2]))\"")
    with LocalWorker() as worker:
        whole = worker.run(ProcessRequest(f"{write} '{name}' {COLLECT_LIMIT}", str(tmp_path), output_limit=LIMIT, collect=(name,)))
        over = worker.run(ProcessRequest(f"{write} '{name}' {COLLECT_LIMIT + 1}", str(tmp_path), output_limit=LIMIT, collect=(name,)))
    assert whole.ok and len(whole.files[name]) == COLLECT_LIMIT and (len(whole.stdout), len(whole.stderr)) == (LIMIT, LIMIT)
    assert whole.note is None
    assert over.ok and over.files[name] is None
    assert over.note == f"results file {name!r} is larger than 16 MiB, more than the agent sends back: left out"


def test_the_longest_words_an_agent_sends_fit_a_results_cap() -> None:
    """A result at its longest as the agent encodes and sends it (agent/protocol.py): both tails
    full, an error and a note of TEXT_LIMIT characters JSON spells in 12 bytes each, every
    count at its largest, collected files named in such characters: within result_limit."""
    from benchsage.agent.protocol import encode_result

    wide = "\U0001F600" * TEXT_LIMIT * 2  # cut at TEXT_LIMIT by the agent
    names = ("\U0001F600" * 200, "r.txt")
    result = {"exit_status": -255, "timed_out": True, "wall_time": -1.2345678901234567e-300, "user_time": 1.2345678901234567e300,
              "sys_time": 1.2345678901234567e300, "max_rss": 1 << 62, "started": 1.2345678901234567e300, "ended": 1.2345678901234567e300,
              "stdout": b"\xff" * LIMIT, "stderr": b"\xff" * LIMIT, "stdout_dropped": 1 << 62, "stderr_dropped": 1 << 62,
              "files": {names[0]: b"\xff" * 1000, names[1]: None}, "error": wide, "spawn": "shell", "peak_memory": 1 << 62,
              "cpu_time": 1.2345678901234567e300, "energy": -1.2345678901234567e300, "leftovers": 1 << 62, "oom_kills": 1 << 62,
              "note": wide}
    line = (json.dumps({"result": encode_result(result)}, separators=(",", ":")) + "\n").encode()
    unused = 2 * replies._b64_size(COLLECT_LIMIT) - replies._b64_size(1000)  # the files' share the two files leave
    assert len(line) - 1 <= replies.result_limit(LIMIT, names) - unused
    assert line.count(b"\\ud83d\\ude00") == 2 * TEXT_LIMIT + 200  # the words, cut, at 12 bytes a character, and a name
