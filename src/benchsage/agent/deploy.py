"""The agent's side of deploy: what its `dir` holds, as git would hash it; files written atomically.

Blob and tree ids are git's (sha1 of b"blob SIZE\\0" + content; tree entries "MODE NAME\\0" + the
20-byte id, sorted as git sorts them), so a worker's copy verifies against a commit's tree id.
The marker file names the experiment whose deploy the dir holds; it is not part of the tree.
The repository is not trusted: every path is checked before anything is written, and the dir is
only ever walked through descriptors that do not follow links (dirfd.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat

from benchsage.agent.dirfd import (READ_FLAGS, Folders, Refused, empty, is_folder, new_file, new_link, open_folder, open_root,
                                   remove_entry)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Dict, Iterable, List, Optional, Set, Tuple, Union

    Held = Tuple[str, str, int, Optional[int]]  # (mode, blob id, size, permission bits; None for a symlink)

MARKER = ".benchsage-deploy"
TEMP_PREFIX = ".benchsage-tmp-"  # a file being written; never part of the tree, never a name a tree may hold
FILE, EXECUTABLE, SYMLINK, TREE = "100644", "100755", "120000", "40000"
_READ = 1 << 20
_MARKER_MAX = 1 << 16  # a marker is a line of JSON; more is not one
_LINK_MAX = 4096  # PATH_MAX: no symlink's target is longer


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def unsafe_path(path: Any) -> Optional[str]:
    """Why `path` (a tree's, '/'-separated) cannot be deployed, naming it; None when it is a
    plain relative path inside the dir."""
    if not isinstance(path, str) or not path:
        return "%r is not a path" % (path,)
    parts = path.split("/")
    for what, bad in (("is an absolute path", path.startswith("/")), ("holds a NUL byte", "\0" in path),
                      ("has a '..' part: it would leave the dir", ".." in parts), ("has a '.' part", "." in parts),
                      ("has an empty part", "" in parts),
                      ("uses a name reserved for the deploy's temporary files (%s*)" % TEMP_PREFIX,
                       any(p.startswith(TEMP_PREFIX) for p in parts)),
                      ("is the deploy's own marker file", parts[0] == MARKER)):
        if bad:
            return "%r %s" % (path, what)
    return None


def _parts(path: str) -> List[str]:
    why = unsafe_path(path)
    if why is not None:
        raise Refused(why + "; nothing of the deploy was written")
    return path.split("/")


def applied_perm(mode: str, perm: Optional[int]) -> int:
    """The permission bits a file of git `mode` gets from the controller's `perm` (the source
    file's; None: git's own 0644 or 0755): never set-id bits, always readable by its owner (the
    agent hashes it), executable by its owner exactly when git says so."""
    if perm is None:
        return 0o755 if mode == EXECUTABLE else 0o644
    return (int(perm) & 0o677) | 0o400 | (0o100 if mode == EXECUTABLE else 0)


def _fd_blob_id(fd: int, size: int) -> Tuple[str, int]:
    h = hashlib.sha1(b"blob %d\0" % size)
    while True:
        piece = os.read(fd, _READ)
        if not piece:
            break
        h.update(piece)
    return h.hexdigest(), size


def entry_of(path: str) -> Optional[Held]:
    """(mode, blob id, size, permission bits) of what is at `path` as git stores it; None for
    what git does not store (a fifo, a socket, a device)."""
    folder, name = os.path.split(os.path.abspath(path))
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _entry_at(fd, name)
    finally:
        os.close(fd)


def _entry_at(folder: int, name: str, kind: Optional[str] = None) -> Optional[Held]:
    """The entry `name` in `folder`; `kind` ("link", "file"), when the listing said it, spares a stat."""
    if kind is None:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
        kind = "link" if stat.S_ISLNK(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else None
    if kind == "link":
        target = os.fsencode(os.readlink(name, dir_fd=folder))
        return SYMLINK, blob_id(target), len(target), None
    if kind != "file":
        return None
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=folder)
    except OSError:
        return None  # swapped for a link meanwhile: not a file of the tree
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        blob, size = _fd_blob_id(fd, st.st_size)
    finally:
        os.close(fd)
    return (EXECUTABLE if st.st_mode & stat.S_IXUSR else FILE), blob, size, stat.S_IMODE(st.st_mode)


def scan(root: str, skip: Iterable[str] = ()) -> Dict[str, Held]:
    """{relative path: (mode, blob id, size, permission bits)} of every file under `root`,
    '/'-separated; the marker, temporary files and the top-level names in `skip` left out. A
    symlink is an entry, never followed (a symlink to a folder too)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return scan_fd(fd, skip)
    finally:
        os.close(fd)


def scan_fd(fd: int, skip: Iterable[str] = ()) -> Dict[str, Held]:
    out = {}  # type: Dict[str, Held]
    _scan(fd, "", set(skip) | {MARKER}, out)
    return out


