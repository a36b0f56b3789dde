"""Deploy: the experiment shipped to every worker's `dir` over its own transport, and verified.

The controller lists what must be there (path, mode, git blob id): a commit's tree (`git
ls-tree`), or the spec's folder hashed as git would. Each agent answers which paths its dir
lacks or holds otherwise; only those travel, in pieces of at most CHUNK bytes, so memory
stays bounded whatever the experiment's size. The agent then removes what the deploy does not
hold and returns its dir's git tree id, which must equal the commit's (or the folder's): the
same software on every worker, by construction. The repository is read with the `git` CLI.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import stat
import subprocess
import time
from dataclasses import dataclass, field
from typing import IO, Any, Iterator, Sequence

from benchsage.agent.deploy import EXECUTABLE, SYMLINK, entry_of, scan, tree_id, unsafe_path
from benchsage.errors import SpecError, WorkerError, WorkerLost, WorkerSetupError
from benchsage.execute import replies
from benchsage.execute.agentworker import AgentWorker
from benchsage.spec import Spec
from benchsage.spec.deploy import GIT, INCLUDE
from benchsage.store.journal import JOURNAL_NAME
from benchsage.threads import Threads

CHUNK = 1 << 20  # content bytes per request (pieces of files): a JSON line of ~1.4 MB, a bounded buffer on both sides
REPLY_TIMEOUT = 120.0  # seconds for an agent to scan, write a piece, or hash its dir


@dataclass(frozen=True)
class Entry:
    path: str  # relative, '/'-separated
    mode: str  # 100644, 100755 or 120000
    blob: str  # git blob id
    size: int
    local: str | None = None  # read from this file (the folder, a dirty file); None: from git
    perm: int | None = None  # the permission bits the host's copy gets (the agent keeps its owner's read); None: git's


def private_top(top: str | None, directory: str) -> str | None:
    """`top` (a shared folder such as /tmp/benchsage-bisect, below which every level of a dir
    must be private) when `directory` lies below it, else None: what the agent's deploy steps
    take as `private_below`."""
    top = (top or "").rstrip("/")
    return top if top and directory.startswith(top + "/") else None


@dataclass(frozen=True)
class DeploySource:
    """What every worker's dir must hold, and where it comes from."""

    kind: str  # "git" or "folder"
    root: str  # the repository's top (git) or the spec's folder: what `dir` stands for
    tree: str  # the git tree id every worker must verify
    entries: tuple[Entry, ...]
    rev: str | None = None
    commit: str | None = None
    dirty: tuple[str, ...] = ()  # uncommitted files shipped (dirty = "include")
    refusal: str | None = None  # why `run` would refuse it (uncommitted changes), for `plan`
    private_below: str | None = None  # a shared top (/tmp/benchsage-bisect) below which every level of a dir is private

    def private_for(self, directory: str) -> str | None:
        """The shared top the agent checks `directory`'s levels below, if it is under it."""
        return private_top(self.private_below, directory)

    @property
    def bytes(self) -> int:
        return sum(e.size for e in self.entries)

    def describe(self) -> dict[str, Any]:
        """The source as the plan shows it and the journal records it."""
        return {"source": self.kind, "tree": self.tree, "rev": self.rev, "commit": self.commit, "dirty": list(self.dirty),
                "files": len(self.entries), "bytes": self.bytes}


@dataclass
class Shipped:
    """One host's deploy: what was sent and the tree id its dir holds afterwards."""

    worker: str
    dir: str
    tree: str = ""
    files: int = 0  # files the dir holds
    files_sent: int = 0
    bytes_sent: int = 0  # content bytes (before base64)
    seconds: float = 0.0
    attempts: int = 0
    needed: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"worker": self.worker, "dir": self.dir, "tree": self.tree, "files": self.files, "files_sent": self.files_sent,
                "bytes_sent": self.bytes_sent, "seconds": self.seconds, "attempts": self.attempts}


