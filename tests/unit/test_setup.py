#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/setup-debian.sh installs every program, library and Python
module the build, the tests and the scripts call.

The judge is dpkg: each program is looked up on this machine's system path
and `dpkg -S` names the package that owns it; the declared package must
bring it, and be one setup installs or one even a minimal debootstrap has
(Priority required). Programs are both declared (tests/unit/programs.txt)
and found by scanning the shell scripts, Python subprocess calls and meson
files, so a call that nobody declared fails here. A program that is not
installed fails; nothing is skipped."""

import ast
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
SETUP = os.path.join(TOP, "scripts", "setup-debian.sh")
DECLARED = os.path.join(HERE, "programs.txt")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Scripts call apt-helper by its full path: apt keeps it off PATH.
PROGRAM_PATH = SYSTEM_PATH + ":/usr/lib/apt"

# Scanned for calls: everything CI runs (tests/gpu runs on GPU machines
# only, not in CI, and is left out).
SCAN_DIRS = ["scripts", "tests/unit", "tests/integration", "tests/vhost",
             "tests/bench", "tests/kernel", "tests/fuzz", "kernel",
             "tests/package", "tests/nccl", "hw/vfio-gpu-p2p", ".ci"]

# The project's own programs: the package test calls them where it has
# installed the project's packages.
OUR_PROGRAMS = {"gpup2p", "gpup2p-verify"}

SHELL_WORDS = set("""
    if then else elif fi for while until do done case esac in function
    return local shift set export cd echo printf read test [ true false
    exit wait kill trap . eval exec unset break continue : command type
    umask ulimit getopts alias { } ! time
""".split())

NOT_COMMANDS = re.compile(r"^(\$|\"\$|'|\"|[A-Za-z_][A-Za-z0-9_]*=|\.\.?/|"
                          r"build/|tests/|hw/|kernel/|scripts/|-|[0-9])")


def read_declared():
    """{program: package} from programs.txt."""
    out = {}
    with open(DECLARED) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError("%s:%d: expected 'PROGRAM PACKAGE', got %r"
                                 % (DECLARED, n, line))
            out[parts[0]] = parts[1]
    return out


def setup_packages():
    """Package names that setup-debian.sh passes to apt-get install."""
    with open(SETUP) as f:
        text = f.read().replace("\\\n", " ")
    pkgs = set()
    for line in text.splitlines():
        m = re.search(r"apt-get install (.*)", line)
        if not m:
            continue
        words = m.group(1).split()
        skip = False
        for w in words:
            if skip:
                skip = False
            elif w == "-t":
                skip = True
            elif not w.startswith("-") and not w.startswith("$"):
                pkgs.add(w.split("/")[0])
    return pkgs


def _subshells(line):
    """Contents of $( ... ) and backquotes in @line, and @line with them cut."""
    found = []
    out = []
    i = 0
    while i < len(line):
        if line.startswith("$(", i) and not line.startswith("$((", i):
            depth, j = 1, i + 2
            while j < len(line) and depth:
                depth += {"(": 1, ")": -1}.get(line[j], 0)
                j += 1
            # Unclosed on this line: the rest of it is inside.
            found.append(line[i + 2:j - 1] if depth == 0 else line[i + 2:])
            out.append(" X ")
            i = j
        elif line[i] == "`":
            j = line.find("`", i + 1)
            j = len(line) if j < 0 else j
            found.append(line[i + 1:j])
            out.append(" X ")
            i = j + 1
        else:
            out.append(line[i])
            i += 1
    return found, "".join(out)


def shell_functions(text):
    return set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(\)", text,
                          re.M))


def shell_commands(text, functions=()):
    """Names in command position in a shell script (a close reading, not a
    full parser: enough for the project's own scripts)."""
    lines = text.replace("\\\n", " ").splitlines()
    functions = set(functions) | shell_functions(text)
    cmds = set()
    heredoc = None
    todo = []
    for line in lines:
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        m = re.search(r"<<-?\s*['\"]?([A-Za-z_]+)['\"]?", line)
        if m:
            heredoc = m.group(1)
        todo.append(line)
    while todo:
        line = todo.pop()
        line = re.sub(r"(^|\s)#.*", "", line)
        line = re.sub(r"\$\(\(.*?\)\)", " X ", line)
        line = re.sub(r"'[^']*'", " Q ", line)
        subs, line = _subshells(line)
        todo.extend(subs)
        line = re.sub(r"\$\{[^}]*(\}|$)", "X", line)
        line = re.sub(r'"[^"]*"', " Q ", line)
        for seg in re.split(r"&&|\|\||[;|(){}&]|\bthen\b|\bdo\b|\belse\b",
                            line):
            words = seg.split()
            while words and (words[0] in ("if", "elif", "while", "until",
                                          "!", "exec", "time", "nice") or
                             re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0])):
                words.pop(0)
            if not words or words[0] in ("for", "case"):
                continue
            w = words[0]
            if w.startswith("/") and not w.startswith("/sys") \
                    and not w.startswith("/proc") and not w.startswith("/dev"):
                w = os.path.basename(w)
            if (w in SHELL_WORDS or w in functions or w == "X" or
                    w == "Q" or NOT_COMMANDS.match(w) or "/" in w or
                    w.endswith(")") or w.startswith("<") or
                    w.startswith(">") or w.startswith("2>") or
                    not re.match(r"^[A-Za-z0-9_.+-]+$", w)):
                continue
            cmds.add(w)
    return cmds


