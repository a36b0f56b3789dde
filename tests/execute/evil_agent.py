"""A hostile agent for tests: the real agent behind a proxy that tampers with one of its replies.

Started by a `command` worker, `transport = [PYTHON, "evil_agent.py", ACTION..., "--"]`: the
words after "--" (the controller's own command that starts the agent) run the real agent as a
child, so everything before the tampered reply is the real thing (real trials, measured and
journaled). The proxy pairs each reply with the request it answers (the protocol is one request
at a time) and applies the action to the chosen one:

    --on OP:N          the N-th reply (1-based) to OP: hello, run (any), trial (a run with
                       trial: true), snapshot, boot_id, window, ...; default hello:1
    --set PATH=JSON    set a field of that reply (PATH dotted: result.exit_status; JSON may be NaN)
    --del PATH         remove a field
    --replace JSON     send this reply instead
    --stdout N         the result's stdout: N bytes of "x", base64 as the agent encodes it
    --extra JSON       send one more line right after the reply, in the same write
    --endless PREFIX   send PREFIX then "A" forever without a newline, instead of the reply
                       (--on hello:1: no real agent is started)
    --count FILE       with --endless: write there how many bytes were sent before the pipe closed
    --silent           say nothing and exit (a transport that fails at once)
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import queue
import subprocess
import sys
import threading


def main() -> None:
    split = sys.argv.index("--")
    real = sys.argv[split + 1:]
    parser = argparse.ArgumentParser()
    parser.add_argument("--on", default="hello:1")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--del", dest="delete", action="append", default=[])
    parser.add_argument("--replace")
    parser.add_argument("--stdout", type=int)
    parser.add_argument("--extra")
    parser.add_argument("--endless")
    parser.add_argument("--count")
    parser.add_argument("--silent", action="store_true")
    args = parser.parse_args(sys.argv[1:split])
    out = os.dup(1)
    os.dup2(2, 1)
    if args.silent:
        return
    op, _, nth = args.on.partition(":")
    if args.endless is not None and op == "hello":
        endless(out, args.endless.encode(), args.count)
        return
    child = subprocess.Popen(real, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    asked: queue.Queue[str] = queue.Queue()
    threading.Thread(target=forward, args=(child.stdin, asked), daemon=True).start()
    seen: dict[str, int] = {}
    replies = child.stdout
    first = True
    for line in replies:
        kinds = ["hello"] if first else kinds_of(asked.get())
        first = False
        target = False
        for kind in kinds:
            seen[kind] = seen.get(kind, 0) + 1
            target = target or (kind == op and seen[kind] == int(nth or 1))
        if not target:
            write(out, line)
            continue
        if args.endless is not None:
            child.kill()
            endless(out, args.endless.encode(), args.count)
            return
        reply = json.loads(args.replace) if args.replace is not None else json.loads(line)
        for item in args.set:
            path, _, value = item.partition("=")
            put(reply, path, json.loads(value))
        for path in args.delete:
            *parents, last = path.split(".")
            walk(reply, parents).pop(last)
        if args.stdout is not None:
            reply["result"]["stdout"] = base64.b64encode(b"x" * args.stdout).decode()
        data = json.dumps(reply).encode() + b"\n"
        if args.extra is not None:
            data += args.extra.encode() + b"\n"
        write(out, data)


def kinds_of(request: str) -> list[str]:
    """The names a request counts under: its op, and "trial" for a trial's run."""
    message = json.loads(request)
    op = message.get("op", "?")
    return [op, "trial"] if op == "run" and message.get("trial") else [op]


def forward(stdin, asked: queue.Queue) -> None:
    """The controller's bundle, then its requests, to the real agent (each request's op queued)."""
    source = sys.stdin.buffer
    size = source.readline()
    stdin.write(size + source.read(int(size)))
    for line in source:
        asked.put(line.decode())
        try:
            stdin.write(line)
        except BrokenPipeError:
            break
    stdin.close()


def walk(reply: dict, parents: list[str]) -> dict:
    for key in parents:
        reply = reply[key]
    return reply


def put(reply: dict, path: str, value: object) -> None:
    *parents, last = path.split(".")
    walk(reply, parents)[last] = value


def write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def endless(fd: int, prefix: bytes, count: str | None) -> None:
    """`prefix`, then "A" without end, until the reader closes the pipe; how much got through
    is written to `count`."""
    sent = 0
    block = b"A" * (1 << 16)
    try:
        write(fd, prefix)
        sent += len(prefix)
        while True:
            sent += os.write(fd, block)
    except OSError:
        pass
    finally:
        if count:
            with open(count, "w") as f:
                f.write(str(sent))


if __name__ == "__main__":
    main()
