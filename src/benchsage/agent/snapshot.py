"""The per-run environment snapshot: where and with what software a run's trials executed.

Taken before every run (so it must be cheap): host, kernel, CPU and its settings, load, tool
versions, the noise readings, and content hashes of the files the tests execute, so that runs
on different workers can be checked for identical software (analyze.snapshots compares them).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shlex
import shutil
import time
from typing import Any, Sequence

from benchsage.agent.noise import SOURCES, Reading
from benchsage.vocabulary import VERSION

_HASH_CACHE_SIZE = 4096
# (realpath, size, mtime_ns, ctime_ns, inode) -> sha256. ctime cannot be set back by a copy
# that preserves mtime, so a rewritten file is always hashed again.
_hash_cache: dict[tuple[str, int, int, int, int], str] = {}
_os_release: dict[str, str | None] = {}
# Noise sources that cannot change while the process that reads them runs (the snapshot helper
# lives as long as its agent): read once. The others are read at every snapshot.
_STATIC_SOURCES = frozenset({"kernel", "virtualization"})
_static_readings: dict[str, Reading] = {}

# Words that start a command but are not a program: skip them and look at the rest.
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "exec", "command", "builtin"})
# Shell builtins: nothing to hash (PATH may hold a namesake, the shell does not run it).
_BUILTINS = frozenset(
    {
        "cd", "echo", "printf", "test", "[", "[[", "true", "false", "export", "set", "unset", "exit", ":",
        "read", "wait", "eval", "ulimit", "umask", "return", "shift", "trap", "fi", "done", "esac", "case",
        "for", "in", "local", "readonly", "type", "hash", "alias", "unalias", "kill", "pwd", "sleep",
    }
)
_SHELLS = re.compile(r"^(sh|bash|dash|zsh|ksh|mksh|ash|busybox)$")
_INTERPRETERS = re.compile(
    r"^(python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|Rscript|"
    r"lua[0-9.]*|luajit|julia|tclsh[0-9.]*|java|guile|racket|ocaml|swift|elixir|erl|escript)$"
)
# Options after which an interpreter runs inline code or a module, not a file argument.
_INLINE = frozenset({"-c", "-m", "-e", "-E", "--eval", "-r"})
_OPERATORS = re.compile(r"^[();<>|&]+$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _sha256(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    digest = _hash_cache.get(key)
    if digest is None:
        try:
            with open(path, "rb") as f:
                h = hashlib.sha256()
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
                digest = h.hexdigest()
        except OSError:
            return None
        if len(_hash_cache) >= _HASH_CACHE_SIZE:
            _hash_cache.clear()
        _hash_cache[key] = digest
    return digest


def file_hashes(files: Sequence[str], cwd: str) -> dict[str, str | None]:
    """sha256 of each file (relative to cwd, or absolute), None when missing or not a file."""
    return {name: _sha256(os.path.join(cwd, name)) for name in files}


def _read_os_release() -> str | None:
    if "pretty" not in _os_release:
        pretty = None
        for candidate in ("/etc/os-release", "/usr/lib/os-release"):
            try:
                with open(candidate, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if line.startswith("PRETTY_NAME="):
                            pretty = line.split("=", 1)[1].strip().strip('"').strip("'")
                break
            except OSError:
                continue
        _os_release["pretty"] = pretty
    return _os_release["pretty"]


def collect(files: Sequence[str], cwd: str) -> dict[str, Any]:
    """The environment snapshot of this machine, now, with the sha256 of `files`.

    JSON-serialisable. Settings that cannot be read are None, never an error.
    """
    uname = os.uname()
    readings = _readings()
    cpu = readings["cpu"].data
    load = readings["load"].data
    return {
        "time": time.time(),
        "host": uname.nodename,
        "kernel": uname.release,
        "kernel_version": uname.version,
        "machine": uname.machine,
        "os": _read_os_release(),
        "cpu_model": cpu.get("model"),
        "cpu_count": cpu.get("cpus"),
        "governor": readings["governor"].value,
        "turbo": readings["turbo"].value,
        "smt": readings["smt"].value,
        "aslr": readings["aslr"].value,
        "cpu_idle": readings["cpu_idle"].value,
        "load_average": [load["load1"], load["load5"], load["load15"]] if "load1" in load else None,
        # CPUs' worth of other work and of the experiment's own since the last snapshot (noise.LoadAverage)
        "cpu_share": {"others": load["others"], "own": load["own"], "seconds": load["over"]} if "others" in load else None,
        "python": platform.python_version(),
        "benchsage": VERSION,
        "noise": {name: {"value": r.value, "state": r.state} for name, r in readings.items()},
        "files": file_hashes(files, cwd),
    }


def _readings() -> dict[str, Reading]:
    """Every noise source's reading, in collect_noise's order; the static ones read once."""
    out = {}
    for source in SOURCES:
        reading = _static_readings.get(source.name)
        if reading is None:
            reading = source("/").read()
            if source.name in _STATIC_SOURCES:
                _static_readings[source.name] = reading
        out[source.name] = reading
    return out


def _resolve(word: str, cwd: str) -> str | None:
    """The file a command word runs: a path relative to cwd, or a program on PATH."""
    if "/" in word:
        path = os.path.normpath(os.path.join(cwd, word))
        return path if os.path.isfile(path) else None
    found = shutil.which(word)
    return os.path.normpath(os.path.abspath(found)) if found else None


def _shebang(path: str) -> str | None:
    """The interpreter a script names on its #! line (through /usr/bin/env too)."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        args = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        return _resolve(args[0], "/") if args else None
    return words[0] if os.path.isfile(words[0]) else None