# -- reading the source ----------------------------------------------------------------------


def read_source(spec: Spec, commit: str | None = None, dirty: Sequence[str] = (), *, planning: bool = False) -> DeploySource | None:
    """The spec's [deploy] source, read now (`commit`, `dirty`: resume's, instead of `rev` and
    the files uncommitted now); None without [deploy]. SpecError (exit 2), naming the key, for
    a source that cannot be shipped; `planning`: uncommitted changes `run` would refuse are the
    source's `refusal` instead (the plan says so)."""
    deploy = spec.deploy
    if deploy is None:
        return None
    if deploy.source != GIT:
        skip = {".git", *_experiment_folders(spec.folder)}
        held = scan(spec.folder, skip)
        entries = tuple(Entry(p, m, b, s, os.path.join(spec.folder, *p.split("/")), perm) for p, (m, b, s, perm) in sorted(held.items()))
        return DeploySource("folder", spec.folder, tree_id((e.path, e.mode, e.blob) for e in entries), entries)
    where = f"{spec.path}: [deploy]"
    top = _git(spec.folder, ["rev-parse", "--show-toplevel"], f"{where}: key 'source' = \"git\": {spec.folder} is not in a git "
                                                              "repository (commit the experiment, or use source = \"folder\")")
    rev = commit or deploy.rev
    resolved = _git(top, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                    f"{where}: key 'rev': {rev!r} is not a commit of {top} (try HEAD, a branch, a tag or a commit id)")
    entries = _checkout_perms(top, _ls_tree(top, resolved, where))
    refusal = None
    if commit is None and resolved == _git(top, ["rev-parse", "HEAD"], ""):
        dirty = _dirty(top)
        if dirty and deploy.dirty != INCLUDE:
            shown = ", ".join(dirty[:10]) + (f" and {len(dirty) - 10} more" if len(dirty) > 10 else "")
            refusal = (f"{where}: key 'dirty' = \"refuse\": uncommitted changes to {shown}; commit them, or set "
                       "dirty = \"include\" to ship them")
            if not planning:
                raise SpecError(refusal)
            dirty = ()
    dirty = tuple(dirty)
    entries = _with_working_tree(top, entries, dirty)
    tree = tree_id((e.path, e.mode, e.blob) for e in entries) if dirty else _git(top, ["rev-parse", f"{resolved}^{{tree}}"], where)
    return DeploySource(GIT, top, tree, entries, rev=deploy.rev, commit=resolved, dirty=dirty, refusal=refusal)


def _git(cwd: str, args: list[str], error: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise SpecError(f"{error}: the `git` command is not installed") from None
    if done.returncode != 0:
        raise SpecError(error)
    return done.stdout.strip()


def _ls_tree(top: str, commit: str, where: str) -> tuple[Entry, ...]:
    done = subprocess.run(["git", "ls-tree", "-r", "-z", "-l", "--full-tree", commit], cwd=top, capture_output=True, timeout=600)
    if done.returncode != 0:
        raise SpecError(f"{where}: cannot list commit {commit[:12]}: {done.stderr.decode(errors='replace').strip()}")
    out = []
    for item in done.stdout.split(b"\0"):
        if not item:
            continue
        info, raw = item.split(b"\t", 1)
        mode, kind, blob, size = info.split()
        path = raw.decode(errors="replace")
        if kind != b"blob":
            raise SpecError(f"{where}: {path} is a {kind.decode()} (a submodule): it cannot be deployed; use source = \"folder\"")
        why = unsafe_path(path) or (None if raw == path.encode() else f"{path!r} is not a UTF-8 name")
        if why is not None:  # the repository is not trusted: the agent would refuse it too, on every host
            raise SpecError(f"{where}: commit {commit[:12]} cannot be deployed: {why}; rename it in a new commit")
        out.append(Entry(path, mode.decode(), blob.decode(), int(size)))
    folders = {e.path.rsplit("/", k)[0] for e in out for k in range(1, e.path.count("/") + 1)}
    both = sorted(folders & {e.path for e in out})
    if both:  # a crafted tree: no checkout could hold it
        raise SpecError(f"{where}: commit {commit[:12]} cannot be deployed: it holds {both[0]!r} both as a file and as a folder")
    return tuple(out)


def _checkout_perms(top: str, entries: tuple[Entry, ...]) -> tuple[Entry, ...]:
    """The commit's files with the permission bits their copy gets: git's 0644 or 0755, narrowed
    to the group and other bits the checkout's file of the same path has (a 0600 secret stays
    0600 on every host; git itself records no more than the executable bit)."""
    out = []
    for e in entries:
        perm = None
        if e.mode != SYMLINK:
            try:
                st = os.lstat(os.path.join(top, *e.path.split("/")))
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode):
                perm = (0o755 if e.mode == EXECUTABLE else 0o644) & (0o700 | stat.S_IMODE(st.st_mode))
        out.append(dataclasses.replace(e, perm=perm))
    return tuple(out)


