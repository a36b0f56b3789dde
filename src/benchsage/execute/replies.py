"""What the controller accepts from an agent: the shape of every reply, checked before it is used.

An agent runs on a host the controller does not own, and a broken or hostile one may send
anything. Every reply goes through a reader here: each field the controller uses has its type
and size checked, and becomes the value the controller works with (a ProcessResult for a run).
A reply that fails is BadReply, that worker's error: it is lost, the others go on. Lines are
capped before they are parsed (connection.py): HELLO_LIMIT, result_limit(), control_limit().
"""

from __future__ import annotations

import binascii
import json
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

from benchsage.agent.protocol import COLLECT_LIMIT, MARKER, PROTOCOL, TEXT_LIMIT
from benchsage.errors import BadReply
from benchsage.execute.worker import ProcessRequest, ProcessResult

T = TypeVar("T")

HELLO_LIMIT = 1 << 20  # bytes of a line before and with the hello: a few facts and four lists of CPUs
CONTROL_LIMIT = 4 << 20  # bytes of a reply other than a result, beyond twice its request's (a scan names paths it was sent)
RESULT_MARGIN = 128 << 10  # bytes of a result beside its output and files: numbers, an error and a note of TEXT_LIMIT escaped
NAME_LIMIT = 4096  # characters of an identifier (host, boot id, tree, a collector's name, a path)
CPU_LIMIT = 1 << 16  # CPU numbers below this, and as many in a list
COUNT_LIMIT = 1 << 62  # bytes, KiB, processes: far past anything real, still an int64 in the journal
DEPTH_LIMIT = 16  # nesting of a snapshot or a hello


class Malformed(Exception):
    """What is wrong with a reply, said after "the agent's reply to 'run' ": "has no 'x'"."""


@dataclass(frozen=True)
class Expect(Generic[T]):
    """How to read the reply to one kind of request: `read` turns the reply (a JSON object) into
    what the controller uses, raising Malformed; `limit` caps its line in bytes (None: the
    control_limit of the request)."""

    op: str
    read: Callable[[dict[str, Any]], T]
    limit: int | None = None


def accept(worker: str, expect: Expect[T], reply: dict[str, Any]) -> T:
    """The reply read by `expect`; BadReply naming the worker, the request and the problem."""
    try:
        return expect.read(reply)
    except Malformed as exc:
        raise BadReply(f"worker {worker}: the agent's reply to {expect.op!r} {exc}") from None


def control_limit(request_size: int) -> int:
    return CONTROL_LIMIT + 2 * request_size


def result_limit(output_limit: int, collect: Sequence[str]) -> int:
    """The longest line a result can be: both output tails full, each collected file at
    COLLECT_LIMIT (base64, its name escaped: JSON spells a character in at most 12 bytes), and
    the rest."""
    files = sum(_b64_size(COLLECT_LIMIT) + 12 * len(name) + 16 for name in collect)
    return 2 * _b64_size(output_limit) + files + RESULT_MARGIN


def _b64_size(n: int) -> int:
    return (n + 2) // 3 * 4


# -- the fields ----------------------------------------------------------------------------


def shown(value: Any) -> str:
    """A value the agent sent, short, for a message: strings as Python writes them, the rest as JSON."""
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "...")
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _get(obj: Mapping[str, Any], key: str, where: str = "") -> Any:
    try:
        return obj[key]
    except KeyError:
        raise Malformed(f"has no '{where}{key}'") from None


def _wrong(path: str, value: Any, expected: str) -> Malformed:
    return Malformed(f"has '{path}' = {shown(value)}, expected {expected}")


