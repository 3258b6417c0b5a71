"""The Python snippets of the README and docs/, for the tests that run them as written: each
follows a ``<!-- snippet: name -->`` line, and each name is used once across those files."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def readme_snippet(name: str) -> str:
    """The Python block that follows ``<!-- snippet: name -->`` in README.md or a page of docs/."""
    pattern = rf"<!-- snippet: {re.escape(name)} -->\n```python\n(.*?)```"
    found = [(doc, m.group(1)) for doc in DOCUMENTS for m in re.finditer(pattern, doc.read_text(), re.S)]
    if len(found) != 1:
        where = ", ".join(str(doc.relative_to(ROOT)) for doc, _ in found) or "none of README.md and docs/*.md"
        raise LookupError(f"'<!-- snippet: {name} -->' followed by a python block must appear once, "
                          f"but it is in {where}")
    return found[0][1]


def run_readme_snippet(name: str) -> dict:
    """Run a snippet of the README or docs/; returns the names it defined."""
    names: dict = {}
    exec(compile(readme_snippet(name), f"snippet {name}", "exec"), names)
    return names
