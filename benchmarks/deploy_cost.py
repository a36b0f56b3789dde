"""What [deploy] costs: a 50 MiB experiment of 1,000 files to 8 ssh workers of a fake fleet on
loopback, and a re-deploy after one file changed.

- the first deploy's wall time (budget 10 s), beside a baseline measured in the same run: the
  same commit's files piped as a tar archive to each host at once (`git archive | ssh HOST tar
  x`, no verification), as a ratio;
- the controller's peak memory (ru_maxrss of this process) before and after (budget 200 MiB);
- the re-deploy: bytes on the wire to each host (every request line, the manifest included)
  and file content sent (budget 1 MiB per host).

    python benchmarks/deploy_cost.py [--hosts 8] [--files 1000] [--mib 50]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples" / "fleet"))

import fakefleet  # noqa: E402

from benchsage.execute.agentworker import AgentWorker  # noqa: E402
from benchsage.execute.deploy import deploy_all, read_source  # noqa: E402
from benchsage.execute.fleet import close_all, connect_all  # noqa: E402
from benchsage.execute.transports import SshTransport  # noqa: E402
from benchsage.spec import load_spec  # noqa: E402

TIME_BUDGET = 10.0
MEMORY_BUDGET_MIB = 200
REDEPLOY_BUDGET = 1 << 20


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_repo(root: Path, files: int, mib: int, dirs: list[str]) -> Path:
    repo = root / "repo"
    repo.mkdir()
    size = mib * (1 << 20) // files
    for i in range(files):
        path = repo / f"d{i % 20}" / f"f{i}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(os.urandom(size))  # incompressible: what travels is what counts
    workers = "".join(f'[[worker]]\nkind = "ssh"\nhost = "h{i}"\ndir = "{d}"\n' for i, d in enumerate(dirs))
    (repo / "spec.toml").write_text(f'[experiment]\nname = "deploy-cost"\n[[test]]\nname = "t"\ncommand = "true"\n'
                                    f'[deploy]\nsource = "git"\n{workers}')
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=b@example.org", "-c", "user.name=b", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


def counting(worker: AgentWorker, sent: dict[str, int]) -> None:
    """Count the bytes of every request line the controller writes to this worker."""
    ask = worker.ask

    def ask_counted(message, timeout=None):  # type: ignore[no-untyped-def]
        line = message if isinstance(message, bytes) else (json.dumps(message, separators=(",", ":")) + "\n").encode()
        sent[worker.name] = sent.get(worker.name, 0) + len(line)
        return ask(message, timeout)

    worker.ask = ask_counted  # type: ignore[method-assign]


def tar_baseline(fleet: fakefleet.Fleet, repo: Path, root: Path) -> float:
    start = time.monotonic()
    procs = []
    for host in fleet.hosts:
        target = root / "tar" / host
        cmd = f"git -C {repo} archive HEAD | ssh -F {fleet.ssh_config} {host} 'mkdir -p {target} && tar -C {target} -xf -'"
        procs.append(subprocess.Popen(cmd, shell=True))
    if any(p.wait() for p in procs):
        raise SystemExit("the tar baseline failed")
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--mib", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fleet = fakefleet.start(root / "fleet", args.hosts)
        try:
            dirs = [str(root / "dirs" / h) for h in fleet.hosts]
            repo = make_repo(root, args.files, args.mib, dirs)
            workers = [AgentWorker(h, SshTransport(h, fleet.ssh_config, "python3"), python=["python3"]) for h in fleet.hosts]
            sent: dict[str, int] = {}
            for w in workers:
                counting(w, sent)
            connect_all(workers)
            try:
                before = peak_mib()
                start = time.monotonic()
                source = read_source(load_spec(repo / "spec.toml"))
                first = deploy_all(source, "deploy-cost", list(zip(workers, dirs)))
                took = time.monotonic() - start
                verified = all(s.tree == source.tree for s in first)
                after = peak_mib()
                baseline = tar_baseline(fleet, repo, root)
                (repo / "d3" / "f3.bin").write_bytes(os.urandom(source.entries[0].size))
                subprocess.run(["git", "-c", "user.email=b@example.org", "-c", "user.name=b", "commit", "-qam", "one"], cwd=repo,
                               check=True)
                sent.clear()
                start = time.monotonic()
                source = read_source(load_spec(repo / "spec.toml"))
                second = deploy_all(source, "deploy-cost", list(zip(workers, dirs)))
                again = time.monotonic() - start
            finally:
                close_all(workers)
        finally:
            fleet.stop()
    mib = source.bytes / (1 << 20)
    print(f"experiment: {len(source.entries)} files, {mib:.1f} MiB; {args.hosts} ssh workers on loopback")
    print(f"first deploy: {took:.2f} s (budget {TIME_BUDGET:g} s), all verified: {verified}; "
          f"{sum(s.bytes_sent for s in first) / (1 << 20):.0f} MiB of content sent")
    print(f"baseline, git archive | ssh tar x to every host at once (no verification): {baseline:.2f} s; "
          f"deploy / baseline = {took / baseline:.2f}")
    print(f"controller peak memory (ru_maxrss): {before:.0f} MiB before, {after:.0f} MiB after the deploy "
          f"(budget {MEMORY_BUDGET_MIB} MiB)")
    wire = max(sent.values())
    print(f"re-deploy after one file changed: {again:.2f} s; per host {max(s.files_sent for s in second)} file, "
          f"{max(s.bytes_sent for s in second) / 1024:.0f} KiB of content, {wire / 1024:.0f} KiB on the wire "
          f"(budget {REDEPLOY_BUDGET >> 10} KiB); all hosts: {sum(sent.values()) / 1024:.0f} KiB")
    ok = verified and took < TIME_BUDGET and after < MEMORY_BUDGET_MIB and wire < REDEPLOY_BUDGET
    print("within budget" if ok else "OVER BUDGET")


if __name__ == "__main__":
    main()