def _object(value: Any, path: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _wrong(path, value, "an object")
    return value


def _integer(value: Any, path: str, low: int = 0, high: int = COUNT_LIMIT) -> int:
    if type(value) is not int:  # a bool is not one
        raise _wrong(path, value, "an integer")
    if not low <= value <= high:
        raise _wrong(path, value, f"an integer from {low} to {high}")
    return value


def _number(value: Any, path: str, what: str = "a finite number", low: float | None = None) -> float:
    kind = type(value)
    if kind is float:
        if value - value != 0.0:  # NaN or an infinity
            raise _wrong(path, value, what)
    elif kind is int:
        if not -COUNT_LIMIT <= value <= COUNT_LIMIT:
            raise _wrong(path, value, what)
        value = float(value)
    else:
        raise _wrong(path, value, what)
    if low is not None and value < low:
        raise _wrong(path, value, f"{what} from {low:g}")
    return value


def _optional(value: Any, path: str, read: Callable[..., T], *args: Any) -> T | None:
    return None if value is None else read(value, path, *args)


def _name(value: Any, path: str, limit: int = NAME_LIMIT) -> str:
    """An identifier: text of at most `limit` characters, kept as it is."""
    if type(value) is not str:
        raise _wrong(path, value, "text")
    if len(value) > limit:
        raise Malformed(f"has '{path}' of {len(value)} characters, more than {limit}")
    return value


def words(value: Any, path: str) -> str:
    """The agent's words for a person (an error, a note): text, cut at TEXT_LIMIT, with control
    characters written as escapes, so that none reaches the terminal to act there."""
    if type(value) is not str:
        raise _wrong(path, value, "text")
    value = value[:TEXT_LIMIT]
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in value)


def _flag(value: Any, path: str) -> bool:
    if type(value) is not bool:
        raise _wrong(path, value, "true or false")
    return value


def _bytes(value: Any, path: str, limit: int, bound: str) -> bytes:
    """base64 text of at most `limit` bytes, decoded."""
    if type(value) is not str:
        raise _wrong(path, value, "base64 text")
    if len(value) > _b64_size(limit):  # said before decoding it
        size = len(value) // 4 * 3 - value[-2:].count("=")
        raise Malformed(f"has '{path}' of {size} bytes, more than {bound} ({limit})")
    try:
        data = binascii.a2b_base64(value, strict_mode=True)
    except ValueError:  # binascii.Error, or a character outside ASCII
        raise _wrong(path, value, "base64 text") from None
    if len(data) > limit:
        raise Malformed(f"has '{path}' of {len(data)} bytes, more than {bound} ({limit})")
    return data


def _cpus(value: Any, path: str) -> list[int]:
    if type(value) is not list or len(value) > CPU_LIMIT or not all(type(c) is int and 0 <= c < CPU_LIMIT for c in value):
        raise _wrong(path, value, "a list of CPU numbers")
    return value


def json_value(value: Any, path: str, depth: int = 0) -> None:
    """Nothing but JSON's own values, numbers finite, nested at most DEPTH_LIMIT deep (free-form
    parts, journaled as they are: a snapshot, a hello)."""
    kind = type(value)
    if kind is dict:
        if depth >= DEPTH_LIMIT:
            raise Malformed(f"nests deeper than {DEPTH_LIMIT} levels at '{path}'")
        for key, item in value.items():
            json_value(item, f"{path}.{key}" if path else key, depth + 1)
    elif kind is list:
        if depth >= DEPTH_LIMIT:
            raise Malformed(f"nests deeper than {DEPTH_LIMIT} levels at '{path}'")
        for i, item in enumerate(value):
            json_value(item, f"{path}[{i}]", depth + 1)
    elif kind is float:
        if value - value != 0.0:
            raise _wrong(path, value, "a finite number")


# -- the hello -----------------------------------------------------------------------------


def fatal(message: Mapping[str, Any]) -> str | None:
    """Why the agent could not start (the bootstrap's words: an interpreter too old), or None."""
    return None if "fatal" not in message else words(message["fatal"], "fatal")


def read_hello(message: Mapping[str, Any]) -> dict[str, Any]:
    """The agent's hello, every field the controller reads checked (Malformed: "has ...")."""
    version = message.get(MARKER)
    if version != PROTOCOL or type(version) is not int:
        raise Malformed(f"speaks protocol {shown(version)}, this controller speaks {PROTOCOL}")
    hello = _object(_get(message, "hello"), "hello")
    json_value(hello, "")
    _integer(_get(hello, "protocol"), "protocol", PROTOCOL, PROTOCOL)
    _name(_get(hello, "python"), "python", 64)
    _integer(_get(hello, "pid"), "pid")
    _name(_get(hello, "host"), "host")
    for key in ("slurm_node", "boot_id"):
        _optional(hello.get(key), key, _name)
    measurement = _object(_get(hello, "measurement"), "measurement")
    for key in ("cgroup", "cgroup_reason", "energy_reason"):
        _optional(measurement.get(key), f"measurement.{key}", words)
    _name(measurement.get("leftovers", ""), "measurement.leftovers", 64)
    _flag(measurement.get("energy", False), "measurement.energy")
    for key in ("cpus_online", "cpus_allowed", "cpus_isolated", "cpus_nohz_full"):
        if key in measurement:
            _cpus(measurement[key], f"measurement.{key}")
    if "cpus_online" in measurement and "cpus_allowed" not in measurement:
        raise Malformed("has no 'measurement.cpus_allowed'")
    return hello


