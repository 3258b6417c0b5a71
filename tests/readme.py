"""The README's Python snippets, for the tests that run them as written: each follows a
``<!-- snippet: name -->`` line."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_snippet(name: str) -> str:
    """The Python block that follows ``<!-- snippet: name -->`` in README.md."""
    found = re.search(rf"<!-- snippet: {re.escape(name)} -->\n```python\n(.*?)```", README.read_text(), re.S)
    if found is None:
        raise LookupError(f"README.md has no '<!-- snippet: {name} -->' followed by a python block")
    return found.group(1)


def run_readme_snippet(name: str) -> dict:
    """Run a README snippet; returns the names it defined."""
    names: dict = {}
    exec(compile(readme_snippet(name), f"README.md:{name}", "exec"), names)
    return names
