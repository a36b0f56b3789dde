"""The redis example's reset: stop the previous redis-server by its pid file, start a fresh one.

The server listens on a unix socket in run/ only (`port 0`: no TCP at all), so it cannot clash
with another redis on this machine, and keeps nothing on disk (no RDB, no AOF): every run
starts from an empty, newly started server, as the paper's runs started from a reboot.

    python3 server.py restart   # before every run (the spec's [reset])
    python3 server.py stop      # when the experiment is over

Each server's pid is appended to run/servers.log, so anyone can check that every reset really
stopped the server before it.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run")
SOCKET = os.path.join(RUN, "redis.sock")
PIDFILE = os.path.join(RUN, "redis.pid")
HISTORY = os.path.join(RUN, "servers.log")
SUN_PATH_MAX = 107  # bytes of a unix socket path (sockaddr_un.sun_path, less its NUL)
START_TIMEOUT = 10.0  # seconds until the new server must answer PING


def fail(message: str) -> None:
    print(f"server.py: {message}", file=sys.stderr)
    sys.exit(2)


def is_redis(pid: int) -> bool:
    """Whether pid is a living redis-server (a recycled pid is left alone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv0 = fh.read().split(b"\0")[0]
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return b"redis-server" in argv0 and state not in (b"Z", b"X")


def stop() -> None:
    """Stop the server named in the pid file (TERM, then KILL after 5 s) and remove its files."""
    try:
        with open(PIDFILE) as fh:
            pid = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        pid = 0
    if pid and is_redis(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5.0
        while is_redis(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if is_redis(pid):
            os.kill(pid, signal.SIGKILL)
            while is_redis(pid):
                time.sleep(0.02)
    for path in (PIDFILE, SOCKET):
        if os.path.lexists(path):
            os.unlink(path)


def ping() -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(SOCKET)
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start() -> int:
    """Start redis-server daemonized on the unix socket; wait until it answers; return its pid."""
    server = shutil.which("redis-server")
    if server is None:
        fail("redis-server is not installed (Debian: apt-get install redis-server redis-tools)")
    if len(SOCKET.encode()) > SUN_PATH_MAX:
        fail(f"the socket path {SOCKET} is longer than {SUN_PATH_MAX} bytes; copy the example to a shorter path")
    os.makedirs(RUN, exist_ok=True)
    subprocess.run([
        server, "--port", "0", "--unixsocket", SOCKET, "--unixsocketperm", "700",
        "--save", "", "--appendonly", "no", "--daemonize", "yes",
        "--pidfile", PIDFILE, "--dir", RUN, "--logfile", os.path.join(RUN, "redis.log"),
    ], check=True)
    deadline = time.monotonic() + START_TIMEOUT
    while not (ping() and os.path.exists(PIDFILE)):
        if time.monotonic() > deadline:
            fail(f"redis-server did not answer on {SOCKET} within {START_TIMEOUT:.0f} s (see run/redis.log)")
        time.sleep(0.02)
    with open(PIDFILE) as fh:
        pid = int(fh.read().strip())
    with open(HISTORY, "a") as fh:
        fh.write(f"{pid}\n")
    return pid


def main(argv: list) -> None:
    action = argv[1] if len(argv) == 2 else ""
    if action == "restart":
        stop()
        start()
    elif action == "stop":
        stop()
    else:
        fail("usage: python3 server.py restart|stop")


if __name__ == "__main__":
    main(sys.argv)
