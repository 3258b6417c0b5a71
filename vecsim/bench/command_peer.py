"""Peers given as commands: another program that times its own env steps, run by
``vecsim bench --peer-command NAME=COMMAND`` beside vecsim's cells, so that the ratio against
any implementation (a user's C environment, for instance) is measured in one run.

The protocol a command follows:

- ``COMMAND`` is split into words as a POSIX shell would (``shlex.split``) and run without a
  shell. In each word, ``{num_envs}``, ``{threads}`` and ``{seconds}`` are replaced by the
  batch size, the thread count of the run (Numba's, ``NUMBA_NUM_THREADS``: the most threads
  vecsim's kernels may use) and the seconds to spend stepping; ``{num_envs}`` must appear.
  Literal braces are written ``{{`` and ``}}``.
- The program steps ``num_envs`` envs for about ``seconds`` seconds (on at most ``threads``
  threads), then prints its env steps per second (a step of N envs counts N) as the first
  word of the last non-empty line of its standard output, e.g. ``6512345.0`` or
  ``6.5e6 steps/s``, and exits with status 0.

Module-level imports: the standard library only.
"""

from __future__ import annotations

import math
import re
import shlex
import string
import subprocess
from dataclasses import dataclass

#: The placeholders a command may use.
PLACEHOLDERS = ("num_envs", "threads", "seconds")
#: A peer's name: its column in ``vecsim bench``'s table and its ``impl`` in ``--json``.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
#: Slack beyond ``seconds`` before a command is stopped (start-up, building its envs).
TIMEOUT_SLACK_S = 60.0


@dataclass(frozen=True)
class CommandPeer:
    """A peer run as a command (see the module docstring for the protocol).

    Attributes
    ----------
    name : str
        Its column name in the table.
    words : tuple of str
        The command's words, placeholders not yet replaced.
    """

    name: str
    words: tuple

    @property
    def command(self) -> str:
        """The command as a shell line, placeholders not yet replaced."""
        return shlex.join(self.words)

    def argv(self, num_envs: int, threads: int, seconds: float) -> list[str]:
        """The words to run for one measurement."""
        values = {"num_envs": int(num_envs), "threads": int(threads), "seconds": float(seconds)}
        return [word.format(**values) for word in self.words]

    def measure(self, num_envs: int, threads: int, seconds: float) -> float:
        """Run the command once and return the steps per second it reports.

        Raises ``RuntimeError`` naming the peer where the command cannot start, fails, runs
        past ``seconds + TIMEOUT_SLACK_S`` or reports no rate.
        """
        argv = self.argv(num_envs, threads, seconds)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + TIMEOUT_SLACK_S)
        except FileNotFoundError:
            raise RuntimeError(f"peer {self.name}: command not found: {argv[0]!r}") from None
        except PermissionError:
            raise RuntimeError(f"peer {self.name}: command not executable: {argv[0]!r}") from None
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"peer {self.name}: {shlex.join(argv)} ran longer than "
                               f"{seconds + TIMEOUT_SLACK_S:g} s") from None
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-3:]
            raise RuntimeError(f"peer {self.name}: {shlex.join(argv)} exited with status {done.returncode}"
                               + (f": {' / '.join(tail)}" if tail else ""))
        return parse_rate(done.stdout, self.name)


def parse_rate(stdout: str, name: str = "peer") -> float:
    """The steps per second in a command's output: the first word of its last non-empty line,
    a finite number > 0. ``RuntimeError`` naming the peer otherwise."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise RuntimeError(f"peer {name}: the command printed nothing (it must print its steps/s last)")
    word = lines[-1].split()[0]
    try:
        rate = float(word)
    except ValueError:
        raise RuntimeError(f"peer {name}: the last line of its output must start with its steps/s, "
                           f"but got {lines[-1]!r}") from None
    if not (math.isfinite(rate) and rate > 0):
        raise RuntimeError(f"peer {name}: steps/s must be a finite number > 0, but got {word!r}")
    return rate


def parse_peer_command(spec: str) -> CommandPeer:
    """``"NAME=COMMAND"`` -> ``CommandPeer``; ``ValueError`` naming what is wrong in ``spec``."""
    if not isinstance(spec, str):
        raise TypeError(f"a peer command must be a str 'NAME=COMMAND', but got {spec!r}")
    name, sep, command = spec.partition("=")
    name = name.strip()
    if not sep:
        raise ValueError(f"a peer command must be 'NAME=COMMAND', but got {spec!r} (no '=')")
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"a peer command's NAME must be letters, digits and _.+- (starting with a letter or "
                         f"digit), but got NAME={name!r} in {spec!r}")
    try:
        words = tuple(shlex.split(command))
    except ValueError as exc:
        raise ValueError(f"peer {name}: cannot split COMMAND {command!r} into words: {exc}") from None
    if not words:
        raise ValueError(f"peer {name}: COMMAND is empty in {spec!r}")
    fields = set()
    for word in words:
        try:
            fields.update(f for _, f, _, _ in string.Formatter().parse(word) if f is not None)
        except ValueError as exc:
            raise ValueError(f"peer {name}: bad braces in {word!r} ({exc}; write literal braces as {{{{ and }}}})") \
                from None
    unknown = sorted(fields - set(PLACEHOLDERS))
    if unknown:
        raise ValueError(f"peer {name}: unknown placeholder {{{unknown[0]}}} in COMMAND {command!r}; "
                         f"the placeholders are {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    if "num_envs" not in fields:
        raise ValueError(f"peer {name}: COMMAND {command!r} must contain {{num_envs}} (the batch size it steps)")
    return CommandPeer(name, words)


def parse_peer_commands(specs) -> list[CommandPeer]:
    """Each of ``specs`` parsed (``parse_peer_command``); ``ValueError`` for a name given twice."""
    peers = [parse_peer_command(spec) for spec in specs or ()]
    names = [p.name for p in peers]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"peer name {name!r} is given twice; each --peer-command needs its own NAME")
    return peers