def _dirty(top: str) -> tuple[str, ...]:
    """Tracked files whose working copy or index differs from HEAD."""
    done = subprocess.run(["git", "status", "--porcelain=v1", "-z", "--untracked-files=no"], cwd=top, capture_output=True, timeout=600)
    items = done.stdout.decode().split("\0")
    paths, i = [], 0
    while i < len(items):
        item = items[i]
        i += 1
        if len(item) < 4:
            continue
        paths.append(item[3:])
        if item[0] in "RC":  # a rename or copy: its origin follows
            paths.append(items[i])
            i += 1
    return tuple(sorted(set(paths)))


def _with_working_tree(top: str, entries: tuple[Entry, ...], dirty: Sequence[str]) -> tuple[Entry, ...]:
    """The commit's entries with the working copy of each dirty file (a deleted one left out)."""
    changed = set(dirty)
    out = [e for e in entries if e.path not in changed]
    for path in dirty:
        local = os.path.join(top, *path.split("/"))
        found = entry_of(local) if os.path.lexists(local) else None
        if found is not None:
            out.append(Entry(path, found[0], found[1], found[2], local, found[3]))
    return tuple(sorted(out, key=lambda e: e.path))


def _experiment_folders(folder: str) -> list[str]:
    """Top-level folders of the spec's folder holding experiment journals (results/): not part of
    the experiment, never shipped."""
    out = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            if os.path.exists(os.path.join(path, JOURNAL_NAME)) or any(
                    os.path.exists(os.path.join(path, d.name, JOURNAL_NAME)) for d in os.scandir(path) if d.is_dir()):
                out.append(name)
    return out


# -- shipping ------------------------------------------------------------------------------


def deploy_host(worker: AgentWorker, source: DeploySource, experiment: str, directory: str) -> Shipped:
    """Ship `source` to `directory` on the worker's host and verify it. A transport that drops
    is reconnected once and the deploy redone (only what still differs). Raises WorkerSetupError
    when the dir is refused or the copy fails verification, WorkerLost when it drops twice."""
    shipped = Shipped(worker.name, directory)
    started = time.monotonic()
    blobs = _Blobs(source.root)
    try:
        while True:
            shipped.attempts += 1
            try:
                _ship(worker, source, experiment, shipped, blobs)
                break
            except WorkerLost:
                if shipped.attempts >= 2:
                    raise WorkerLost(f"worker {worker.name}: the connection dropped twice while deploying to {directory}") from None
                worker.reconnect()
    finally:
        blobs.close()
    shipped.seconds = time.monotonic() - started
    if shipped.tree != source.tree:
        raise WorkerSetupError(f"worker {worker.name}: the copy in {directory} fails verification: its tree is {shipped.tree[:12]}, "
                               f"the {'commit' if source.commit else 'folder'}'s is {source.tree[:12]}")
    return shipped


