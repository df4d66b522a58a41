#!/usr/bin/env python3
"""Checks that grading/ stays two rooms and a hall: the student's commands
(grading/student/) and the grader (grading/grader/) never import each other,
what both use (grading/shared/) imports neither, no module has more than
MAX_LINES lines and no modules import each other in a cycle, so that a TA can
read one package without the other. Imports are read with `ast`, those inside
functions included. Before the real tree, the rules are run on a planted one
that breaks each of them: a check that finds nothing there is broken itself.

usage: check_grading_rooms.py [GRADING_DIR]   (default: this checkout's grading/)
"""
import ast
import os
import sys

MAX_LINES = 250
PACKAGES = ("student", "grader", "shared")
# What each package may import of the others.
ALLOWED = {"student": {"shared"}, "grader": {"shared"}, "shared": set()}
LAUNCHERS = ("workbook.py",)   # grading/'s one module outside the packages: it imports both


def modules(grading):
    """{"package.module": source} of every package module under grading."""
    found = {}
    for package in PACKAGES:
        folder = os.path.join(grading, package)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    found[f"{package}.{name[:-3]}"] = f.read()
    return found


def imported(name, source, known):
    """The package modules that module `name` imports (absolute or relative,
    at any depth of its code), as keys of known."""
    package = name.split(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package if node.level else (node.module or "")
            if node.level and node.module:
                base += "." + node.module
            # `from pkg import mod` names modules, `from pkg.mod import f` one module.
            candidates = [f"{base}.{alias.name}" for alias in node.names
                          if f"{base}.{alias.name}" in known] or [base]
        else:
            continue
        for candidate in candidates:
            if candidate in PACKAGES:   # the package itself: its __init__.py
                candidate += ".__init__"
            if candidate in known:
                targets.add(candidate)
    targets.discard(name)
    return targets


def problems_of(sources):
    """One line per broken rule in sources ({"package.module": text})."""
    problems = []
    graph = {name: imported(name, text, sources) for name, text in sources.items()}
    for name, text in sources.items():
        lines = text.count("\n")
        if lines > MAX_LINES:
            problems.append(f"grading/{name.replace('.', '/')}.py has {lines} lines (at most "
                            f"{MAX_LINES}: split it by responsibility)")
        package = name.split(".")[0]
        for target in sorted(graph[name]):
            other = target.split(".")[0]
            if other != package and other not in ALLOWED[package]:
                problems.append(f"grading/{name.replace('.', '/')}.py imports {target}: {package}/ "
                                f"may import only {', '.join(sorted(ALLOWED[package])) or 'itself'}")
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return problems


def cycles(graph):
    """One cycle per strongly connected group of modules that import each
    other (depth-first search; the first cycle found in each)."""
    found, state = [], {}     # state: 1 on the current path, 2 done

    def visit(node, path):
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                found.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


# A tree that breaks every rule once: each must be reported.
PLANTED = {
    "student.a": "from grader import judge\n",
    "grader.judge": "from student import a\n" + "x = 1\n" * (MAX_LINES + 1),
    "shared.labs": "from . import util\n",
    "shared.util": "def f():\n    from shared import labs\n",
}
PLANTED_FINDINGS = ("student/a.py imports grader.judge", "grader/judge.py imports student.a",
                    "grader/judge.py has", "import cycle: shared.labs -> shared.util -> shared.labs",
                    "import cycle: grader.judge -> student.a -> grader.judge")


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(sys.argv) > 2:
        print("usage: check_grading_rooms.py [GRADING_DIR]", file=sys.stderr)
        return 2
    grading = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grading")
    planted = "\n".join(problems_of(PLANTED))
    missed = [finding for finding in PLANTED_FINDINGS if finding not in planted]
    if missed:
        print("FAIL: the check misses planted problems: " + "; ".join(missed) + "\nIt found:\n"
              + planted)
        return 1
    loose = sorted(name for name in os.listdir(grading)
                   if name.endswith(".py") and name not in LAUNCHERS)
    problems = [f"grading/{name} is outside the packages ({', '.join(PACKAGES)})" for name in loose]
    problems += [f"grading/{package}/__init__.py is missing" for package in PACKAGES
                 if not os.path.isfile(os.path.join(grading, package, "__init__.py"))]
    sources = modules(grading)
    problems += problems_of(sources)
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"grading/: {len(sources)} modules in {', '.join(PACKAGES)}; none over {MAX_LINES} "
              "lines, no import across the rooms, no import cycle")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