def _scan(fd: int, prefix: str, skipped: Set[str], out: Dict[str, Held]) -> None:
    with os.scandir(fd) as listing:
        entries = list(listing)
    for entry in entries:
        name = entry.name
        if not prefix and name in skipped:
            continue
        if entry.is_dir(follow_symlinks=False):
            try:
                sub = open_folder(fd, name)
            except OSError:  # swapped for a link or a file meanwhile, or gone: not a folder of the tree
                continue
            try:
                _scan(sub, prefix + name + "/", skipped, out)
            finally:
                os.close(sub)
            continue
        if name.startswith(TEMP_PREFIX):
            continue
        kind = "link" if entry.is_symlink() else "file" if entry.is_file(follow_symlinks=False) else None
        try:
            found = _entry_at(fd, name, kind)
        except FileNotFoundError:
            continue
        if found is not None:
            out[prefix + name] = found


def tree_id(entries: Iterable[Tuple[str, str, str]]) -> str:
    """git's tree id of files given as (path, mode, blob id): subtrees mode 40000, entries
    sorted by name with a subtree's name compared as if it ended with '/'."""
    root = {}  # type: Dict[str, Any]
    for path, mode, blob in entries:
        parts = path.split("/")
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = (mode, blob)
    return _tree(root)


def _tree(node: Dict[str, Any]) -> str:
    items = []
    for name, value in node.items():
        if isinstance(value, dict):
            items.append((name.encode() + b"/", TREE, name, _tree(value)))
        else:
            items.append((name.encode(), value[0], name, value[1]))
    items.sort(key=lambda item: item[0])
    body = b"".join(b"%s %s\0" % (mode.encode(), name.encode()) + bytes.fromhex(sha) for _, mode, name, sha in items)
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