def _ship(worker: AgentWorker, source: DeploySource, experiment: str, shipped: Shipped, blobs: _Blobs) -> None:
    where = {"dir": shipped.dir, "private_below": source.private_for(shipped.dir)}
    manifest = [[e.path, e.mode, e.blob, e.perm] for e in source.entries]
    reply = _asked(worker, {"op": "deploy", "step": "scan", **where, "experiment": experiment, "manifest": manifest}, replies.DEPLOY_SCAN)
    need = set(reply["need"])
    shipped.needed = sorted(need)
    batch: list[bytes] = []
    size = 0
    for entry in source.entries:
        if entry.path not in need:
            continue
        offset = 0
        for piece, end in _pieces(entry, blobs):
            if batch and size + len(piece) > CHUNK:  # small files travel together, a large one a piece at a time
                _asked(worker, _put_line(where, batch), replies.DEPLOY_PUT)
                batch, size = [], 0
            batch.append(_piece(entry, offset, end, piece))
            size += len(piece)
            offset += len(piece)
        shipped.files_sent += 1
        shipped.bytes_sent += offset
    if batch:
        _asked(worker, _put_line(where, batch), replies.DEPLOY_PUT)
    done = _asked(worker, {"op": "deploy", "step": "finish", **where, "experiment": experiment,
                          "paths": [e.path for e in source.entries]}, replies.DEPLOY_FINISH)
    shipped.tree, shipped.files = done["tree"], int(done["files"])


def _asked(worker: AgentWorker, message: dict[str, Any] | bytes, expect: replies.Expect[dict[str, Any]]) -> dict[str, Any]:
    """The agent's reply to one deploy step, read by `expect`; WorkerSetupError (nothing runs)
    when it refused."""
    reply = worker.ask(message, REPLY_TIMEOUT, expect)
    if "refused" in reply:
        raise WorkerSetupError(f"worker {worker.name}: refusing to deploy: {reply['refused']}")
    return reply


def _piece(entry: Entry, offset: int, end: bool, data: bytes) -> bytes:
    """One piece of a file as JSON; its base64 needs no escaping, so it is not run through the
    JSON encoder (a scan of every byte)."""
    head = json.dumps({"path": entry.path, "mode": entry.mode, "perm": entry.perm, "offset": offset, "end": end}, separators=(",", ":"))
    return head[:-1].encode() + b',"data":"' + base64.b64encode(data) + b'"}'


def _put_line(where: dict[str, Any], pieces: list[bytes]) -> bytes:
    head = json.dumps({"op": "deploy", "step": "put", **where}, separators=(",", ":"))
    return head[:-1].encode() + b',"pieces":[' + b",".join(pieces) + b"]}\n"


def _pieces(entry: Entry, blobs: _Blobs) -> Iterator[tuple[bytes, bool]]:
    """The content of `entry` in pieces of at most CHUNK bytes, each with whether it is the last."""
    if entry.local is None:
        stream = blobs.open(entry.blob, entry.size)
    elif entry.mode == SYMLINK:
        yield os.fsencode(os.readlink(entry.local)), True
        return
    else:
        stream = open(entry.local, "rb")
    left = entry.size
    try:
        while True:
            piece = stream.read(min(CHUNK, left)) if left else b""
            left -= len(piece)
            if left and not piece:
                raise WorkerError(f"{entry.path} changed while it was being deployed; run again")
            yield piece, left == 0
            if left == 0:
                break
    finally:
        if entry.local is not None:
            stream.close()
        elif left == 0:
            blobs.done()
        else:  # cut short: the rest of this blob is still in the pipe
            blobs.close()


