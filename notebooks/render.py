"""Execute the notebooks in ``notebooks/``, store them executed, and write their figures as PNG files.

    python notebooks/render.py [--out DIR] [--dpi N] [--no-store] [NOTEBOOK ...]

Every notebook runs from top to bottom in a fresh kernel that imports vecsim from this
checkout. Each ``image/png`` output, in cell order, becomes ``<notebook stem>-<k>.png``
(``k`` from 1) in ``DIR`` (default ``docs/figures``), replacing that notebook's figures of an
earlier run. The notebook is written back with its outputs (figures at ``--dpi``, no cell
timings), so that it shows on a code host without running; ``--no-store`` leaves it as it is.

``docs/notebooks.md`` shows the figures; ``tests/test_notebooks.py`` runs this script into a
temporary folder without storing. Exit status 1 if a notebook failed (its cell and error are
printed).
"""

from __future__ import annotations

import argparse
import base64
import os
import pathlib
import re
import sys

import nbclient
import nbformat

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
DEFAULT_OUT = REPO_ROOT / "docs" / "figures"
#: Dots per inch of the saved figures: keeps the widest figure (14 in) near 1100 px and every
#: PNG well under 150 KB.
DPI = 80
#: Seconds one cell may run (the first cells compile Numba kernels on an empty cache).
TIMEOUT = 900
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def notebooks() -> list[pathlib.Path]:
    """The notebooks of ``notebooks/``, in name order (00_, 01_, ...)."""
    return sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def kernel_env() -> dict[str, str]:
    """The kernel's environment: this checkout first on ``PYTHONPATH``, inline figures."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["MPLBACKEND"] = INLINE_BACKEND  # an inherited "Agg" would show no figure at all
    return env


def execute(path: pathlib.Path, dpi: int = DPI, timeout: int = TIMEOUT) -> nbformat.NotebookNode:
    """Run the notebook at ``path`` in a fresh kernel and return it with its outputs.

    Raises ``nbclient.exceptions.CellExecutionError`` (naming the cell) on a cell error.
    """
    nb = nbformat.read(path, as_version=4)
    setup = nbformat.v4.new_code_cell(
        f'%config InlineBackend.print_figure_kwargs = {{"bbox_inches": "tight", "dpi": {int(dpi)}}}')
    nb.cells.insert(0, setup)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=timeout, record_timing=False,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=kernel_env())
    del nb.cells[0]
    _number_from_one(nb)
    return nb


def _number_from_one(nb: nbformat.NotebookNode) -> None:
    """Execution counts as if the removed setup cell had not run: the first code cell is 1."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.execution_count:
            cell.execution_count -= 1
            for output in cell.outputs:
                if output.get("execution_count"):
                    output["execution_count"] -= 1


def figures(nb: nbformat.NotebookNode) -> list[bytes]:
    """The PNG images among the outputs of ``nb``'s code cells, in order."""
    images = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                images.append(base64.b64decode(data["image/png"]))
    return images


def figure_name(notebook: pathlib.Path, k: int) -> str:
    """The file name of figure ``k`` (from 1) of ``notebook``."""
    return f"{notebook.stem}-{k}.png"


def render(path: pathlib.Path, out_dir: pathlib.Path, dpi: int = DPI, timeout: int = TIMEOUT,
           store: bool = False) -> list[pathlib.Path]:
    """Execute one notebook and write its figures into ``out_dir`` (and, where ``store``, the
    executed notebook over ``path``); return the figures' paths."""
    nb = execute(path, dpi, timeout)
    if store:
        nbformat.write(nb, path)
    images = figures(nb)
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = re.compile(re.escape(path.stem) + r"-\d+\.png")
    for old in out_dir.iterdir():
        if stale.fullmatch(old.name):
            old.unlink()
    written = []
    for k, data in enumerate(images, start=1):
        target = out_dir / figure_name(path, k)
        target.write_bytes(data)
        written.append(target)
    return written


def render_all(paths, out_dir: pathlib.Path, dpi: int = DPI, timeout: int = TIMEOUT, store: bool = False) -> dict:
    """Render each notebook of ``paths``; map each to its figures' paths, or to the exception
    that stopped it (the other notebooks still run)."""
    results = {}
    for path in paths:
        path = pathlib.Path(path)
        try:
            results[path] = render(path, out_dir, dpi, timeout, store)
        except Exception as exc:  # a cell error, a timeout or a dead kernel: report, go on
            results[path] = exc
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path,
                        help="notebooks to run (default: every notebook in notebooks/)")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                        help="folder for the PNG files (default: docs/figures)")
    parser.add_argument("--dpi", type=int, default=DPI, help="resolution of the figures (default: %(default)s)")
    parser.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds per cell (default: %(default)s)")
    parser.add_argument("--no-store", action="store_true", help="leave the notebooks as they are stored")
    args = parser.parse_args(argv)
    results = render_all(args.notebooks or notebooks(), args.out, args.dpi, args.timeout, store=not args.no_store)
    failed = 0
    for path, result in results.items():
        if isinstance(result, Exception):
            failed += 1
            print(f"{path.name}: FAILED\n{result}", file=sys.stderr)
        else:
            names = ", ".join(p.name for p in result) or "no figure"
            print(f"{path.name}: {names}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
