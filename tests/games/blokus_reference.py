"""A plain-Python Blokus reference: the rules of ``games/blokus/SPEC.md`` on sets of cells.

Written from the rules alone, with nothing from ``vecsim.games.blokus``: pieces come from
their own drawings, orientations from turning and mirroring sets of cells, and a placement is
a frozenset of board cells. Slow and obvious on purpose; the tests compare the kernels with it.
"""

from __future__ import annotations

SHAPES = {  # one drawing per piece, rows top to bottom
    "I1": "#", "I2": "##", "I3": "###", "V3": "##|#.", "I4": "####", "O4": "##|##",
    "T4": "###|.#.", "L4": "###|#..", "Z4": ".##|##.",
    "F": "##.|.##|.#.", "I5": "#####", "L5": "####|#...", "N": "###.|..##", "P": "###|##.",
    "T5": "#..|###|#..", "U": "##|#.|##", "V5": "###|#..|#..", "W": ".##|##.|#..",
    "X": ".#.|###|.#.", "Y": "####|.#..", "Z5": "#..|###|..#",
}
CLASSIC = (20, [(0, 0), (0, 19), (19, 19), (19, 0)])
DUO = (14, [(4, 4), (9, 9)])


def shape_cells(name):
    return frozenset((r, c) for r, line in enumerate(SHAPES[name].split("|"))
                     for c, ch in enumerate(line) if ch == "#")


def normalise(cells):
    r0 = min(r for r, _ in cells)
    c0 = min(c for _, c in cells)
    return frozenset((r - r0, c - c0) for r, c in cells)


def orientations(name):
    """Every distinct image of the piece under rotation and reflection, normalised."""
    out = set()
    cells = shape_cells(name)
    for _ in range(4):
        cells = frozenset((c, -r) for r, c in cells)
        out.add(normalise(cells))
        out.add(normalise(frozenset((r, -c) for r, c in cells)))
    return out


ORIENTATIONS = {name: orientations(name) for name in SHAPES}


def neighbours(cell):
    r, c = cell
    return {(r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)}


def diagonals(cell):
    r, c = cell
    return {(r - 1, c - 1), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c + 1)}


class ReferenceBlokus:
    """One game: ``owner`` maps each covered cell to its seat."""

    def __init__(self, variant=CLASSIC):
        self.size, self.starts = variant
        self.seats = len(self.starts)
        self.owner = {}
        self.hand = [set(SHAPES) for _ in range(self.seats)]
        self.last = [None] * self.seats
        self.out = [False] * self.seats
        self.to_move = 0
        self.over = False

    def own(self, seat):
        return {cell for cell, s in self.owner.items() if s == seat}

    def is_legal(self, seat, name, cells, own=None):
        """The rules, word for word: on the board, on free cells, first piece on the start
        cell, later pieces touching an own corner and no own edge (``own``: the seat's
        squares, if already at hand)."""
        if name not in self.hand[seat]:
            return False
        if normalise(cells) not in ORIENTATIONS[name]:
            return False
        if any(not (0 <= r < self.size and 0 <= c < self.size) for r, c in cells):
            return False
        if any(cell in self.owner for cell in cells):
            return False
        own = self.own(seat) if own is None else own
        if not own:
            return self.starts[seat] in cells
        if any(n in own for cell in cells for n in neighbours(cell)):
            return False
        return any(d in own for cell in cells for d in diagonals(cell))

    def legal_moves(self, seat):
        """Set of ``(name, cells)``: every placement that covers a cell diagonal to the seat's
        squares (or its start cell), kept when ``is_legal`` says so. A legal placement must
        cover such a cell, so nothing is missed."""
        return set(self._candidates(seat, stop_at_first=False))

    def has_move(self, seat):
        return any(True for _ in self._candidates(seat, stop_at_first=True))

    def _candidates(self, seat, stop_at_first):
        own = self.own(seat)
        targets = {d for cell in own for d in diagonals(cell)} - set(self.owner) if own else {self.starts[seat]}
        for name in self.hand[seat]:
            for shape in ORIENTATIONS[name]:
                seen = set()
                for tr, tc in targets:
                    for dr, dc in shape:
                        cells = frozenset((tr - dr + r, tc - dc + c) for r, c in shape)
                        if cells not in seen:
                            seen.add(cells)
                            if self.is_legal(seat, name, cells, own):
                                yield name, cells
                                if stop_at_first:
                                    return

    def legal_moves_brute_force(self, seat):
        """The same set from every orientation at every offset of the board (slow)."""
        own = self.own(seat)
        moves = set()
        for name in self.hand[seat]:
            for shape in ORIENTATIONS[name]:
                for r in range(self.size):
                    for c in range(self.size):
                        cells = frozenset((r + dr, c + dc) for dr, dc in shape)
                        if self.is_legal(seat, name, cells, own):
                            moves.add((name, cells))
        return moves

    def play(self, name, cells):
        """The seat to move places ``name`` on ``cells``; returns the seats that passed."""
        seat = self.to_move
        assert self.is_legal(seat, name, cells), (seat, name, sorted(cells))
        for cell in cells:
            self.owner[cell] = seat
        self.hand[seat].discard(name)
        self.last[seat] = name
        passed = []
        for step in range(1, self.seats + 1):
            q = (seat + step) % self.seats
            if self.out[q]:
                continue
            if self.has_move(q):
                self.to_move = q
                return passed
            self.out[q] = True
            passed.append(q)
        self.over = True
        return passed

    def score(self, seat):
        if not self.hand[seat]:
            return 15 + (5 if self.last[seat] == "I1" else 0)
        return -sum(len(shape_cells(name)) for name in self.hand[seat])