def python_commands(text):
    """First elements of literal argument lists given to subprocess."""
    cmds = set()
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else \
            f.id if isinstance(f, ast.Name) else ""
        if name not in ("run", "Popen", "check_output", "check_call",
                        "call"):
            continue
        if not node.args or not isinstance(node.args[0], ast.List):
            continue
        elts = node.args[0].elts
        if elts and isinstance(elts[0], ast.Constant) and \
                isinstance(elts[0].value, str):
            cmds.add(os.path.basename(elts[0].value))
    return cmds


def python_imports(text):
    mods = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            mods.add(node.module.split(".")[0])
    return mods


def meson_calls(text):
    """Required programs and pkg-config dependencies of a meson.build."""
    progs = set(re.findall(r"find_program\('([^']+)'\)", text))
    deps = set(re.findall(r"dependency\('([^']+)'", text)) - {"threads"}
    return progs, deps


def scan():
    """(programs with where each was seen, python modules, pkg-config
    names) over everything CI runs."""
    progs, mods, deps = {}, set(), set()
    local_mods = set()
    files = []
    for d in SCAN_DIRS:
        for root, _, names in os.walk(os.path.join(TOP, d)):
            files += [os.path.join(root, n) for n in names]
    for root, dirs, names in os.walk(TOP):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        if "meson.build" in names and \
                not any(os.path.join(TOP, d) in root for d in SCAN_DIRS):
            files.append(os.path.join(root, "meson.build"))
    functions = set()
    for path in files:
        if path.endswith(".sh"):
            with open(path) as f:
                functions |= shell_functions(f.read())
    for path in sorted(files):
        name = os.path.basename(path)
        rel = os.path.relpath(path, TOP)
        with open(path, errors="replace") as f:
            text = f.read()
        found = set()
        if name.endswith(".sh") or text.startswith("#!/bin/sh"):
            found = shell_commands(text, functions)
        elif name.endswith(".py"):
            local_mods.add(name[:-3])
            found = python_commands(text)
            mods |= python_imports(text)
        elif name == "meson.build":
            found, d = meson_calls(text)
            deps |= d
            # The project's own scripts, found beside the meson.build.
            found = {p for p in found if not os.path.exists(
                os.path.join(os.path.dirname(path), p))}
        for p in found:
            progs.setdefault(p, set()).add(rel)
    return progs, mods - local_mods, deps


def owner_candidates(path):
    """Names dpkg may know @path by: itself (links such as
    /usr/bin/python3), its /bin name (usrmerge), the file the link leads
    to (alternatives) and that file's /bin name."""
    real = os.path.realpath(path)
    return [path, path.replace("/usr/", "/", 1), real,
            real.replace("/usr/", "/", 1)]


def owners(paths):
    """{path: package} for every path dpkg knows, in one dpkg -S call."""
    cands = sorted({c for p in paths for c in owner_candidates(p)})
    out = subprocess.run(["dpkg", "-S"] + cands, capture_output=True,
                         text=True).stdout
    known = {}
    for line in out.splitlines():
        if line.startswith("diversion by ") or ": " not in line:
            continue
        pkgs, f = line.split(": ", 1)
        known.setdefault(f.strip(), pkgs.split(",")[0].split(":")[0].strip())
    return {p: next((known[c] for c in owner_candidates(p) if c in known),
                    None) for p in paths}


