"""The spec's `[deploy]` table: what is shipped to every worker's `dir` before anything runs.

Only the table is read here; the repository or folder it names is read when the experiment is
planned or started (execute/deploy.py), so that `resume` deploys the commit it started with.
"""

from __future__ import annotations

from typing import Any, Sequence

from benchsage.spec import fields
from benchsage.spec.model import DeploySpec, WorkerSpec

GIT, FOLDER = "git", "folder"
REFUSE, INCLUDE = "refuse", "include"
_KEYS = {GIT: {"source", "rev", "dirty"}, FOLDER: {"source"}}


def parse_deploy(w: fields.Where, table: Any, workers: Sequence[WorkerSpec]) -> DeploySpec | None:
    if table is None:
        return None
    if not isinstance(table, dict):
        raise w.error("", f"'deploy' must be a table ([deploy]), got {fields.type_name(table)}")
    source = fields.string(w, "[deploy]", table, "source", required=True)
    if source not in _KEYS:
        raise w.error("[deploy]", f"key 'source' must be \"git\" (a commit of the spec's repository) or \"folder\" (the spec's "
                                  f"folder as it is), got {source!r}")
    fields.check_keys(w, f"[deploy] (source \"{source}\")", table, _KEYS[source])
    rev = fields.string(w, "[deploy]", table, "rev", default="HEAD") or "HEAD"
    if not rev.strip() or rev.startswith("-"):
        raise w.error("[deploy]", f"key 'rev' must name a commit (HEAD, a branch, a tag, a commit id), got {rev!r}")
    dirty = fields.string(w, "[deploy]", table, "dirty", default=REFUSE) or REFUSE
    if dirty not in (REFUSE, INCLUDE):
        raise w.error("[deploy]", f"key 'dirty' must be \"refuse\" or \"include\", got {dirty!r}")
    for ws in workers:  # a local worker without a dir runs the spec's folder itself
        for name, member in [(m.name, m) for _, m in ws.roles] or [(ws.name, ws)]:
            if member.dir is None and member.kind != "local":
                raise w.error("[deploy]", f"worker '{name}' has no `dir`: give it one (an absolute path on its host, where the "
                                          "experiment is deployed)")
    return DeploySpec(source, rev, dirty)
