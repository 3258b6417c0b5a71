"""Every code block of the README, CONTRIBUTING.md, games/README.md and docs/ runs as written, or
says in its first line why it cannot (``# not run by the tests: <why>``, visible to the reader).

- Python blocks run in order, one new interpreter per document, as a reader pastes them into
  one session. A block after ``<!-- snippet: NAME -->`` is run by the test that asks for
  ``NAME`` (``tests/readme.py``); a block after ``<!-- file: PATH -->`` is a file the text asks
  the reader to write: it is written to ``PATH`` in the run's folder, and the blocks after it
  use it.
- Bash blocks run commands that install, benchmark or train for minutes, so each says why it is
  not run; every ``vecsim`` command in them is still parsed by the CLI's own argument parser,
  so a renamed option fails here.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "games" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = "# not run by the tests: "
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(document: Path) -> list[tuple[str, str, str, int]]:
    """``(language, marker, text, line)`` of each fenced block; the marker is the HTML comment on
    the line before it (``<!-- snippet: x -->``), or ""."""
    text = document.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        before = text[:match.start()].rstrip().rsplit("\n", 1)[-1]
        marker = before if before.startswith("<!--") else ""
        found.append((match.group(1) or "text", marker, match.group(2), text.count("\n", 0, match.start()) + 1))
    return found


def _name(document: Path) -> str:
    return str(document.relative_to(ROOT))


def _runnable(document: Path) -> list[tuple[str, str, int]]:
    """(marker, text, line) of the document's Python blocks this file runs."""
    return [(marker, body, line) for language, marker, body, line in blocks(document)
            if language == "python" and not marker.startswith("<!-- snippet:") and not body.startswith(NOT_RUN)]


def test_every_block_runs_or_says_why_not():
    from readme import readme_snippet  # noqa: F401 (the named snippets' reader)

    used = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))
    silent = []
    for document in DOCUMENTS:
        for language, marker, body, line in blocks(document):
            where = f"{_name(document)}:{line}"
            if marker.startswith("<!-- snippet:"):
                name = marker.split(":", 1)[1].strip(" ->")
                if f'run_readme_snippet("{name}")' not in used:
                    silent.append(f"{where}: snippet {name!r} is run by no test")
            elif language == "python" or marker.startswith("<!-- file:"):
                continue  # run below
            elif language == "text" and document.name == "design.md":
                continue  # a folder tree, not code
            elif not body.startswith(NOT_RUN) or len(body.splitlines()[0]) <= len(NOT_RUN) + 3:
                silent.append(f"{where}: a {language} block neither run nor saying why ('{NOT_RUN}<why>')")
    assert silent == []


def _vecsim_commands(body: str) -> list[list[str]]:
    """The argument lists of every ``vecsim ...`` command in a bash block (after any ``VAR=value``)."""
    commands = []
    for line in body.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        starts = [0] + [k + 1 for k, w in enumerate(words) if w in ("&&", ";")]
        for start, stop in zip(starts, starts[1:] + [len(words) + 1]):
            command = words[start:stop - 1]
            while command and re.match(r"^\w+=", command[0]):
                command.pop(0)
            if command and command[0] in ("vecsim", ".venv/bin/vecsim"):
                commands.append(command[1:])
    return commands


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_every_vecsim_command_of_a_bash_block_parses(document):
    from vecsim.cli import build_parser

    parser = build_parser()
    for language, _, body, line in blocks(document):
        if language != "bash":
            continue
        for args in _vecsim_commands(body):
            try:
                parser.parse_args([a for a in args if a != "..."])
            except SystemExit:
                pytest.fail(f"{_name(document)}:{line}: 'vecsim {' '.join(args)}' does not parse")


@pytest.mark.slow
@pytest.mark.parametrize("document", [d for d in DOCUMENTS if _runnable(d)], ids=_name)
def test_the_python_blocks_run_as_written(document, tmp_path):
    script = []
    for marker, body, line in _runnable(document):
        if marker.startswith("<!-- file:"):
            path = tmp_path / marker.split(":", 1)[1].strip(" ->")
            path.parent.mkdir(parents=True, exist_ok=True)
            (path.parent / "__init__.py").touch()
            path.write_text(body)
        else:
            script.append(f"# {_name(document)}:{line}\n{body}")
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, '.')\n" + "\n".join(script)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{_name(document)}:\n{done.stderr[-4000:]}"