@functools.lru_cache(maxsize=None)
def depends(pkg):
    """Names @pkg depends on (Depends and Pre-Depends, alternatives too)."""
    p = subprocess.run(["dpkg-query", "-W", "-f",
                        "${Depends}, ${Pre-Depends}", pkg],
                       capture_output=True, text=True)
    names = set()
    for part in re.split(r"[,|]", p.stdout):
        part = part.strip()
        if part:
            names.add(part.split()[0].split(":")[0])
    return names


def provides(declared, got):
    """Does installing @declared bring the file owner @got (itself, or a
    dependency two levels deep)?"""
    if got == declared:
        return True
    first = depends(declared)
    return got in first or any(got in depends(d) for d in first)


@functools.lru_cache(maxsize=None)
def essential(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Priority} ${Essential}",
                        pkg], capture_output=True, text=True)
    return p.returncode == 0 and (p.stdout.split()[0] == "required" or
                                  p.stdout.endswith("yes"))


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, detail=""):
        self.n += 1
        print("%sok %d - %s" % ("" if cond else "not ", self.n, what))
        if not cond:
            self.failed += 1
            for line in str(detail).splitlines():
                print("# " + line)
        return cond


# An operator's own mirror; apt only prints the URIs it would fetch, so the
# name never has to resolve.
MIRROR = "http://debian-mirror.invalid/debian"
BACKPORTS_LINE = ("deb [signed-by=/etc/apt/trusted.gpg.d/debian-archive-"
                  "bookworm-automatic.asc] %s bookworm main\n"
                  "deb [signed-by=/etc/apt/trusted.gpg.d/debian-archive-"
                  "bookworm-automatic.asc] %s bookworm-backports main\n"
                  % (MIRROR, MIRROR))
BACKPORTS_DEB822 = ("Types: deb\nURIs: %s\n"
                    "Suites: bookworm bookworm-updates bookworm-backports\n"
                    "Components: main\n" % MIRROR)


def setup_sources(t, name, sources_list, extra=None):
    """Run setup's sources step on a private /etc/apt holding
    @sources_list (and sources.list.d/@extra = (file, text)); apt itself
    then reads the sources. Returns (files setup added, apt's result)."""
    with tempfile.TemporaryDirectory() as d:
        etc, state, cache = (os.path.join(d, n) for n in
                             ("etc", "state", "cache"))
        for sub in ("sources.list.d", "preferences.d", "apt.conf.d"):
            os.makedirs(os.path.join(etc, sub))
        os.makedirs(os.path.join(state, "lists", "partial"))
        os.makedirs(os.path.join(cache, "archives", "partial"))
        with open(os.path.join(etc, "sources.list"), "w") as f:
            f.write(sources_list)
        if extra:
            with open(os.path.join(etc, "sources.list.d", extra[0]), "w") as f:
                f.write(extra[1])
        before = set(os.listdir(os.path.join(etc, "sources.list.d")))
        env = dict(os.environ, GPUP2P_APT_ETC=etc,
                   GPUP2P_SETUP_SOURCES_ONLY="1")
        p = subprocess.run([SETUP], env=env, capture_output=True, text=True)
        t.ok(p.returncode == 0, "%s: setup's sources step runs" % name,
             p.stderr)
        added = set(os.listdir(os.path.join(etc, "sources.list.d"))) - before
        newer = os.path.join(etc, "gpup2p-newer", "etc", "sources.list.d",
                             "trixie-backports.sources")
        texts = [open(os.path.join(etc, "sources.list.d", a)).read()
                 for a in added]
        if os.path.exists(newer):
            texts.append(open(newer).read())
        for text in texts:
            uris = re.findall(r"^URIs: (\S+)", text, re.M)
            t.ok(uris and all(u.rstrip("/") == MIRROR for u in uris),
                 "%s: a source setup writes uses the machine's mirror" % name,
                 text)
        apt = subprocess.run(["apt-get", "-o", "Dir::Etc=" + etc,
                              "-o", "Dir::State=" + state,
                              "-o", "Dir::Cache=" + cache,
                              "update", "--print-uris"],
                             capture_output=True, text=True)
        return added, apt


