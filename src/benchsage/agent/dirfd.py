"""The deploy's dir, reached and changed only through directory descriptors that never follow a
link (O_NOFOLLOW relative to a dir fd, the dir_fd= forms): whatever a repository or another user
leaves in the dir, a symlink included, nothing is written, read or removed outside it.

The dir itself is the agent user's and private: created 0700, refused when it is a symlink, owned
by someone else, or writable by group or others. Stdlib only; what Python 3.8's os module offers.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Dict, List, Optional, Tuple

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a fifo left where a file was does not hang the agent; fstat then says what it is
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
PRIVATE_MODE = 0o700
SHARED_MODE = 0o1777  # a shared top of private dirs, as /tmp is: anyone makes a folder there, nobody removes another's
_NOT_A_FOLDER = (errno.ELOOP, errno.ENOTDIR)  # O_NOFOLLOW|O_DIRECTORY on a symlink (either, by kernel) or a file
_MAX_OPEN = 64  # folders kept open while a deploy writes: a bounded share of the agent's descriptors


class Refused(Exception):
    """A dir or path the deploy will not touch; the message names it and says what to do."""


def open_folder(parent: int, name: str) -> int:
    """The folder `name` in `parent`; OSError ELOOP for a symlink, ENOTDIR for anything else."""
    return os.open(name, DIR_FLAGS, dir_fd=parent)


def new_file(parent: int, prefix: str, mode: int = 0o600) -> Tuple[str, int]:
    """(name, fd) of a file made anew in `parent` (O_CREAT|O_EXCL|O_NOFOLLOW): never one that
    was there, never through a link."""
    while True:
        name = prefix + os.urandom(8).hex()
        try:
            return name, os.open(name, NEW_FLAGS, mode, dir_fd=parent)
        except FileExistsError:
            continue


def new_link(parent: int, prefix: str, target: str) -> str:
    """The name of a symlink to `target` made anew in `parent`."""
    while True:
        name = prefix + os.urandom(8).hex()
        try:
            os.symlink(target, name, dir_fd=parent)
            return name
        except FileExistsError:
            continue


def is_folder(parent: int, name: str) -> bool:
    """Whether `name` in `parent` is a real folder (a symlink to one is not)."""
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def remove_entry(parent: int, name: str) -> None:
    """Remove `name` from `parent`, whatever it is: a folder with everything in it, a file, a
    link (the link, never what it points to)."""
    try:
        fd = open_folder(parent, name)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno not in _NOT_A_FOLDER:
            raise
        os.unlink(name, dir_fd=parent)
        return
    try:
        empty(fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def empty(fd: int) -> None:
    """Remove everything in the folder `fd`."""
    for name in os.listdir(fd):
        remove_entry(fd, name)


class Folders:
    """The folders of one dir a deploy writes into, opened from its fd a name at a time and kept
    open for the files that follow; made where missing, and made in place of a link or a file
    that stands where the tree needs a folder (a link a previous commit left, a file that
    became a folder)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.open = {}  # type: Dict[Tuple[str, ...], int]

    def folder(self, parts: List[str]) -> int:
        """The fd of the folder `parts` (relative, already checked) below the root; owned here."""
        if not parts:
            return self.root
        key = tuple(parts)
        fd = self.open.get(key)
        if fd is not None:
            return fd
        if len(self.open) >= _MAX_OPEN:
            self.close()
        parent = self.folder(parts[:-1])
        fd = _enter(parent, parts[-1])
        self.open[key] = fd
        return fd

    def close(self) -> None:
        for fd in self.open.values():
            os.close(fd)
        self.open = {}


def _enter(parent: int, name: str) -> int:
    try:
        return open_folder(parent, name)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno not in _NOT_A_FOLDER:
            raise
        os.unlink(name, dir_fd=parent)  # a link or a file where the tree needs a folder
    try:
        os.mkdir(name, 0o777, dir_fd=parent)
    except FileExistsError:
        pass
    return open_folder(parent, name)


