"""OpenSSH: the system ssh client, so ~/.ssh/config, keys, agents, ProxyJump and ControlMaster
work as they do for the user. Host keys are always checked: an unknown or changed key stops
the worker before anything runs, with what to do about it."""

from __future__ import annotations

import re
import shlex

from benchsage.execute.transports.base import Failure, last_line, python_failure

# Options benchsage always passes. StrictHostKeyChecking=yes on the command line wins over any
# weaker setting in a config file: an unknown or changed key is never accepted.
SSH_OPTIONS = (
    "-o", "BatchMode=yes",
    "-o", "StrictHostKeyChecking=yes",
    "-o", "ServerAliveInterval=5",
    "-o", "ServerAliveCountMax=3",
    "-o", "ConnectTimeout=20",
    "-T",
)


def split_host(host: str) -> tuple[str, str | None]:
    """"user@host:port" -> ("user@host", "port"); anything else unchanged (ssh config names too)."""
    match = re.fullmatch(r"(.+?):(\d{1,5})", host)
    if match and "]" not in match.group(1) and match.group(1).count(":") == 0:
        return match.group(1), match.group(2)
    return host, None


class SshTransport:
    kind = "ssh"

    def __init__(self, host: str, ssh_config: str | None = None, python: str = "python3") -> None:
        self.host = host
        self.ssh_config = ssh_config
        self.python = python
        self.destination, self.port = split_host(host)

    def base_argv(self) -> list[str]:
        argv = ["ssh"]
        if self.ssh_config:
            argv += ["-F", self.ssh_config]
        argv += SSH_OPTIONS
        if self.port:
            argv += ["-p", self.port]
        return argv

    def argv(self, command: list[str]) -> list[str]:
        # ssh hands the remote login shell one string: quote every word for it.
        return [*self.base_argv(), "--", self.destination, " ".join(shlex.quote(w) for w in command)]

    def describe(self) -> str:
        return f"ssh {self.host}"

    def explain(self, exit_status: int | None, stderr: str) -> Failure | None:
        host = self.destination
        port = f"-p {self.port} " if self.port else ""
        config = f"-F {self.ssh_config} " if self.ssh_config else ""
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or "Host key for" in stderr and "has changed" in stderr:
            return Failure(
                f"the host key of {host} has CHANGED since it was recorded (ssh refuses it; this can be an attack). "
                f"If the host was reinstalled, remove the old key with `ssh-keygen -R {host}` and trust the new one "
                f"after checking its fingerprint (`ssh {config}{port}{host}` once interactively)",
                setup=True,
            )
        if "Host key verification failed" in stderr or re.search(r"No \S+ host key is known for", stderr):
            return Failure(
                f"the host key of {host} is not known (ssh never accepts unknown keys). Check its fingerprint and add it: "
                f"`ssh-keyscan {port}{_bare(host)} >> ~/.ssh/known_hosts` (or the UserKnownHostsFile of your ssh config), "
                f"or log in once interactively with `ssh {config}{port}{host}`",
                setup=True,
            )
        if re.search(r"Permission denied \(", stderr):
            return Failure(
                f"{host} refused the login ({last_line(stderr)}); set up key-based login (e.g. `ssh-copy-id {port}{host}`), "
                f"benchsage runs ssh with BatchMode=yes and cannot type a password",
                setup=True,
            )
        if re.search(r"Could not resolve hostname|Connection refused|Connection timed out|No route to host|"
                     r"Network is unreachable|Connection closed by|Connection reset|kex_exchange_identification|"
                     r"Operation timed out|timed out", stderr):
            return Failure(f"cannot reach {host} over ssh: {last_line(stderr)}")
        return python_failure(self.python, exit_status, stderr)


def _bare(destination: str) -> str:
    return destination.rsplit("@", 1)[-1]