# -- results -------------------------------------------------------------------------------


def result(request: ProcessRequest) -> Expect[ProcessResult]:
    """How the reply to `request` (a run) is read: into a ProcessResult, its output tails within
    the request's output_limit and its files those it asked for."""
    limit = request.output_limit
    collect = frozenset(request.collect)
    return Expect("run", lambda reply: read_result(reply, limit, collect), result_limit(limit, request.collect))


def read_result(reply: Mapping[str, Any], output_limit: int, collect: frozenset[str] = frozenset()) -> ProcessResult:
    """A run's result, as the agent encodes it (agent/protocol.py encode_result: what it usually
    says left out), checked field by field. Read between two trials: what is usually absent or
    empty costs a lookup, no call."""
    r = _object(reply["result"], "result") if "result" in reply else _other_reply(reply)
    get = r.get
    status = _get(r, "exit_status")
    seconds = "a finite number of seconds"
    out, err, files = get("stdout", ""), get("stderr", ""), get("files", {})
    error, note, peak, cpu, energy, left = get("error"), get("note"), get("peak_memory"), get("cpu_time"), get("energy"), get("leftovers")
    return ProcessResult(
        exit_status=None if status is None else _integer(status, "exit_status", -255, 255),
        timed_out=_flag(get("timed_out", False), "timed_out"),
        wall_time=_number(_get(r, "wall_time"), "wall_time", seconds, 0.0),
        user_time=_number(_get(r, "user_time"), "user_time", seconds, 0.0),
        sys_time=_number(_get(r, "sys_time"), "sys_time", seconds, 0.0),
        max_rss=_integer(_get(r, "max_rss"), "max_rss"),
        started=_number(_get(r, "started"), "started", seconds),
        ended=_number(_get(r, "ended"), "ended", seconds),
        stdout=b"" if out == "" else _bytes(out, "stdout", output_limit, "output_limit"),
        stderr=b"" if err == "" else _bytes(err, "stderr", output_limit, "output_limit"),
        stdout_dropped=_integer(get("stdout_dropped", 0), "stdout_dropped"),
        stderr_dropped=_integer(get("stderr_dropped", 0), "stderr_dropped"),
        files={} if files == {} else _files(files, collect),
        error=None if error is None else words(error, "error"),
        spawn=_name(get("spawn", ""), "spawn", 64),
        peak_memory=None if peak is None else _integer(peak, "peak_memory"),
        cpu_time=None if cpu is None else _number(cpu, "cpu_time", seconds, 0.0),
        energy=None if energy is None else _number(energy, "energy"),
        leftovers=None if left is None else _integer(left, "leftovers"),
        oom_kills=_integer(get("oom_kills", 0), "oom_kills"),
        note=None if note is None else words(note, "note"),
    )


def _other_reply(reply: Mapping[str, Any]) -> dict[str, Any]:
    """A reply without the key its request asks for: name what it holds (the answer to another
    request, most likely)."""
    keys = ", ".join(repr(k[:40]) for k in list(reply)[:5])
    raise Malformed(f"has no 'result' (it holds {keys or 'nothing'})")


def _files(value: Any, collect: frozenset[str]) -> dict[str, bytes | None]:
    files = _object(value, "files")
    out: dict[str, bytes | None] = {}
    for name, data in files.items():
        if name not in collect:
            raise Malformed(f"has a file {shown(name)} it was not asked to collect")
        out[name] = _optional(data, f"files.{name}", _bytes, COLLECT_LIMIT, "the limit of a collected file")
    return out


