"""The permissions of what benchsage makes in an experiment directory: never writable by group or
other, whatever the umask (0o755 folders, 0o644 files at most), and private to the user (0o700,
0o600) when the spec holds a value whose name looks like a secret (store/secrets.py): the
journal keeps the spec as written. A folder or file that already exists keeps its mode.
"""

from __future__ import annotations

import os

FOLDER_MODE = 0o755
FILE_MODE = 0o644
PRIVATE_FOLDER_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def folder_mode(private: bool) -> int:
    return PRIVATE_FOLDER_MODE if private else FOLDER_MODE


def file_mode(private: bool) -> int:
    return PRIVATE_FILE_MODE if private else FILE_MODE


def make_folder(path: str | os.PathLike[str], private: bool = False) -> None:
    """Make `path` and the folders above it that are missing, each with at most FOLDER_MODE
    (`path` itself with at most PRIVATE_FOLDER_MODE when `private`): mkdir's mode, which the
    umask can only narrow. os.makedirs would give the folders above 0o777 less the umask."""
    path = os.path.abspath(os.fspath(path))
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for i, folder in enumerate(reversed(missing)):
        try:
            os.mkdir(folder, folder_mode(private) if i == len(missing) - 1 else FOLDER_MODE)
        except FileExistsError:
            if not os.path.isdir(folder):  # a file, or a link to nothing: mkdir's own error says so
                raise


def make_file(path: str | os.PathLike[str], private: bool = False) -> None:
    """Create `path` empty, if it is not there, with at most FILE_MODE (PRIVATE_FILE_MODE when
    `private`), so that whoever opens it next (SQLite, a log opened for appending) writes into
    a file of that mode. A link at `path` is refused (OSError), never followed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, file_mode(private))
    os.close(fd)
