"""``ResetMask``: which envs to reset, as a packed ``uint64`` bitmask (after operant's API)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class ResetMask:
    """A set of env indices in ``[0, num_envs)`` stored as packed bits.

    Bit ``i % 64`` of word ``i // 64`` is env ``i``. ``iter_set`` visits only the set bits
    (O(words + set bits)), so a mostly empty mask over many envs costs little.

    Parameters
    ----------
    num_envs : int
        Number of envs the mask covers (>= 1).
    words : ndarray of uint64, shape ((num_envs + 63) // 64,), optional
        Initial packed bits (copied). Bits at or past ``num_envs`` must be zero.
    """

    __slots__ = ("num_envs", "words")

    def __init__(self, num_envs: int, words: np.ndarray | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"ResetMask num_envs must be an int >= 1, but got num_envs={num_envs!r}")
        self.num_envs = int(num_envs)
        n_words = (self.num_envs + 63) // 64
        if words is None:
            self.words = np.zeros(n_words, dtype=np.uint64)
        else:
            words = np.asarray(words)
            if words.dtype != np.uint64 or words.shape != (n_words,):
                raise ValueError(
                    f"ResetMask words must be uint64 of shape ({n_words},), got {words.dtype} {words.shape}"
                )
            tail = self.num_envs % 64
            if tail and int(words[-1]) >> tail:
                raise ValueError(f"ResetMask words set bits at or past num_envs={self.num_envs}")
            self.words = words.copy()

    # construction -----------------------------------------------------------------------
    @classmethod
    def from_bools(cls, flags) -> ResetMask:
        """The mask whose set bits are the True entries of a 1-D bool array."""
        flags = np.asarray(flags)
        if flags.dtype != np.bool_ or flags.ndim != 1:
            raise TypeError(f"ResetMask.from_bools needs a 1-D bool array, got {flags.dtype} {flags.shape}")
        mask = cls(flags.shape[0])
        mask._pack(flags)
        return mask

    @classmethod
    def from_done_flags(cls, terminals, truncations=None) -> ResetMask:
        """The envs that terminated or were truncated.

        Parameters
        ----------
        terminals : array_like of bool or of an integer dtype holding only 0 and 1, shape (num_envs,)
            Termination flags: ``StepResult.terminals`` (bool), or the ``uint8`` buffers that
            operant's ``write_terminals`` fills.
        truncations : array_like, optional
            Truncation flags of the same kinds and shape; without them the mask is
            ``terminals`` alone.

        Returns
        -------
        ResetMask
            Env ``i`` is set where ``terminals[i]`` or ``truncations[i]`` is true (nonzero).

        Raises
        ------
        TypeError
            For a dtype other than bool or integer (float, object...), naming it, or flags
            that are not 1-D.
        ValueError
            For an integer flag other than 0 and 1, naming the value and its index, or for
            ``terminals`` and ``truncations`` of different shapes.
        """
        terminals = _done_flags("terminals", terminals)
        if truncations is None:
            return cls.from_bools(terminals)
        truncations = _done_flags("truncations", truncations)
        if terminals.shape != truncations.shape:
            raise ValueError(f"terminals {terminals.shape} and truncations {truncations.shape} differ in shape")
        return cls.from_bools(terminals | truncations)

    @classmethod
    def all(cls, num_envs: int) -> ResetMask:
        """The mask with every env set."""
        mask = cls(num_envs)
        mask._pack(np.ones(mask.num_envs, dtype=bool))
        return mask

    def _pack(self, flags: np.ndarray) -> None:
        padded = np.zeros(self.words.shape[0] * 64, dtype=np.bool_)
        padded[: self.num_envs] = flags
        self.words[:] = np.packbits(padded, bitorder="little").view("<u8")

    # queries ----------------------------------------------------------------------------
    def _check(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"env index must be an int, got {i!r}")
        if not 0 <= i < self.num_envs:
            raise IndexError(f"env index {i} is out of range for num_envs={self.num_envs}")
        return int(i)

    def set(self, i: int) -> None:
        """Add env ``i``."""
        i = self._check(i)
        self.words[i >> 6] |= np.uint64(1 << (i & 63))

    def clear(self, i: int) -> None:
        """Remove env ``i``."""
        i = self._check(i)
        self.words[i >> 6] &= ~np.uint64(1 << (i & 63))

    def is_set(self, i: int) -> bool:
        """Whether env ``i`` is in the mask."""
        i = self._check(i)
        return bool((int(self.words[i >> 6]) >> (i & 63)) & 1)

    def any(self) -> bool:
        """Whether any env is set."""
        return bool(self.words.any())

    def count(self) -> int:
        """Number of envs set."""
        return int(np.bitwise_count(self.words).sum())

    def iter_set(self) -> Iterator[int]:
        """The set env indices in increasing order, in O(words + set bits)."""
        for w_index in np.flatnonzero(self.words):
            w = int(self.words[w_index])
            base = int(w_index) << 6
            while w:
                low = w & -w
                yield base + low.bit_length() - 1
                w ^= low

    def to_bools(self) -> np.ndarray:
        """A ``(num_envs,)`` bool array of the mask."""
        bits = np.unpackbits(self.words.view(np.uint8), bitorder="little")
        return bits[: self.num_envs].astype(bool)

    def __len__(self) -> int:
        return self.count()

    def __iter__(self) -> Iterator[int]:
        return self.iter_set()

    def __contains__(self, i) -> bool:
        return self.is_set(i)

    def __eq__(self, other) -> bool:
        return isinstance(other, ResetMask) and other.num_envs == self.num_envs and bool(
            np.array_equal(other.words, self.words)
        )

    def __repr__(self) -> str:
        shown = list(self.iter_set())
        text = ", ".join(map(str, shown[:16])) + (", ..." if len(shown) > 16 else "")
        return f"ResetMask(num_envs={self.num_envs}, set=[{text}])"


def _done_flags(name: str, flags) -> np.ndarray:
    """``flags`` as a 1-D bool array, from bools or from integers that are all 0 or 1."""
    flags = np.asarray(flags)
    if flags.dtype != np.bool_ and not np.issubdtype(flags.dtype, np.integer):
        raise TypeError(f"ResetMask.from_done_flags {name} must be bool or integer 0/1 flags, "
                        f"but got dtype {flags.dtype}")
    if flags.ndim != 1:
        raise TypeError(f"ResetMask.from_done_flags {name} must be 1-D, but got shape {flags.shape}")
    if flags.dtype == np.bool_:
        return flags
    bad = np.flatnonzero((flags != 0) & (flags != 1))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"ResetMask.from_done_flags {name} must hold only 0 and 1, "
                         f"but {name}[{k}] = {flags[k].item()!r}")
    return flags.astype(np.bool_)