# -- the other replies ---------------------------------------------------------------------


def _key(reply: Mapping[str, Any], key: str) -> Any:
    if key not in reply:
        keys = ", ".join(repr(k[:40]) for k in list(reply)[:5])
        raise Malformed(f"has no '{key}' (it holds {keys or 'nothing'})")
    return reply[key]


def read_snapshot(reply: Mapping[str, Any]) -> dict[str, Any]:
    """{"snapshot": the host's environment snapshot (journaled as it is: JSON values only,
    numbers finite), "boot_id": optional}; the fields the controller and the analyses key on
    checked."""
    snapshot = _object(_key(reply, "snapshot"), "snapshot")
    json_value(snapshot, "snapshot")
    for key in ("boot_id", "host"):
        _optional(snapshot.get(key), f"snapshot.{key}", _name)
    files = _optional(snapshot.get("files"), "snapshot.files", _object) or {}
    for name, digest in files.items():
        _optional(digest, f"snapshot.files.{name}", _name, 128)
    _optional(reply.get("boot_id"), "boot_id", _name)
    return dict(reply)


def _read_boot_id(reply: Mapping[str, Any]) -> str | None:
    return _optional(_key(reply, "boot_id"), "boot_id", _name)


def _read_pong(reply: Mapping[str, Any]) -> float:
    return _number(_key(reply, "pong"), "pong", "a finite number of seconds")


def _read_bye(reply: Mapping[str, Any]) -> bool:
    return reply.get("bye") is True


def _read_object(reply: dict[str, Any]) -> dict[str, Any]:
    return reply


def window(phase: str, names: Sequence[str]) -> Expect[dict[str, Any]]:
    """How the reply to a window's open or close is read: {"time": s} and, at the close,
    "values" (collector -> finite number) and "problems" (collector -> why), for the
    collectors sent only."""
    wanted = frozenset(names)

    def read(reply: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"time": _number(_key(reply, "time"), "time", "a finite number of seconds")}
        if phase == "close":
            values = _object(reply.get("values") or {}, "values")
            problems = _object(reply.get("problems") or {}, "problems")
            for name in (*values, *problems):
                if name not in wanted:
                    raise Malformed(f"has a value of {shown(name)}, a collector it was not sent")
            out["values"] = {name: _number(v, f"values.{name}") for name, v in values.items()}
            out["problems"] = {name: words(why, f"problems.{name}") for name, why in problems.items()}
        return out

    return Expect("window", read)


BOOT_ID = Expect("boot_id", _read_boot_id)
SNAPSHOT = Expect("snapshot", read_snapshot)
PONG = Expect("ping", _read_pong)
BYE = Expect("bye", _read_bye)
CPU_LATENCY = Expect("cpu_latency", _read_object)


# -- deploy ---------------------------------------------------------------------------------


def _refusing(read: Callable[[Mapping[str, Any]], dict[str, Any]]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A deploy step's reader that also takes the agent's refusal (any step may refuse: a path
    that leaves the dir, a dir that is not private)."""
    def reader(reply: Mapping[str, Any]) -> dict[str, Any]:
        if "refused" in reply:
            return {"refused": words(reply["refused"], "refused")}
        return read(reply)
    return reader


def _read_scan(reply: Mapping[str, Any]) -> dict[str, Any]:
    need = _key(reply, "need")
    if type(need) is not list or not all(type(p) is str for p in need):
        raise _wrong("need", need, "a list of paths")
    return dict(reply)


def _read_finish(reply: Mapping[str, Any]) -> dict[str, Any]:
    _name(_key(reply, "tree"), "tree", 128)
    _integer(_key(reply, "files"), "files")
    return dict(reply)


def _read_remove(reply: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"removed": _flag(_key(reply, "removed"), "removed")}
    if reply.get("why") is not None:
        out["why"] = words(reply["why"], "why")
    return out


DEPLOY_SCAN = Expect("deploy", _refusing(_read_scan))
DEPLOY_PUT = Expect("deploy", _refusing(_read_object))
DEPLOY_FINISH = Expect("deploy", _refusing(_read_finish))
DEPLOY_REMOVE = Expect("deploy", _refusing(_read_remove))
