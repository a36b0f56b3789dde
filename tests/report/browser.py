"""Drive Debian's chromium headless from the report tests: screenshot a page, or dump its DOM
after its scripts ran. Each call starts a fresh browser with a throw-away profile and no
network chatter of its own.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
TIMEOUT = 120  # seconds; a cold start on a loaded CI machine can be slow


def available() -> bool:
    return CHROMIUM is not None


def _run(extra: list[str], url: str) -> subprocess.CompletedProcess[bytes]:
    if CHROMIUM is None:
        raise RuntimeError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="benchsage-chromium-") as profile:
        args = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",  # tests may run as root in a container
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *extra,
            url,
        ]
        done = subprocess.run(args, capture_output=True, timeout=TIMEOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited with {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    return done


def _url(page: Path, fragment: str) -> str:
    return page.resolve().as_uri() + (f"#{fragment}" if fragment else "")


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 2000, fragment: str = "") -> Path:
    """Render `page` (a local file) and save the top width x height pixels as PNG; with a
    `fragment`, the page is opened at that anchor (#fragment), as a link to it would."""
    _run([f"--screenshot={png}", f"--window-size={width},{height}"], _url(page, fragment))
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot to {png}")
    return png


def dump_dom(page: Path, fragment: str = "") -> str:
    """The serialised DOM of `page` (opened at #fragment, if given) once it has loaded and its
    scripts have run."""
    return _run(["--dump-dom"], _url(page, fragment)).stdout.decode("utf-8")
