"""The dependency direction of docs/design.md that a folder's job rests on: ``games/`` and
``planners/`` hold rules and planners, and import vecsim's core alone (``vecsim.core``, and one
another), never the engine, the front ends or the layers above. Benchmarks, trainers and
collector presets of a game live with the benchmarks, trainers and collectors."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("vecsim.core", "vecsim.games", "vecsim.planners")


def _vecsim_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every vecsim import in the file, at any depth (inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{alias.name}")
                                                     for alias in node.names if node.module == "vecsim"]
    return [(line, name) for line, name in found if name == "vecsim" or name.startswith("vecsim.")]


def test_games_and_planners_import_vecsims_core_alone():
    wrong = []
    for folder in ("games", "planners"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, name in _vecsim_imports(path):
                if not any(name == top or name.startswith(top + ".") for top in ALLOWED):
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert wrong == []


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from vecsim.engine.codegen import load_game_module\n    import vecsim\n")
    assert _vecsim_imports(module) == [(2, "vecsim.engine.codegen"), (3, "vecsim")]