class Root:
    """A deploy's dir, open: `fd`, the fd of the folder it is in (`parent`) and its `name` there,
    and the private levels above it that are removed when left empty (a private dir's levels
    below its shared top), each as (its parent's fd, its name)."""

    def __init__(self, held: List[int], levels: List[Tuple[int, str]], prunable: int) -> None:
        self.held = held  # every fd opened on the way, the dir's last; closed together
        self.fd = held[-1]
        self.parent, self.name = levels[-1]
        self.prunable = levels[len(levels) - 1 - prunable:-1] if prunable else []

    def close(self) -> None:
        for fd in self.held:
            os.close(fd)
        self.held = []

    def prune(self) -> None:
        """After the dir itself was removed: remove the levels above it left empty, the nearest
        first, up to the shared top (not included)."""
        for parent, name in reversed(self.prunable):
            try:
                os.rmdir(name, dir_fd=parent)
            except OSError:
                return


def open_root(path: str, private_below: Optional[str] = None, create: bool = True) -> Root:
    """The deploy's dir `path` (absolute), checked private: a folder (not a symlink), owned by this
    agent's user, not writable by group or others; made 0700 when missing (`create`). With
    `private_below` (a shared top such as /tmp/benchsage-bisect, made 01777 when missing): every
    level below it down to `path` is made and checked so. The path above is the user's and is
    followed as given. Refused naming what is wrong; FileNotFoundError when absent and not
    `create`."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not path.startswith("/") or not parts or ".." in parts:
        raise Refused("%r is not a plain absolute path; give the worker a `dir` such as /srv/experiment" % (path,))
    path = "/" + "/".join(parts)
    top = (private_below or "").rstrip("/")
    if top and not path.startswith(top + "/"):
        raise Refused("%s is not below %s, where the deploy was told its private dirs are" % (path, top))
    base = os.path.dirname(top or path)
    below = [os.path.basename(top)] + path[len(top) + 1:].split("/") if top else [os.path.basename(path)]
    if create:
        os.makedirs(base, exist_ok=True)
    held = [os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    levels = []  # type: List[Tuple[int, str]]
    try:
        shown = base.rstrip("/")
        for k, name in enumerate(below):
            shown = shown + "/" + name
            shared = bool(top) and k == 0
            fd = _level(held[-1], name, shown, create, SHARED_MODE if shared else PRIVATE_MODE, private=not shared)
            levels.append((held[-1], name))
            held.append(fd)
    except BaseException:
        for fd in held:
            os.close(fd)
        raise
    return Root(held, levels, len(below) - 2 if top else 0)


def _level(parent: int, name: str, shown: str, create: bool, mode: int, private: bool) -> int:
    made = False
    try:
        fd = open_folder(parent, name)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(name, mode, dir_fd=parent)
            made = True
        except FileExistsError:
            pass  # made by someone else meanwhile: checked below as any other
        except PermissionError:
            raise Refused("cannot create %s: permission denied; give the worker a `dir` its user may create" % (shown,)) from None
        fd = _opened(parent, name, shown)
    except OSError as exc:
        if exc.errno not in _NOT_A_FOLDER:
            raise
        fd = _opened(parent, name, shown)
    try:
        st = os.fstat(fd)
        if private:
            check_private(st, shown)
        if made and stat.S_IMODE(st.st_mode) != mode:
            os.fchmod(fd, mode)  # the umask narrowed it: the shared top needs every bit
    except BaseException:
        os.close(fd)
        raise
    return fd


def _opened(parent: int, name: str, shown: str) -> int:
    try:
        return open_folder(parent, name)
    except OSError as exc:
        if exc.errno not in _NOT_A_FOLDER:
            raise
        try:
            link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
        except OSError:
            link = False
    if link:
        raise Refused("%s is a symlink: a deploy never follows one; remove it, or give the worker the folder it points to as `dir`"
                      % (shown,))
    raise Refused("%s is not a folder; remove it, or give the worker another `dir`" % (shown,))


def check_private(st: os.stat_result, shown: str) -> None:
    """Refused unless the folder `st` is this agent's user's and not writable by group or others."""
    uid = os.geteuid()
    if st.st_uid != uid:
        raise Refused("%s is owned by uid %d, not by this agent's user (uid %d): its owner could change what the deploy holds; "
                      "remove it, or give the worker another `dir`" % (shown, st.st_uid, uid))
    if st.st_mode & 0o022:
        raise Refused("%s is writable by group or others (mode %o): they could change what the deploy holds; `chmod go-w %s`, "
                      "or give the worker another `dir`" % (shown, stat.S_IMODE(st.st_mode), shown))