class _Blobs:
    """Blob contents from one `git cat-file --batch` process, read a piece at a time."""

    def __init__(self, top: str) -> None:
        self.top = top
        self.proc: subprocess.Popen[bytes] | None = None

    def open(self, blob: str, size: int) -> IO[bytes]:
        if self.proc is None:
            self.proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.top, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(blob.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3 or int(header[2]) != size:
            raise WorkerError(f"git cat-file: unexpected answer for blob {blob}: {b' '.join(header).decode(errors='replace')}")
        return self.proc.stdout

    def done(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        self.proc.stdout.read(1)  # the newline after each blob

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.communicate()  # closes its pipes
            self.proc = None


def deploy_all(source: DeploySource, experiment: str, targets: Sequence[tuple[AgentWorker, str]], skip: set[str] = frozenset()
               ) -> list[Shipped]:
    """Deploy to every (host, dir) at once, but those named in `skip` (verified before). Raises
    WorkerSetupError (exit 2) naming each host refused or failing verification, else
    WorkerError (exit 3) naming each host lost; nothing has run."""
    results: dict[str, Shipped] = {}
    errors: dict[str, BaseException] = {}

    def one(worker: AgentWorker, directory: str) -> None:
        try:
            results[worker.name] = deploy_host(worker, source, experiment, directory)
        except (WorkerError, WorkerSetupError) as exc:
            errors[worker.name] = exc
        except Exception as exc:  # noqa: BLE001 - whatever it is, it is this host's failure
            errors[worker.name] = WorkerError(f"worker {worker.name}: deploy failed: {type(exc).__name__}: {exc}")

    try:
        with Threads() as threads:
            for worker, directory in targets:
                if worker.name not in skip:
                    threads.start(one, worker, directory)
            threads.wait_all()
    except BaseException:
        for worker, _ in targets:
            worker.hang_up()
        raise
    if errors:
        ordered = [errors[w.name] for w, _ in targets if w.name in errors]
        message = "; ".join(str(e) for e in ordered) + "; nothing ran"
        raise (WorkerSetupError if any(isinstance(e, WorkerSetupError) for e in ordered) else WorkerError)(message)
    return [results[w.name] for w, _ in targets if w.name in results]


def deploy_targets(spec: Spec, workers: Sequence[Any], source: DeploySource) -> list[tuple[AgentWorker, str]]:
    """Every host of the experiment with a `dir` (each role's), paired with it; each is pointed at
    its dir, standing for the source's root (the repository's top, or the spec's folder)."""
    out = []
    for ws, worker in zip(spec.workers, workers):
        pairs = [(member, getattr(worker, "members")[role]) for role, member in ws.roles] if ws.roles else [(ws, worker)]
        for member_spec, host in pairs:
            if member_spec.dir is None:
                continue
            host.folder, host.host_dir, host.deployed_tree = source.root, member_spec.dir, source.tree
            out.append((host, member_spec.dir))
    return out


def deploy_fleet(spec: Spec, workers: Sequence[Any], source: DeploySource | None, *, verified: Sequence[dict[str, Any]] = (),
                 redeploy: bool = False) -> list[Shipped]:
    """Deploy `source` to every host with a `dir`, but those `verified` before for its tree
    (journaled deploys, on resume) unless `redeploy`. Nothing without [deploy]."""
    if source is None:
        return []
    targets = deploy_targets(spec, workers, source)
    done = set() if redeploy else {d["worker"] for d in verified if d["tree"] == source.tree}
    return deploy_all(source, spec.name, targets, skip=done)


def check_resumable(source: DeploySource | None, recorded: dict[str, Any] | None) -> None:
    """On resume: the source read again must be what the experiment started with, or its runs
    would not all run the same software."""
    if source is None or recorded is None or source.tree == recorded.get("tree"):
        return
    what = f"commit {str(recorded.get('commit'))[:12]}" if recorded.get("commit") else "the folder"
    raise SpecError(f"[deploy]: {what} was deployed as tree {str(recorded.get('tree'))[:12]}, but it reads as {source.tree[:12]} "
                    "now (changed files?); restore it, or start a new experiment")
