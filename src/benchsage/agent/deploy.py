"""The agent's side of deploy: what its `dir` holds, as git would hash it; files written atomically.

Blob and tree ids are git's (sha1 of b"blob SIZE\\0" + content; tree entries "MODE NAME\\0" + the
20-byte id, sorted as git sorts them), so a worker's copy verifies against a commit's tree id.
The marker file names the experiment whose deploy the dir holds; it is not part of the tree.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the typing module would add ~0.7 MiB to the agent
    from typing import Any, Dict, Iterable, List, Optional, Tuple

MARKER = ".benchsage-deploy"
TEMP_PREFIX = ".benchsage-tmp-"  # a file being written; never part of the tree
FILE, EXECUTABLE, SYMLINK, TREE = "100644", "100755", "120000", "40000"
_READ = 1 << 20


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_blob_id(path: str) -> Tuple[str, int]:
    """(blob id, size) of a regular file, read in bounded pieces."""
    size = os.path.getsize(path)
    h = hashlib.sha1(b"blob %d\0" % size)
    with open(path, "rb") as fh:
        while True:
            piece = fh.read(_READ)
            if not piece:
                break
            h.update(piece)
    return h.hexdigest(), size


def entry_of(path: str) -> Optional[Tuple[str, str, int]]:
    """(mode, blob id, size) of what is at `path` as git stores it; None for what git does not
    store (a fifo, a socket, a device)."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        target = os.fsencode(os.readlink(path))
        return SYMLINK, blob_id(target), len(target)
    if stat.S_ISREG(st.st_mode):
        blob, size = file_blob_id(path)
        return (EXECUTABLE if st.st_mode & stat.S_IXUSR else FILE), blob, size
    return None


def scan(root: str, skip: Iterable[str] = ()) -> Dict[str, Tuple[str, str, int]]:
    """{relative path: (mode, blob id, size)} of every file under `root`, '/'-separated; the
    marker, temporary files and the top-level names in `skip` left out."""
    skipped = set(skip) | {MARKER}
    out = {}  # type: Dict[str, Tuple[str, str, int]]
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        if not prefix:
            dirs[:] = [d for d in dirs if d not in skipped]
        for name in list(dirs):
            if os.path.islink(os.path.join(folder, name)):  # a symlink to a folder is a symlink
                files.append(name)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in files:
            if (not prefix and name in skipped) or name.startswith(TEMP_PREFIX):
                continue
            entry = entry_of(os.path.join(folder, name))
            if entry is not None:
                out[prefix + name] = entry
    return out


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


