"""The plan of the house holds: every path the README's layout and docs/architecture.md name exists, the layers of
app/ import downwards only, no module of app/ is part of an import circle, no route module imports another (the
JSON API never imports a page), the services know nothing of the web, app/engines/ keeps a short top, and every
compiled twin is found, built and rebuilt from where it lives."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.engines.compiled import TWINS

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "architecture.md"]
TOP_DIRS = ("app", "tests", "bench", "templates", "static", "tokenizers", "docs", "scripts")
#: A path from the repository root, with ``:name`` after a file for something defined in it.
PATH = re.compile(r"(?<![\w./<>-])((?:%s)/[\w./-]*[\w/])(?::(\w+))?" % "|".join(TOP_DIRS))
#: A file or folder named in backticks without the root: ``registry/specs.py``, ``_lattice.c``, ``explain/``.
NAMED = re.compile(r"`([\w-]+(?:/[\w-]+)*(?:\.(?:py|c|h|html|js|css|md)|/))`")
#: A dotted name in app/: ``app.lab.algorithms.train`` (not a file name such as ``app.py``).
DOTTED = re.compile(
    r"(?<![\w./])(app\.(?:engines|features|lab|classroom|services|web|cli|main|settings|palette)(?:\.[A-Za-z_]\w*)*)"
)
#: What a description in the README's layout drawing names: a file or a folder, in the entry's folder.
LAYOUT_NAME = re.compile(r"(?<![\w./`-])([\w-]+(?:\.(?:py|c|h|html|js|css|md)|/))(?![\w/])")
SKIP_PARTS = {".venv", "node_modules", ".git", "__pycache__", ".pytest_cache", ".hypothesis"}


def _tree() -> list[str]:
    """Every file and folder of the repository (virtualenv, npm files and caches aside), as paths from the root."""
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if SKIP_PARTS.isdisjoint(rel.parts):
            out.append(rel.as_posix() + ("/" if path.is_dir() else ""))
    return out


def _defines(path: Path, name: str) -> bool:
    """Whether the module at ``path`` binds ``name`` at its top (a definition, an assignment or an import)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
    return False


def _module_file(dotted: str) -> Path | None:
    path = ROOT.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _resolves(dotted: str) -> bool:
    """A module of app/, or a name that the longest module prefix binds (``app.lab.algorithms.train``)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module = _module_file(".".join(parts[:i]))
        if module is not None:
            return i == len(parts) or _defines(module, parts[i])
    return False


def _layout_block(readme: str) -> list[str]:
    """The lines of the README's layout drawing: the code block under ``## Layout``."""
    section = readme.split("\n## Layout", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1].splitlines()[1:]


def _layout_paths(lines: list[str]) -> list[str]:
    """Every path the layout drawing names. An entry is a name at its indent (a folder ends with ``/``) inside the
    nearest folder above it with less indent; a line that starts with no such name continues the description above.
    The files and folders a description names are in its entry's folder (an entry's own, for a folder)."""
    out: list[str] = []
    folders: list[tuple[int, str]] = []  # (indent, path) of the folders that contain the current line
    here = ""
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        entry, _, description = line.strip().partition("  ")
        if re.fullmatch(r"[\w.-]+/?", entry):
            while folders and folders[-1][0] >= indent:
                folders.pop()
            parent = folders[-1][1] if folders else ""
            out.append(parent + entry)
            here = parent
            if entry.endswith("/"):
                folders.append((indent, parent + entry))
                here = parent + entry
        else:
            description = line.strip()
        out.extend(here + name for name in LAYOUT_NAME.findall(description))
    return out


def test_every_path_the_layout_and_the_architecture_name_exists():
    tree = _tree()
    missing = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for rel, name in PATH.findall(text):
            path = ROOT / rel
            if not path.exists():
                missing.append(f"{doc.name}: {rel}")
            elif name and path.suffix == ".py" and not _defines(path, name):
                missing.append(f"{doc.name}: {rel}:{name} ({name} is not defined there)")
        for named in NAMED.findall(text):
            if not (ROOT / named).exists() and not any(p == named or p.endswith("/" + named) for p in tree):
                missing.append(f"{doc.name}: `{named}` (no such file or folder)")
        for dotted in DOTTED.findall(text):
            if not _resolves(dotted):
                missing.append(f"{doc.name}: {dotted} (no such module or name)")
    for rel in _layout_paths(_layout_block((ROOT / "README.md").read_text(encoding="utf-8"))):
        if not (ROOT / rel).exists():
            missing.append(f"README.md layout: {rel}")
    assert not missing, "named but missing:\n" + "\n".join(missing)


