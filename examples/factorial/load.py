"""The factorial example's "load" factor: a background CPU hog (stress-ng, one worker) on or off.

    python3 load.py on     # start it unless it is running (the factor's setup at level "on")
    python3 load.py off    # stop it (the setup at level "off", the reset, and the cleanup)

The hog is found by its pid file (run/load.pid) and stopped by that pid's process group; a
recycled pid is left alone. It stops by itself after an hour, should the experiment be killed
before anyone runs `python3 load.py off`. Each hog's pid is appended to run/load.log.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run")
PIDFILE = os.path.join(RUN, "load.pid")
HISTORY = os.path.join(RUN, "load.log")
SAFETY_TIMEOUT = "3600s"  # the hog's own time limit


def fail(message: str) -> None:
    print(f"load.py: {message}", file=sys.stderr)
    sys.exit(2)


def is_hog(pid: int) -> bool:
    """Whether pid is a living stress-ng (not a zombie, not a recycled pid)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv0 = fh.read().split(b"\0")[0]
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return b"stress-ng" in argv0 and state not in (b"Z", b"X")


def running() -> int:
    try:
        with open(PIDFILE) as fh:
            pid = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0
    return pid if pid and is_hog(pid) else 0


def stop() -> None:
    pid = running()
    if pid:
        os.killpg(pid, signal.SIGTERM)  # stress-ng and its worker, which share its group
        deadline = time.monotonic() + 5.0
        while is_hog(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if is_hog(pid):
            os.killpg(pid, signal.SIGKILL)
    if os.path.exists(PIDFILE):
        os.unlink(PIDFILE)


def start() -> None:
    if running():
        return
    hog = shutil.which("stress-ng")
    if hog is None:
        fail("stress-ng is not installed (Debian: apt-get install stress-ng)")
    os.makedirs(RUN, exist_ok=True)
    proc = subprocess.Popen([hog, "--cpu", "1", "--timeout", SAFETY_TIMEOUT, "--quiet"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    with open(PIDFILE, "w") as fh:
        fh.write(f"{proc.pid}\n")
    with open(HISTORY, "a") as fh:
        fh.write(f"{proc.pid}\n")


def main(argv: list) -> None:
    action = argv[1] if len(argv) == 2 else ""
    if action == "on":
        start()
    elif action == "off":
        stop()
    else:
        fail("usage: python3 load.py on|off")


if __name__ == "__main__":
    main(sys.argv)
