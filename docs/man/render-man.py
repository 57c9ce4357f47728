#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Render a man page from its markdown source and the program's own --help.

    render-man.py SOURCE.md OUTPUT PROGRAM VERSION

The source holds the prose (NAME, DESCRIPTION, EXIT STATUS, ...) in a small
markdown: '# title' (the .TH line), '## SECTION', paragraphs, '- ' lists,
indented examples and `code`. A line '@OPTIONS@' becomes the options of
`PROGRAM --help`; '@COMMANDS@' becomes each command that `PROGRAM --help`
lists, with the options of `PROGRAM COMMAND --help`. Options thus come from
the code and cannot drift from it."""

import os
import re
import subprocess
import sys


def esc(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"`([^`]*)`", r"\\fB\1\\fR", text)


def line_start(text):
    """Lines starting with . or ' are requests to roff: guard them."""
    return "\\&" + text if text[:1] in (".", "'") else text


def run_help(argv):
    """`argv --help`: every command answers it, a refused one included."""
    env = dict(os.environ, LC_ALL="C", LANG="C")
    p = subprocess.run(argv + ["--help"], capture_output=True, text=True,
                       env=env)
    if p.returncode != 0:
        sys.exit("render-man: %s --help exited %d: %s"
                 % (" ".join(argv), p.returncode, p.stderr))
    return p.stdout


def options(help_text):
    """(flags, argument, description) of each option, --help left out."""
    out = []
    section = None
    for line in help_text.splitlines():
        if line.endswith("Options:"):
            section = line
            continue
        m = re.match(r"^  (-\w, )?(--[\w-]+)(=(\S+))?\s{2,}(.*)$", line)
        if section and m and m.group(2) != "--help" and \
                not m.group(2).startswith("--help-"):
            out.append(((m.group(1) or "") + m.group(2), m.group(4),
                        m.group(5)))
    return out


def render_options(opts):
    lines = []
    for flags, arg, desc in opts:
        lines.append(".TP")
        lines.append(", ".join("\\fB%s\\fR" % esc(f)
                               for f in flags.split(", ")) +
                     ("=\\fI%s\\fR" % esc(arg) if arg else ""))
        lines.append(line_start(esc(desc)))
    return lines


def commands(help_text):
    out = []
    inside = False
    for line in help_text.splitlines():
        if line.startswith("Commands:"):
            inside = True
            continue
        if inside:
            m = re.match(r"^  (\S+)\s+(.*)$", line)
            if not m:
                break
            out.append((m.group(1), m.group(2)))
    return out


def render_commands(program):
    lines = []
    for name, summary in commands(run_help([program])):
        help_text = run_help([program, name])
        lines.append(".SS %s" % esc(name))
        lines.append(line_start(esc(summary[:1].upper() + summary[1:] +
                                    ".")))
        usage = re.search(r"^Usage:\n\s+(.*)$", help_text, re.M)
        if usage:
            lines += [".PP", "\\fB%s\\fR" % esc(usage.group(1).replace(
                "[OPTION?]", "[OPTION...]").replace("[OPTION\u2026]",
                                                     "[OPTION...]"))]
        lines += render_options(options(help_text))
    return lines


def render(source, program, version):
    out = []
    para = []
    in_list = False

    def flush():
        if para:
            out.append(".PP")
            out.append(line_start(esc(" ".join(para))))
            para.clear()

    lines = open(source).read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("# "):
            name, section = line[2:].split()[:2]
            out.append('.TH %s %s "" "vfio-gpu-p2p %s" "vfio-gpu-p2p"'
                       % (name.upper(), section, version))
        elif line.startswith("## "):
            flush()
            out.append(".SH %s" % line[3:].upper())
        elif line.strip() == "@OPTIONS@":
            flush()
            out += render_options(options(run_help([program])))
        elif line.strip() == "@COMMANDS@":
            flush()
            out += render_commands(program)
        elif line.startswith("    "):
            flush()
            out += [".PP", ".RS 4", ".nf"]
            while i < len(lines) and (lines[i].startswith("    ") or
                                      not lines[i].strip()):
                out.append(line_start(esc(lines[i][4:])))
                i += 1
            while out[-1] == "":
                out.pop()
            out += [".fi", ".RE"]
            continue
        elif line.startswith("- "):
            flush()
            item = [line[2:]]
            while i + 1 < len(lines) and lines[i + 1].startswith("  ") and \
                    not lines[i + 1].startswith("    "):
                i += 1
                item.append(lines[i].strip())
            out += [".IP \\(bu 2", line_start(esc(" ".join(item)))]
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out) + "\n"


def main():
    source, output, program, version = sys.argv[1:5]
    text = render(source, program, version)
    tmp = output + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, output)


if __name__ == "__main__":
    main()