def _segments(command: str) -> list[list[str]]:
    """Simple commands of a shell command line, split at operators; redirections dropped."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    segments: list[list[str]] = [[]]
    skip_next = False
    for token in lexer:
        if skip_next:
            skip_next = False
        elif _OPERATORS.match(token):
            if "<" in token or ">" in token:
                skip_next = True  # the file (or fd) redirected to
                if segments[-1] and segments[-1][-1].isdigit():
                    segments[-1].pop()  # the "2" of "2>file"
            else:
                segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


# Commands that run another command: their options that take a value, and how many
# positional words come before the command (taskset's CPU mask, timeout's duration...).
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "setsid": (frozenset(), 0),
    "nohup": (frozenset(), 0),
    "sudo": (frozenset({"-u", "-g", "-C", "-h", "-p", "-U"}), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
}


def _strip_prefix(words: list[str]) -> list[str]:
    """Drop what runs before the program: assignments, keywords, wrappers and their options."""
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word) or word in _KEYWORDS:
            i += 1
        elif word in _WRAPPERS:
            takes_value, positional = _WRAPPERS[word]
            i += 1
            while i < len(words) and (words[i].startswith("-") or (word == "env" and "=" in words[i])):
                i += 2 if words[i] in takes_value else 1
            i += positional
        else:
            break
    return words[i:]


def command_files(command: str, cwd: str) -> list[str]:
    """Absolute paths of the files a shell command executes, for hashing.

    For each simple command: the program (relative to cwd, or on PATH), the interpreter its #!
    line names, and, when the program is an interpreter (sh, bash, python3, perl, node, ...),
    its first argument that is an existing file. Shell builtins are left out. Best effort: a
    command line the lexer cannot split gives [].
    """
    try:
        segments = _segments(command)
    except ValueError:
        return []
    out: list[str] = []
    seen: set[str] = set()

    def add(path: str | None) -> None:
        # One entry per file, however it was named (/bin/sh and /usr/bin/sh are one file).
        if path and (real := os.path.realpath(path)) not in seen:
            seen.add(real)
            out.append(path)

    for words in segments:
        words = _strip_prefix(words)
        if not words:
            continue
        program, args = words[0], words[1:]
        if program in (".", "source"):
            if args:
                add(_resolve(args[0] if "/" in args[0] else "./" + args[0], cwd))
            continue
        if program in _BUILTINS:
            continue
        path = _resolve(program, cwd)
        add(path)
        if path is None:
            continue
        add(_shebang(path))
        name = os.path.basename(program)
        if _SHELLS.match(name) or _INTERPRETERS.match(name):
            for i, arg in enumerate(args):
                if arg in _INLINE:
                    if arg == "-c" and _SHELLS.match(name) and i + 1 < len(args):
                        for inner in command_files(args[i + 1], cwd):
                            add(inner)
                    break
                if arg.startswith("-"):
                    continue
                candidate = os.path.normpath(os.path.join(cwd, arg))
                if os.path.isfile(candidate):
                    add(candidate)
                    break
    return out