def read_marker(root: Union[int, str]) -> Optional[Dict[str, Any]]:
    """The marker of the dir (its fd, or its path), never read through a link; None without one."""
    folder = root if isinstance(root, int) else os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = os.open(MARKER, READ_FLAGS, dir_fd=folder)
    except OSError:
        return None
    finally:
        if not isinstance(root, int):
            os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        marker = json.loads(os.read(fd, _MARKER_MAX).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return marker if isinstance(marker, dict) else None


def write_marker(root: Union[int, str], experiment: str, tree: Optional[str]) -> None:
    """Mark the dir (its fd, or its path) as holding a deploy of `experiment` (`tree`: verified)."""
    folder = root if isinstance(root, int) else os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        temp, fd = new_file(folder, TEMP_PREFIX, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"experiment": experiment, "tree": tree}, fh)
        if is_folder(folder, MARKER):
            remove_entry(folder, MARKER)
        os.replace(temp, MARKER, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        if not isinstance(root, int):
            os.close(folder)


class Deployer:
    """The agent's state of one deploy: the file being written, piece by piece."""

    def __init__(self) -> None:
        self.path = None  # type: Optional[str]  # the manifest path being written
        self.parent = -1  # its folder's fd, owned here
        self.temp = None  # type: Optional[str]  # the temporary file's name in it
        self.fd = -1
        self.link = None  # type: Optional[bytearray]  # a symlink's target, as it arrives
        self.mode = FILE
        self.perm = None  # type: Optional[int]

    def handle(self, request: Dict[str, Any]) -> Dict[str, Any]:
        step = request.get("step")
        try:
            if step == "scan":
                return self.begin(request["dir"], request["experiment"], request["manifest"], request.get("private_below"))
            if step == "put":
                root = open_root(request["dir"], request.get("private_below"), create=False)
                folders = Folders(root.fd)
                try:
                    for piece in request["pieces"]:
                        self.put(folders, piece)
                finally:
                    folders.close()
                    root.close()
                return {"ok": True}
            if step == "finish":
                return self.finish(request["dir"], request["experiment"], set(request["paths"]), request.get("private_below"))
            if step == "remove":
                return remove(request["dir"], request["experiment"], request.get("private_below"))
        except Refused as exc:
            self.discard()
            return {"refused": str(exc)}
        return {"error": "unknown deploy step %r" % (step,)}

    def begin(self, path: str, experiment: str, manifest: List[List[Any]], private_below: Optional[str] = None) -> Dict[str, Any]:
        """Which paths of the manifest [path, mode, blob, perm] the dir lacks or holds otherwise;
        refuses a manifest path that is not plainly inside the dir, and a dir that is not
        private or holds anything but a deploy of `experiment`, before writing anything."""
        for item in manifest:
            _parts(item[0])
        root = open_root(path, private_below)
        try:
            if os.listdir(root.fd):
                marker = read_marker(root.fd)
                if marker is None or marker.get("experiment") != experiment:
                    owner = "" if marker is None else " (a deploy of experiment %r)" % (marker.get("experiment"),)
                    raise Refused("%s holds something else than a deploy of this experiment%s; give the worker another `dir`, "
                                  "or empty this one" % (path, owner))
            write_marker(root.fd, experiment, None)  # ours from now on, even if this deploy is cut short
            held = scan_fd(root.fd)
        finally:
            root.close()
        need = []
        for item in manifest:
            p, mode, blob = item[0], item[1], item[2]
            perm = item[3] if len(item) > 3 else None
            have = held.get(p)
            if have is None or have[:2] != (mode, blob) or (mode != SYMLINK and perm is not None and have[3] != applied_perm(mode, perm)):
                need.append(p)
        return {"need": need, "held": len(held)}

    def put(self, folders: Folders, request: Dict[str, Any]) -> None:
        """One piece of a file; the first (offset 0) opens a temporary file (made anew, in the
        folder of its place, that folder reached without following a link), the last (end)
        gives it its mode and renames it there."""
        path = request["path"]
        parts = _parts(path)
        if request.get("offset", 0) == 0:
            self.discard()
            self.parent = os.dup(folders.folder(parts[:-1]))
            self.path, self.mode, self.perm = path, request["mode"], request.get("perm")
            if self.mode == SYMLINK:
                self.link = bytearray()
            else:
                self.temp, self.fd = new_file(self.parent, TEMP_PREFIX)
        elif self.path != path:
            raise Refused("a piece of %r came without its start; deploy again" % (path,))
        data = base64.b64decode(request["data"])
        if self.link is not None:
            self.link += data
            if len(self.link) > _LINK_MAX:
                raise Refused("%r: a symlink's target longer than %d bytes" % (path, _LINK_MAX))
        else:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
        if request.get("end"):
            self._place(parts[-1])

    def _place(self, name: str) -> None:
        if self.link is not None:
            self.temp = new_link(self.parent, TEMP_PREFIX, os.fsdecode(bytes(self.link)))
        else:
            os.fchmod(self.fd, applied_perm(self.mode, self.perm))
            os.close(self.fd)
            self.fd = -1
        if is_folder(self.parent, name):  # a folder a previous commit had where this one has a file
            remove_entry(self.parent, name)
        os.replace(self.temp, name, src_dir_fd=self.parent, dst_dir_fd=self.parent)
        self.temp = None
        self.discard()

    def discard(self) -> None:
        """Drop the file being written (its temporary file too)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.temp is not None and self.parent >= 0:
            try:
                os.unlink(self.temp, dir_fd=self.parent)
            except OSError:
                pass
        if self.parent >= 0:
            os.close(self.parent)
        self.parent, self.temp, self.link, self.path = -1, None, None, None

    def finish(self, path: str, experiment: str, paths: Set[str], private_below: Optional[str] = None) -> Dict[str, Any]:
        """Remove what the deploy does not hold (files of a previous deploy, leftovers), then
        hash the dir as git would: the tree id the controller verifies."""
        self.discard()
        root = open_root(path, private_below, create=False)
        try:
            removed = _prune(root.fd, "", paths)
            held = scan_fd(root.fd)
            tree = tree_id((p, mode, blob) for p, (mode, blob, _, _) in held.items())
            write_marker(root.fd, experiment, tree)
        finally:
            root.close()
        return {"tree": tree, "files": len(held), "removed": removed}


def _prune(fd: int, prefix: str, paths: Set[str]) -> int:
    """Remove from the folder `fd` every file, link or other entry whose path is not in `paths`,
    and the folders left empty; how many entries went."""
    removed = 0
    with os.scandir(fd) as listing:
        entries = list(listing)
    for entry in entries:
        name = entry.name
        if not prefix and name == MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            try:
                sub = open_folder(fd, name)
            except OSError:
                sub = None
            if sub is not None:
                try:
                    removed += _prune(sub, prefix + name + "/", paths)
                    left = os.listdir(sub)
                finally:
                    os.close(sub)
                if not left:
                    os.rmdir(name, dir_fd=fd)
                continue
        if prefix + name not in paths:
            remove_entry(fd, name)
            removed += 1
    return removed


def remove(path: str, experiment: str, private_below: Optional[str] = None) -> Dict[str, Any]:
    """Remove a deploy of `experiment` (a dir holding anything else, or not private, is left
    alone, saying why), never following a link in it or in its place; then, with
    `private_below`, the levels above it left empty up to that shared top (not included)."""
    try:
        root = open_root(path, private_below, create=False)
    except FileNotFoundError:
        return {"removed": False, "why": "absent"}
    except Refused as exc:
        return {"removed": False, "why": str(exc)}
    try:
        marker = read_marker(root.fd)
        if marker is None or marker.get("experiment") != experiment:
            return {"removed": False, "why": "%s holds something else than a deploy of this experiment" % (path,)}
        empty(root.fd)
        os.rmdir(root.name, dir_fd=root.parent)
        root.prune()
    finally:
        root.close()
    return {"removed": True}