def test_the_layout_drawing_is_read_as_paths():
    """The reader of the drawing understands nested folders, continued descriptions and files named in them."""
    lines = [
        "app/            the package: web/ -> engines/",
        "  engines/      the library: base.py (the contract), bpe/ (our BPE)",
        "                · registry/ (names), and/or tokenizer.json",
        "    sentencepiece/  .model files (proto.py)",
        "  palette.py    colours; cli.py",
        "tests/          the tests: conftest.py",
    ]
    assert _layout_paths(lines) == [
        "app/", "app/web/", "app/engines/",
        "app/engines/", "app/engines/base.py", "app/engines/bpe/", "app/engines/registry/",
        "app/engines/sentencepiece/", "app/engines/sentencepiece/proto.py",
        "app/palette.py", "app/cli.py",
        "tests/", "tests/conftest.py",
    ]


# -- imports --------------------------------------------------------------------------------------------------------


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / "app").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of app/ that ``module`` imports anywhere in its file (in functions and under TYPE_CHECKING too).
    ``from package import name`` imports the module ``package.name`` when there is one, else ``package``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            frm = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{frm}.{alias.name}" in modules:
                    out.add(f"{frm}.{alias.name}")
                elif frm in modules:
                    out.add(frm)
    out.discard(module)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(m, p, modules) for m, p in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (strongly connected components
    of more than one module, Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_of_app_is_part_of_an_import_circle():
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_circles_and_the_imports_that_make_them(tmp_path):
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}}) == [
        ["a", "b", "c"], ["e", "f"]
    ]
    # relative imports, a package's submodule named in `from . import`, and imports inside functions count
    (tmp_path / "p").mkdir()
    init, one = tmp_path / "p" / "__init__.py", tmp_path / "p" / "one.py"
    init.write_text("from . import one\n")
    one.write_text("def f():\n    from ..q import x\n    from . import two\n")
    modules = {"app.p": init, "app.p.one": one, "app.p.two": one, "app.q": one}
    assert _imports("app.p", init, modules) == {"app.p.one"}
    assert _imports("app.p.one", one, modules) == {"app.q", "app.p.two"}


#: The layers of app/, from the top: each imports only the layers below it.
LAYERS = ("app.web", "app.services", "app.classroom", "app.lab", "app.features", "app.engines")
#: What each part of app/ must never import: the layers above it, and the program's entry points.
NEVER = {
    layer: (*LAYERS[:i], "app.cli", "app.main") + (("app.settings",) if layer == "app.engines" else ())
    for i, layer in enumerate(LAYERS)
    if i > 0
}


@pytest.mark.parametrize("part", sorted(NEVER))
def test_each_layer_imports_only_the_layers_below_it(part):
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if module == part or module.startswith(part + ".")
        for target in targets
        if any(target == above or target.startswith(above + ".") for above in NEVER[part])
    )
    assert not wrong, wrong


def _under(module: str, part: str) -> bool:
    return module == part or module.startswith(part + ".")


def _route_modules() -> set[str]:
    """The modules of app/web/pages/ and app/web/api/ that define a ``router`` (one page, or one area of the API)."""
    out = set()
    for module, path in _modules().items():
        if not (_under(module, "app.web.pages") or _under(module, "app.web.api")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "router" for t in n.targets)
               for n in tree.body):
            out.add(module)
    return out


def test_routes_never_import_routes():
    """A page or an area of the JSON API changes alone: what two of them share is a service, a rendering helper,
    a dependency; never another route module (so the JSON API never depends on a page's HTML)."""
    routes = _route_modules()
    assert {"app.web.pages.playground", "app.web.pages.follow", "app.web.api.tokenize", "app.web.api.sessions"} <= routes
    graph = _graph()
    wrong = sorted(f"{m} imports {t}" for m in routes for t in graph[m] if t in routes)
    assert not wrong, wrong
    api = [m for m in _modules() if _under(m, "app.web.api")]
    wrong = sorted(f"{m} imports {t}" for m in api for t in graph[m] if _under(t, "app.web.pages"))
    assert not wrong, wrong


#: What the services must not know: the web (requests, responses, HTML).
WEB_PACKAGES = ("fastapi", "starlette", "sse_starlette", "jinja2", "markupsafe", "uvicorn")


