"""The optional extras of ``pip install "vecsim[...]"``, and the error that names the one missing."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str, needed_by: str) -> ModuleType:
    """Import ``module`` for ``needed_by`` (a vecsim module or command), or raise
    ``ModuleNotFoundError`` saying which extra installs it: ``pip install "vecsim[extra]"``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f'{needed_by} needs {exc.name}, which is not installed: '
                                  f'pip install "vecsim[{extra}]"', name=exc.name) from exc
