"""Every notebook in ``notebooks/`` runs from top to bottom through ``notebooks/render.py``,
and gives the figures that ``docs/notebooks.md`` shows."""

from __future__ import annotations

import importlib.util
import pathlib
import re

import matplotlib.image
import nbformat
import numpy as np
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
PAGE = REPO_ROOT / "docs" / "notebooks.md"
COMMITTED = REPO_ROOT / "docs" / "figures"
MIN_BYTES = 2_000  # a blank or tiny image is smaller
MAX_BYTES = 150_000
MIN_SIDE = 100  # pixels


def _load_render():
    spec = importlib.util.spec_from_file_location("notebooks_render", REPO_ROOT / "notebooks" / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = _load_render()


def page_figures() -> list[str]:
    """The PNG files ``docs/notebooks.md`` shows, in page order."""
    return re.findall(r"\]\(figures/([^)\s]+\.png)\)", PAGE.read_text())


def figures_of(notebook: pathlib.Path) -> list[str]:
    prefix = re.compile(re.escape(notebook.stem) + r"-\d+\.png")
    return [name for name in page_figures() if prefix.fullmatch(name)]


def assert_valid_png(path: pathlib.Path) -> None:
    size = path.stat().st_size
    assert MIN_BYTES <= size <= MAX_BYTES, f"{path.name}: {size} bytes, not in [{MIN_BYTES}, {MAX_BYTES}]"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG file"
    pixels = matplotlib.image.imread(path)  # decodes the whole image
    assert pixels.ndim == 3 and min(pixels.shape[:2]) >= MIN_SIDE, f"{path.name}: {pixels.shape}"
    assert np.ptp(pixels[..., :3]) > 0, f"{path.name} is a single colour"


def test_notebooks_are_found():
    assert NOTEBOOKS, "notebooks/ holds no notebook"
    assert render.notebooks() == NOTEBOOKS


def test_notebooks_are_stored_executed_with_their_figures_and_link_their_page():
    """A notebook shows on a code host without running: every code cell stored run, in order,
    its figures the page's (small: at render.py's DPI), and its first cell links the page."""
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        code = [cell for cell in nb.cells if cell.cell_type == "code"]
        assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), \
            f"{path.name} is not stored executed: python notebooks/render.py {path.name}"
        errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
        assert errors == [], f"{path.name} is stored with an error"
        images = render.figures(nb)
        assert len(images) == len(figures_of(path)), f"{path.name}: stored figures differ from docs/notebooks.md"
        assert all(len(image) <= MAX_BYTES for image in images), f"{path.name}: a stored figure is too large"
        assert "../docs/notebooks.md" in nb.cells[0].source, f"{path.name}'s first cell does not link its page"


def test_page_shows_figures_of_every_notebook():
    for path in NOTEBOOKS:
        assert f"../notebooks/{path.name}" in PAGE.read_text(), f"docs/notebooks.md does not link {path.name}"
        names = figures_of(path)
        assert names == [render.figure_name(path, k) for k in range(1, len(names) + 1)], names
    known = {name for path in NOTEBOOKS for name in figures_of(path)}
    assert set(page_figures()) == known, "docs/notebooks.md shows a figure of no notebook"


def test_committed_figures_are_the_page_figures():
    committed = sorted(p.name for p in COMMITTED.glob("*.png"))
    assert committed == sorted(page_figures()), "run: python notebooks/render.py"
    for name in committed:
        assert_valid_png(COMMITTED / name)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """``rendered(path)``: the figures render.py wrote for the notebook at ``path``, or its
    error; each notebook runs once, when a test first asks for it (tests/conftest.py puts a
    notebook's tests on one worker, and the notebooks on several)."""
    out = tmp_path_factory.mktemp("figures")
    done = {}

    def result(path):
        if path not in done:
            done.update(render.render_all([path], out))
        return done[path]

    return result


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, rendered):
    result = rendered(path)
    if isinstance(result, Exception):
        pytest.fail(f"{path.name} failed:\n{result}", pytrace=False)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_gives_the_page_figures(path, rendered):
    result = rendered(path)
    if isinstance(result, Exception):
        pytest.skip(f"{path.name} failed (test_notebook_runs)")
    assert [p.name for p in result] == figures_of(path)
    for png in result:
        assert_valid_png(png)