def _external_imports(path: Path) -> set[str]:
    """The top-level packages outside app/ that a module imports anywhere in its file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out - {"app"}


def test_services_never_import_the_web():
    """Services take and return data: no request, no response, no template; the web layer calls them."""
    modules = {m: p for m, p in _modules().items() if _under(m, "app.services")}
    assert "app.services.catalog" in modules
    wrong = sorted(
        f"{m} imports {name}" for m, p in modules.items() for name in _external_imports(p) if name in WEB_PACKAGES
    )
    graph = _graph()
    wrong += sorted(f"{m} imports {t}" for m in modules for t in graph[m] if _under(t, "app.web"))
    assert not wrong, wrong


def test_the_rule_finders_see_routes_and_web_imports(tmp_path):
    """The two rules above read what they claim: a ``router`` at a module's top, and imports of the web anywhere."""
    page = tmp_path / "page.py"
    page.write_text("from fastapi import APIRouter\nrouter = APIRouter()\ndef f():\n    import starlette.responses\n")
    assert _external_imports(page) == {"fastapi", "starlette"}


# -- app/engines/ ---------------------------------------------------------------------------------------------------

FAMILIES = {"openai", "bpe", "sentencepiece", "wordpiece", "huggingface", "training"}


def test_the_engines_keep_a_short_top_of_core_modules_and_family_packages():
    top = sorted(
        p.name for p in (ROOT / "app" / "engines").iterdir()
        if p.name != "__pycache__" and p.suffix not in (".so", ".pyd")
    )
    assert len(top) <= 17, top
    assert FAMILIES | {"registry"} <= set(top)
    for family in FAMILIES | {"registry"}:
        assert (ROOT / "app" / "engines" / family / "__init__.py").is_file(), family


def test_no_two_packages_of_the_engines_import_each_other():
    """Packages of app/engines/ import one way only (``bpe/`` reads ``openai/``, never the other way): what two
    families share, such as a tokenizer.json's pipeline or SentencePiece's character map, lives where both import it
    (``pipeline/``), never inside one of them."""
    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 3 and parts[:2] == ["app", "engines"] else None

    arrows = {
        (package(m), package(t))
        for m, targets in _graph().items()
        for t in targets
        if package(m) and package(t) and package(m) != package(t)
    }
    assert ("bpe", "openai") in arrows and ("sentencepiece", "pipeline") in arrows
    both_ways = sorted(f"{a} <-> {b}" for a, b in arrows if (b, a) in arrows and a < b)
    assert not both_ways, both_ways
    assert _circles({a: {b for x, b in arrows if x == a} for a, _ in arrows}) == []


def test_every_compiled_twin_is_found_where_it_is_built():
    """``compiled.TWINS`` names every ``_*.c`` under app/engines/ by the module its path builds, and only those."""
    built = {
        ".".join(c.relative_to(ROOT).with_suffix("").parts) for c in (ROOT / "app" / "engines").rglob("_*.c")
    }
    assert set(TWINS.values()) == built
    assert all(name == module.rsplit(".", 1)[1] for name, module in TWINS.items())


def test_setup_builds_every_twin_with_the_shared_header_as_a_dependency():
    from setuptools._distutils.core import run_setup

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        extensions = run_setup("setup.py", stop_after="init").ext_modules
    finally:
        os.chdir(cwd)
    assert {e.name for e in extensions} == set(TWINS.values())
    for ext in extensions:
        assert ext.sources == ["/".join(ext.name.split(".")) + ".c"]
        assert {"app/engines/compiled/twins.h", "app/engines/compiled/frozen.h"} <= set(ext.depends)
        source = (ROOT / ext.sources[0]).read_text()
        assert '#include "twins.h"' in source, ext.name


@pytest.mark.skipif(not shutil.which("make"), reason="make is not installed (the Makefile is what is checked)")
@pytest.mark.parametrize("changed", ["app/engines/compiled/twins.h", "app/engines/compiled/frozen.h", *sorted(
    c.relative_to(ROOT).as_posix() for c in (ROOT / "app" / "engines").rglob("_*.c")
)])
def test_the_makefile_reinstalls_when_a_twin_or_the_header_changes(tmp_path, changed):
    """With an installed virtualenv newer than every file, ``make`` has nothing to do, unless a C file or the
    header changed (``-W``: as if it were newer): then it installs the project again, which rebuilds the twins."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    (venv / ".installed-dev").touch()

    def plan(*args: str) -> str:
        return subprocess.run(
            ["make", "-n", f"VENV={venv}", f"{venv}/.installed-dev", *args],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout

    assert "pip install" not in plan()
    assert "pip install -qq --no-deps -e ." in plan("-W", changed)
