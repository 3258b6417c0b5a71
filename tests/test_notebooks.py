"""Every notebook in ``notebooks/`` runs from top to bottom without a cell error."""

from __future__ import annotations

import os
import pathlib

import nbclient
import nbformat
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))


def test_notebooks_are_found():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    # The kernel imports vecsim from this checkout, installed or not.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=600,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error


def test_notebooks_are_stored_without_outputs():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path.name} has stored outputs"
