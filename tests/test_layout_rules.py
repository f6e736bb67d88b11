"""The package's layout rules, checked from its source: module size, no import circles,
the store's faces, and the store's rooms importing one way.

Imports are read with `ast`, function-level ones and those for type checkers
included: an import moved into a function, or under `if TYPE_CHECKING:`, hides a
circle from the interpreter, not from a reader. A lazy face's names count as imports
of the modules that define them.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rewindfs import faces

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rewindfs"
MAX_LINES = 400
STORE = "rewindfs.store"
ROOMS = ("objects", "capture", "history", "projectgit", "maintenance", "foreign",
         "remote")  # bottom first


@dataclass(frozen=True)
class Import:
    module: str  # the module that imports
    line: int
    target: str  # the module imported (for `from X import y`: X, or X.y if a module)
    source: str  # the module the statement names (X)
    name: str | None  # for `from X import y`: y


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rewindfs"):
                    found.append(Import(module, node.lineno, alias.name, alias.name, None))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if not base.startswith("rewindfs"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in MODULES else base
                found.append(Import(module, node.lineno, target, base, alias.name))
    return found


ALL_IMPORTS = {m: imports_of(m) for m in MODULES}


def _load_faces() -> dict[str, tuple[dict[str, str], frozenset[str]]]:
    for name, path in MODULES.items():
        if path.name == "__init__.py" and "rewindfs.faces import face" in path.read_text():
            importlib.import_module(name)
    return dict(faces.TABLES)


FACES = _load_faces()


def import_graph() -> dict[str, set[str]]:
    """module -> modules it imports (anywhere in it), with faces followed."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, found in ALL_IMPORTS.items():
        for imp in found:
            if imp.target in MODULES and imp.target != module:
                graph[module].add(imp.target)
    for package, (names, whole) in FACES.items():
        graph[package] |= {source.partition(":")[0] for source in names.values()}
        graph[package] |= {f"{package}.{name}" for name in whole}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["rewindfs", "store"] else None


def allowed_rooms(room: str) -> set[str]:
    """What a room's face docstring says it may import ("May import: objects, capture.")."""
    doc = ast.get_docstring(ast.parse(MODULES[f"{STORE}.{room}"].read_text())) or ""
    line = next((ln for ln in doc.splitlines() if ln.startswith("May import:")), None)
    assert line is not None, f"{STORE}.{room}'s docstring has no 'May import:' line"
    return {word for word in re.findall(r"[a-z]+", line) if word in ROOMS}


# -- the rules ----------------------------------------------------------------------


def generated_modules() -> set[str]:
    """Modules written by scripts/gen_docs (data, not code: the rule on size is for code)."""
    from rewindfs.cli.help.generated import GENERATED

    return {module_name(ROOT / rel) for rel in GENERATED if rel.endswith(".py")}


def test_no_module_is_over_400_lines():
    generated = generated_modules()
    long = {name: n for name, path in MODULES.items()
            if name not in generated and (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by a real seam): {long}"


def test_every_module_says_what_it_is_for():
    missing = [name for name, path in MODULES.items()
               if not ast.get_docstring(ast.parse(path.read_text()))]
    assert not missing, f"modules without a docstring whose first line says what they do: {missing}"


def test_no_import_circles():
    found = cycles(import_graph())
    assert not found, f"import circles (function-level imports count): {found}"


def test_outside_the_store_only_its_faces_are_imported():
    public = {STORE, *(f"{STORE}.{room}" for room in ROOMS if f"{STORE}.{room}" in MODULES)}
    wrong = []
    for module, found in ALL_IMPORTS.items():
        if module == STORE or module.startswith(f"{STORE}."):
            continue
        for imp in found:
            if not imp.target.startswith(STORE):
                continue
            if imp.name is None:
                ok = imp.source in public
            else:
                ok = f"{imp.source}.{imp.name}" in public or \
                    imp.source in public and imp.name in _face_names(imp.source)
            if not ok:
                what = imp.source if imp.name is None else f"{imp.name} from {imp.source}"
                wrong.append(f"{module}:{imp.line} imports {what}")
    assert not wrong, "\n".join(["outside the store, import only what its faces offer "
                                 f"({sorted(public)}):", *wrong])


def _face_names(package: str) -> set[str]:
    names, whole = FACES[package]
    return {*names, *(path.rpartition(".")[2] for path in whole)}


def test_the_stores_rooms_import_one_way():
    assert set(FACES) >= {STORE, *(f"{STORE}.{r}" for r in ROOMS if f"{STORE}.{r}" in MODULES)}
    wrong = []
    for module, found in ALL_IMPORTS.items():
        room = room_of(module)
        if room is None:
            continue
        may = allowed_rooms(room) | {room}
        for imp in found:
            other = room_of(imp.target)
            if imp.target == STORE:
                wrong.append(f"{module}:{imp.line} imports the store's face (import the module)")
            elif other is not None and other not in may:
                wrong.append(f"{module}:{imp.line} imports {imp.target} ({room} may import "
                             f"{sorted(may - {room}) or 'no other room'})")
            elif imp.target.startswith("rewindfs.") and not imp.target.startswith(STORE) \
                    and imp.target not in ("rewindfs.errors", "rewindfs.faces", "rewindfs.lazylog",
                                           "rewindfs.portable"):
                wrong.append(f"{module}:{imp.line} imports {imp.target} (the store imports "
                             "nothing above it)")
    assert not wrong, "\n".join(wrong)


def test_rooms_say_what_they_may_import_in_the_order_of_the_store():
    for room in (r for r in ROOMS if f"{STORE}.{r}" in MODULES):
        below = set(ROOMS[: ROOMS.index(room)])
        assert allowed_rooms(room) <= below, f"{room} may only import rooms below it: {below}"


@pytest.mark.parametrize("package", sorted(FACES))
def test_a_face_offers_what_it_lists(package):
    """Every name resolves; a name that is also a module of the package is that module
    (else importing the module would silently replace the name on the package)."""
    module = importlib.import_module(package)
    names, whole = FACES[package]
    offered = {path.rpartition(".")[2]: path for path in whole}
    assert sorted(module.__all__) == sorted({*names, *offered})
    for path in whole:
        assert getattr(module, path.rpartition(".")[2]) is \
            importlib.import_module(f"{package}.{path}")
    for name in sorted(names):
        value = getattr(module, name)
        submodule = f"{package}.{name}"
        if submodule in MODULES:
            assert value is importlib.import_module(submodule), \
                f"{package}.{name} is both a module and another name"


def test_importing_the_faces_imports_no_git():
    """The faces are lazy: `import rewindfs.store` (and each room) loads neither pygit2
    nor any module of a room."""
    code = ("import sys\n"
            f"import {', '.join(sorted(FACES))}\n"
            "loaded = sorted(m for m in sys.modules if m == 'pygit2' or m.startswith('pygit2.')"
            f" or (m.startswith('{STORE}.') and m.count('.') > 2))\n"
            "print(loaded)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"importing the faces loaded {proc.stdout.strip()}"
