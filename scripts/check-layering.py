#!/usr/bin/env python3
"""Checks that graft's libraries depend on each other only the way the table allows.

    scripts/check-layering.py [--root DIR] [--table FILE] [--links FILE]

The table (scripts/layering.txt, explained in docs/architecture.md, "Layering")
names each library, the folders it owns and the libraries it uses. The
libraries share include directories, so the compiler would accept an upward
include; this script does not. It reports

  * an #include of a graft header ("graft/..." or <graft/...>) owned by a
    library that is neither the includer's own nor one it uses, directly or
    through the libraries it uses;
  * a quoted include that resolves, relative to the including file, into
    another library's folders (a private header reached around the API);
  * a "graft/..." include that resolves to no header of any library;
  * a C++ file under one of the table's top-level folders that no library owns;
  * with --links, a CMake target linking a graft library it may not use (the
    file has one `target=lib;lib;...` line per target; CMake generates it);
  * a table whose uses form a cycle or name an unknown library (exit 2).

Exit status: 0 when everything points the allowed way, 1 on a violation,
2 when the table or the arguments are wrong. Needs only the standard library.
"""

import argparse
import configparser
import os
import re
import sys

CPP_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cxx", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


class TableError(Exception):
    pass


def load_table(path):
    """Returns {library: (owned folders, direct uses)} in file order."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f)
    except (OSError, configparser.Error) as e:
        raise TableError(f"{path}: {e}")
    table = {}
    for name in parser.sections():
        owns = parser.get(name, "owns", fallback="").split()
        uses = parser.get(name, "uses", fallback="").split()
        if not owns:
            raise TableError(f"{path}: [{name}] owns no folder")
        table[name] = ([os.path.normpath(o) for o in owns], uses)
    for name, (_, uses) in table.items():
        for u in uses:
            if u not in table:
                raise TableError(f"{path}: [{name}] uses unknown library '{u}'")
    # A cycle would make "the direction" meaningless: reject the table.
    state = {}

    def visit(name, stack):
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            cycle = stack[stack.index(name):] + [name]
            raise TableError(f"{path}: the uses form a cycle: {' -> '.join(cycle)}")
        state[name] = "open"
        for u in table[name][1]:
            visit(u, stack + [name])
        state[name] = "done"

    for name in table:
        visit(name, [])
    return table


def allowed_closure(table):
    """{library: set of libraries it may include or link, itself included}."""
    closure = {}

    def reach(name):
        if name not in closure:
            out = {name}
            for u in table[name][1]:
                out |= reach(u)
            closure[name] = out
        return closure[name]

    for name in table:
        reach(name)
    return closure


def make_owner(table):
    """A function from a root-relative path to the library owning it (or None)."""
    folders = sorted(((folder, name) for name, (owns, _) in table.items() for folder in owns),
                     key=lambda fn: -len(fn[0]))

    def owner(rel):
        for folder, name in folders:
            if rel == folder or rel.startswith(folder + os.sep):
                return name
        return None

    return owner


def include_roots(table):
    """The include directories: every owned folder's prefix ending in 'include'."""
    roots = set()
    for owns, _ in table.values():
        for folder in owns:
            parts = folder.split(os.sep)
            if "include" in parts:
                roots.add(os.sep.join(parts[: parts.index("include") + 1]))
            elif os.path.basename(folder) != "include":
                roots.add(os.path.join(folder, "include"))
    return sorted(roots)


def describe(libs):
    return ", ".join(sorted(libs)) if libs else "nothing"


def check_tree(root, table, closure, out):
    owner = make_owner(table)
    roots = include_roots(table)
    top_levels = sorted({owns.split(os.sep)[0] for owns_list, _ in table.values() for owns in owns_list})
    violations = 0
    scanned = 0

    def report(msg):
        nonlocal violations
        violations += 1
        out.write(msg + "\n")

    for top in top_levels:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not d.startswith("build"))
            for fname in sorted(filenames):
                if not fname.endswith(CPP_SUFFIXES):
                    continue
                path = os.path.join(dirpath, fname)
                rel = os.path.relpath(path, root)
                lib = owner(rel)
                if lib is None:
                    report(f"{rel}: belongs to no library in the layering table; add its folder "
                           f"to a section's 'owns'")
                    continue
                scanned += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.readlines()
                for lineno, line in enumerate(lines, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    quote, inc = m.groups()
                    target = None
                    if inc.startswith("graft/"):
                        for r in roots:
                            if os.path.isfile(os.path.join(root, r, inc)):
                                target = os.path.normpath(os.path.join(r, inc))
                                break
                        if target is None:
                            report(f"{rel}:{lineno}: includes {inc}, which is no header of any "
                                   f"library in the layering table")
                            continue
                    elif quote == '"':
                        cand = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                        if not os.path.isfile(os.path.join(root, cand)):
                            continue  # found through a target's own include path
                        target = cand
                    else:
                        continue  # a system or third-party header
                    to = owner(target)
                    if to is None or to in closure[lib]:
                        continue
                    report(f"{rel}:{lineno}: {lib} includes {inc} ({to}); {lib} may use "
                           f"{describe(closure[lib] - {lib})}")
    return violations, scanned


def check_links(links_path, table, closure, out):
    violations = 0
    try:
        with open(links_path, encoding="utf-8") as f:
            lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    except OSError as e:
        raise TableError(f"{links_path}: {e}")
    for line in lines:
        target, _, libs = line.partition("=")
        if target not in table:
            continue
        for lib in libs.split(";"):
            lib = lib.strip()
            if lib.startswith("graft::"):
                lib = "graft_" + lib[len("graft::"):]
            if lib in table and lib not in closure[target]:
                violations += 1
                out.write(f"{links_path}: target {target} links {lib}; {target} may use "
                          f"{describe(closure[target] - {target})}\n")
    return violations


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the source tree (default: this repository)")
    ap.add_argument("--table", help="the layering table (default: ROOT/scripts/layering.txt)")
    ap.add_argument("--links", help="CMake-generated target=lib;lib lines to check too")
    args = ap.parse_args(argv)
    table_path = args.table or os.path.join(args.root, "scripts", "layering.txt")
    try:
        table = load_table(table_path)
        closure = allowed_closure(table)
        violations, scanned = check_tree(args.root, table, closure, sys.stdout)
        if args.links:
            violations += check_links(args.links, table, closure, sys.stdout)
    except TableError as e:
        print(f"check-layering: error: {e}", file=sys.stderr)
        return 2
    if violations:
        print(f"check-layering: {violations} dependenc{'y' if violations == 1 else 'ies'} against "
              f"the direction in {table_path} (see docs/architecture.md, \"Layering\")")
        return 1
    print(f"check-layering: {scanned} files of {len(table)} libraries include and link only downward")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