def test_backports_source(t):
    """setup adds bookworm-backports only where no source names it, so apt
    never sees it twice (with different Signed-By, apt stops)."""
    ours = "vfio-gpu-p2p-backports.sources"
    for name, text, extra in (
            ("one-line backports with another key", BACKPORTS_LINE, None),
            ("deb822 backports", "", ("debian.sources", BACKPORTS_DEB822))):
        added, apt = setup_sources(t, name, text, extra)
        t.ok(not added, "%s: setup adds no second source" % name,
             sorted(added))
        t.ok(apt.returncode == 0 and "bookworm-backports/InRelease" in
             apt.stdout and "Conflicting" not in apt.stderr and
             "configured multiple times" not in apt.stderr,
             "%s: apt reads the sources, backports once" % name,
             apt.stderr)
    added, apt = setup_sources(t, "no backports",
                               "# " + BACKPORTS_LINE.splitlines()[1] +
                               "\ndeb %s bookworm main\n" % MIRROR)
    t.ok(sorted(added) == [ours], "no backports (one commented out): setup "
         "adds its source", sorted(added))
    t.ok(apt.returncode == 0 and "bookworm-backports/InRelease" in
         apt.stdout and not apt.stderr.strip(),
         "... which apt reads", apt.stderr)
    with tempfile.TemporaryDirectory() as d:
        for sub in ("sources.list.d", "preferences.d"):
            os.makedirs(os.path.join(d, sub))
        with open(os.path.join(d, "sources.list"), "w") as f:
            f.write("deb %s trixie main\n" % MIRROR)
        p = subprocess.run([SETUP], capture_output=True, text=True,
                           env=dict(os.environ, GPUP2P_APT_ETC=d,
                                    GPUP2P_SETUP_SOURCES_ONLY="1"))
        t.ok(p.returncode != 0 and "bookworm main" in p.stderr and
             not os.listdir(os.path.join(d, "sources.list.d")),
             "no bookworm source: setup refuses, says why, writes nothing",
             "rc %d: %s" % (p.returncode, p.stderr))


def main():
    t = Tap()
    declared = read_declared()
    in_setup = setup_packages()

    # The scanner must find a call it was not told of.
    sample = ('#!/bin/sh\nf() { :; }\nX=1 frobnicate -a "$(quux -b)" | '
              'sort\nf\nfor i in a b; do zork $i; done\ncat <<EOF\nnope\n'
              'EOF\nv=${V:-$(head -1 x ||\n    uname -r)}\n'
              "sed -e 's/$(src)/x/' y\n")
    t.ok(shell_commands(sample) == {"frobnicate", "quux", "sort", "zork",
                                    "cat", "head", "uname", "sed"},
         "the shell scanner finds calls in command position",
         sorted(shell_commands(sample)))

    progs, mods, deps = scan()
    undeclared = {p: sorted(w) for p, w in progs.items()
                  if p not in declared and p not in OUR_PROGRAMS}
    t.ok(not undeclared, "every program the scripts and tests call is "
         "declared in tests/unit/programs.txt",
         "\n".join("%s (called in %s)" % (p, ", ".join(w))
                   for p, w in sorted(undeclared.items())))

    found = {prog: shutil.which(prog, path=PROGRAM_PATH)
             for prog in declared}
    owner_of = owners([p for p in found.values() if p])
    for prog, pkg in sorted(declared.items()):
        path = found[prog]
        if not t.ok(path is not None, "%s is installed" % prog,
                    "not on %s; setup must install %s" % (PROGRAM_PATH, pkg)):
            continue
        got = owner_of[path]
        t.ok(got is not None and provides(pkg, got),
             "%s comes with %s" % (prog, pkg),
             "dpkg -S %s says %s" % (path, got))
        t.ok(pkg in in_setup or essential(pkg),
             "%s is installed by setup or Priority required" % pkg,
             "add %s to scripts/setup-debian.sh" % pkg)

    for dep in sorted(deps):
        p = subprocess.run(["pkg-config", "--path", dep],
                           capture_output=True, text=True)
        pc = p.stdout.strip()
        if not t.ok(p.returncode == 0 and pc, "pkg-config finds %s" % dep,
                    p.stderr):
            continue
        got = owners([pc])[pc]
        t.ok(got in in_setup, "%s (%s) is installed by setup" % (dep, got),
             "dpkg -S %s says %s; add it to scripts/setup-debian.sh"
             % (pc, got))

    # Python modules run by the system's python3, as on a fresh machine.
    for mod in sorted(mods):
        p = subprocess.run(["/usr/bin/python3", "-c", "import " + mod],
                           capture_output=True, text=True)
        t.ok(p.returncode == 0,
             "/usr/bin/python3 imports %s" % mod, p.stderr)

    test_backports_source(t)

    print("1..%d" % t.n)
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
