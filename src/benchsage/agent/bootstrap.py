"""The program a transport runs to start the agent (python -S -u -c BOOTSTRAP).

It checks the interpreter, reads the bundle from stdin (a length line, then JSON: the source of
every module of this folder and of vocabulary.py, by module name), installs an import hook that
serves those modules as the packages benchsage and benchsage.agent, and runs the agent's main.
A module is compiled when first imported, and in the agent itself that happens in a forked
child that hands back the code marshalled: compiling in the agent would leave ~2 MiB of the
compiler's memory resident, and every trial it forks would start with it. Its source is dropped
once imported; modules only a forked child imports (the snapshot's) are compiled in that child.
Modules are compiled without docstrings and asserts (optimize=2): nothing on a host reads them,
and they would add to the agent's resident memory, the floor of every trial's max_rss.

Kept to syntax every Python since 2.7 parses, so that an old python3 says it is too old instead
of failing with a syntax error. The controller sends it as one base64 line (execute/bundle.py).
"""

from __future__ import annotations

from benchsage.agent.protocol import MARKER, MIN_PYTHON, PROTOCOL

BOOTSTRAP = """import sys
if sys.version_info < (%d, %d):
    sys.stdout.write('{"%s": %d, "fatal": "python %%s is too old for the benchsage agent (it needs %d.%d or newer)"}\\n' %% sys.version.split()[0])
    sys.stdout.flush()
    sys.exit(3)
import json, marshal, os
b = sys.stdin.buffer
bundle = json.loads(b.read(int(b.readline())).decode("utf-8"))
del b


def compiled_apart(source, filename):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            data = marshal.dumps(compile(source, filename, "exec", 0, False, 2))
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    parts = []
    part = os.read(r, 65536)
    while part:
        parts.append(part)
        part = os.read(r, 65536)
    os.close(r)
    os.waitpid(pid, 0)
    return marshal.loads(b"".join(parts))


class BundleImporter(object):
    def __init__(self, sources, packages):
        self.sources = sources
        self.packages = packages
        self.agent = os.getpid()

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources and name not in self.packages:
            return None
        return type(sys.__spec__)(name, self, is_package=name in self.packages)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        filename = "<benchsage agent: " + module.__name__ + ">"
        module.__file__ = filename
        source = self.sources.pop(module.__name__, "")
        if not source:
            return
        if os.getpid() == self.agent:
            code = compiled_apart(source, filename)
        else:
            code = compile(source, filename, "exec", 0, False, 2)
        exec(code, module.__dict__)


sys.meta_path.insert(0, BundleImporter(bundle["modules"], bundle["packages"]))
main = bundle["main"]
del bundle
__import__(main)
sys.modules[main].main()
""" % ((MIN_PYTHON + (MARKER, PROTOCOL)) + MIN_PYTHON)