def _safe(root: str, path: str) -> str:
    """`path` (relative, '/'-separated) inside `root`; ValueError for anything that leaves it."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0] == MARKER:
        raise ValueError("refusing to write %r: not a plain relative path" % (path,))
    return os.path.join(root, *parts)


def read_marker(root: str) -> Optional[Dict[str, Any]]:
    try:
        with open(os.path.join(root, MARKER), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def write_marker(root: str, experiment: str, tree: Optional[str]) -> None:
    temp = os.path.join(root, TEMP_PREFIX + MARKER)
    with open(temp, "w", encoding="utf-8") as fh:
        json.dump({"experiment": experiment, "tree": tree}, fh)
    os.replace(temp, os.path.join(root, MARKER))


class Deployer:
    """The agent's state of one deploy: the file being written, piece by piece."""

    def __init__(self) -> None:
        self.temp = None  # type: Optional[str]
        self.fh = None  # type: Any

    def handle(self, request: Dict[str, Any]) -> Dict[str, Any]:
        root = request["dir"]
        step = request.get("step")
        if step == "scan":
            return self.begin(root, request["experiment"], request["manifest"])
        if step == "put":
            for piece in request["pieces"]:
                self.put(root, piece)
            return {"ok": True}
        if step == "finish":
            return self.finish(root, request["experiment"], set(request["paths"]))
        if step == "remove":
            return remove(root, request["experiment"], request.get("prune_below"))
        return {"error": "unknown deploy step %r" % (step,)}

    def begin(self, root: str, experiment: str, manifest: List[List[str]]) -> Dict[str, Any]:
        """Which paths of the manifest [path, mode, blob] the dir lacks or holds otherwise;
        refuses a dir holding anything but a deploy of `experiment`."""
        if os.path.isdir(root) and os.listdir(root):
            marker = read_marker(root)
            if marker is None or marker.get("experiment") != experiment:
                owner = "" if marker is None else " (a deploy of experiment %r)" % (marker.get("experiment"),)
                return {"refused": "%s holds something else than a deploy of this experiment%s" % (root, owner)}
        os.makedirs(root, exist_ok=True)
        write_marker(root, experiment, None)  # ours from now on, even if this deploy is cut short
        held = scan(root)
        need = [path for path, mode, blob in manifest if held.get(path, (None, None))[:2] != (mode, blob)]
        return {"need": need, "held": len(held)}

    def put(self, root: str, request: Dict[str, Any]) -> None:
        """One piece of a file; the first (offset 0) opens a temporary file beside its place,
        the last (end) renames it there."""
        path = _safe(root, request["path"])
        if request.get("offset", 0) == 0:
            self.discard()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.temp = os.path.join(os.path.dirname(path), TEMP_PREFIX + os.path.basename(path))
            self.fh = open(self.temp, "wb")
        if self.fh is None:
            raise ValueError("deploy: a piece of %r came without its start" % (request["path"],))
        self.fh.write(base64.b64decode(request["data"]))
        if not request.get("end"):
            return
        self.fh.close()
        temp, self.fh, self.temp = self.temp, None, None
        assert temp is not None
        if os.path.isdir(path) and not os.path.islink(path):
            _remove_tree(path)
        if request["mode"] == SYMLINK:
            with open(temp, "rb") as fh:
                target = fh.read()
            os.unlink(temp)
            link = temp + ".link"
            os.symlink(os.fsdecode(target), link)
            temp = link
        else:
            os.chmod(temp, 0o755 if request["mode"] == EXECUTABLE else 0o644)
        os.replace(temp, path)

    def discard(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None
        if self.temp is not None and os.path.exists(self.temp):
            os.unlink(self.temp)
        self.temp = None

    def finish(self, root: str, experiment: str, paths: set) -> Dict[str, Any]:
        """Remove what the deploy does not hold (files of a previous deploy, leftovers), then
        hash the dir as git would: the tree id the controller verifies."""
        self.discard()
        removed = 0
        for folder, dirs, files in os.walk(root, topdown=False):
            rel = os.path.relpath(folder, root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
                if (prefix or name != MARKER) and prefix + name not in paths:
                    os.unlink(os.path.join(folder, name))
                    removed += 1
            if prefix and not os.listdir(folder):
                os.rmdir(folder)
        held = scan(root)
        tree = tree_id((path, mode, blob) for path, (mode, blob, _) in held.items())
        write_marker(root, experiment, tree)
        return {"tree": tree, "files": len(held), "removed": removed}


def remove(root: str, experiment: str, prune_below: Optional[str] = None) -> Dict[str, Any]:
    """Remove a deploy of `experiment` (a dir holding anything else is left alone), then the
    folders above it left empty, up to `prune_below` (not included)."""
    if not os.path.isdir(root):
        return {"removed": False, "why": "absent"}
    marker = read_marker(root)
    if marker is None or marker.get("experiment") != experiment:
        return {"removed": False, "why": "%s holds something else than a deploy of this experiment" % (root,)}
    _remove_tree(root)
    if prune_below:
        top = os.path.abspath(prune_below)
        folder = os.path.dirname(os.path.abspath(root))
        while folder.startswith(top + os.sep) and not os.listdir(folder):
            os.rmdir(folder)
            folder = os.path.dirname(folder)
    return {"removed": True}


def _remove_tree(path: str) -> None:
    for folder, dirs, files in os.walk(path, topdown=False):
        for name in files:
            os.unlink(os.path.join(folder, name))
        for name in dirs:
            full = os.path.join(folder, name)
            os.unlink(full) if os.path.islink(full) else os.rmdir(full)
    os.rmdir(path)
