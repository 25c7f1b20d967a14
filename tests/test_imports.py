"""The floors: imports point down (import-linter's layers contract in pyproject.toml), and no
module of minigrad takes part in an import cycle, lazy (in-function) imports included."""

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _cycles(graph) -> list:
    """Strongly connected groups of more than one module (iterative Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(
                        graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        group.append(m)
                        if m == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_no_import_cycle_in_minigrad():
    graph = grimp.build_graph("minigrad", cache_dir=None)
    cycles = _cycles(graph)
    assert not cycles, "import cycles (lazy imports count):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_cycle():
    class Graph:
        modules = {"a", "b", "c"}
        edges = {"a": {"b"}, "b": {"a"}, "c": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges[m]

    assert _cycles(Graph()) == [["a", "b"]]


def test_floors_contract_holds():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a test dependency: pip install -e '.[test]'"
    run = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_long_functions_say_why():
    """No function in minigrad/ over 80 lines without a comment saying why it is long."""
    import ast

    long = []
    for path in sorted((ROOT / "minigrad").rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = "\n".join(lines[node.lineno - 1:node.end_lineno])
                if node.end_lineno - node.lineno + 1 > 80 and "# Long on purpose:" not in body:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long, "functions over 80 lines without a '# Long on purpose:' comment: " + \
        ", ".join(long)
