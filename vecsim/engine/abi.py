"""The buffer protocol: a versioned description of every array an engine writes, so that a
caller can own them (slices of its rollout storage, shared memory) and the kernels write
straight into them.

A ``BufferSpec`` lists an engine's outputs as ``BufferField``s (name, per-env shape, dtype,
layout, one line of documentation, the capability it needs), under a ``PROTOCOL_VERSION``
and the ``Capability`` flags derived from the game and the engine's options. ``Engine.buffer_spec``
gives an engine's; ``BufferSpec.allocate(num_envs)`` gives a ``BufferSet`` of arrays that
``Engine(..., buffers=...)`` adopts (any subset of the fields, as a ``BufferSet`` or a plain
dict). A ``BufferSet`` made for another protocol version or another set of capabilities is
refused, naming the version or the flags that differ; every array is checked for shape,
dtype, layout, writeability and overlap with the others. docs/design.md states the rules
for changing the version.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from vecsim.core import buffers as placed
from vecsim.engine.game import SEAT_FIELDS, GameSpec

#: Version of the buffer protocol: raised when a field changes meaning, shape or dtype, or is
#: removed; a new field under a new capability flag keeps it.
PROTOCOL_VERSION = 1


class Capability(enum.IntFlag):
    """What an engine's outputs include beyond observations, rewards and end flags."""

    NONE = 0
    MASKS = 1  #: legal-action masks (a game that declares ``write_mask``)
    EVENTS = 2  #: per-step event counters (``EVENTS``, the engine's ``invalid_action``)
    SEATS = 4  #: acting seat and per-seat rewards (``SEATS`` > 1)
    INFO = 8  #: the game's extra per-step arrays (``info_fields``)
    TELEMETRY = 16  #: the per-env telemetry ring (``TELEMETRY`` and ``telemetry=capacity``)


def _flag_names(flags: Capability) -> str:
    names = [flag.name for flag in Capability if flag and flag in flags]
    return "|".join(names) if names else "NONE"


#: Where an engine keeps a field: one of its output arrays, a ``State`` field, or the ring.
OUTPUT, STATE, RING = "output", "state", "ring"


@dataclass(frozen=True)
class BufferField:
    """One output array of an engine.

    Attributes
    ----------
    name : str
        The key in ``buffers`` (for a ``State``-backed field, its info key).
    shape : tuple of int
        Per-env shape: the array is ``(num_envs, *shape)``.
    dtype : numpy.dtype
    doc : str
        One line: what the kernels write there.
    capability : Capability
        The flag an engine needs to have this field (``Capability.NONE``: every engine).
    layouts : str
        Accepted memory layouts, the preferred (what ``allocate`` makes) first: ``"C"``, or
        ``"FC"``/``"CF"`` for the observations.
    home : str
        Where the engine keeps it: ``"output"`` (its own array), ``"state"`` (the ``State``
        field ``state_field``) or ``"ring"`` (the telemetry ring).
    state_field : str
        The ``State`` field of a ``"state"`` field ("" otherwise).
    """

    name: str
    shape: tuple
    dtype: np.dtype
    doc: str
    capability: Capability = Capability.NONE
    layouts: str = "C"
    home: str = OUTPUT
    state_field: str = ""

    def full_shape(self, num_envs: int) -> tuple:
        return (num_envs, *self.shape)

    def check(self, arr, num_envs: int) -> None:
        """Raise ``TypeError``/``ValueError`` naming this field unless ``arr`` can be adopted."""
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"buffer {self.name} must be a numpy array, but got {type(arr).__name__}")
        shape = self.full_shape(num_envs)
        if arr.shape != shape or arr.dtype != self.dtype:
            raise ValueError(f"buffer {self.name} must have shape {shape} and dtype {self.dtype}, "
                             f"but got shape {arr.shape} and dtype {arr.dtype}")
        if not arr.flags.writeable:
            raise ValueError(f"buffer {self.name} is read-only")
        if not any(arr.flags.c_contiguous if order == "C" else arr.flags.f_contiguous for order in self.layouts):
            raise ValueError(f"buffer {self.name} must be contiguous ({' or '.join(self.layouts)} order)")


class BufferSet(Mapping):
    """Arrays made by ``BufferSpec.allocate``: field name -> ``(num_envs, *shape)`` array,
    with the protocol version and capabilities they were made for. Pass it (or any part of
    it, as a dict) as ``Engine(..., buffers=...)``."""

    def __init__(self, arrays: dict, version: int, capabilities: Capability, num_envs: int):
        self._arrays = dict(arrays)
        self.version = version
        self.capabilities = Capability(capabilities)
        self.num_envs = num_envs

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __repr__(self) -> str:
        return (f"BufferSet(version={self.version}, capabilities={_flag_names(self.capabilities)}, "
                f"num_envs={self.num_envs}, fields={list(self._arrays)})")


@dataclass(frozen=True)
class BufferSpec:
    """Every output array of an engine: ``fields`` under ``version`` and ``capabilities``.

    Attributes
    ----------
    game : str
        The game's id (``"Tetris-v0"``).
    version : int
        ``PROTOCOL_VERSION`` of the protocol it follows.
    capabilities : Capability
    fields : tuple of BufferField
    """

    game: str
    version: int
    capabilities: Capability
    fields: tuple

    def names(self) -> tuple:
        return tuple(f.name for f in self.fields)

    def __contains__(self, name) -> bool:
        return name in self.names()

    def __getitem__(self, name: str) -> BufferField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.game}'s buffer spec has no field {name!r}; its fields are {list(self.names())}")

    def allocate(self, num_envs: int, names=None) -> BufferSet:
        """New zeroed arrays for ``num_envs`` envs (all fields, or those in ``names``), each
        in its preferred layout and placed apart within a page (``vecsim.core.buffers``)."""
        if isinstance(num_envs, (bool, np.bool_)) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, but got num_envs={num_envs!r}")
        chosen = self.fields if names is None else tuple(self[name] for name in names)
        arrays = {f.name: placed.zeros(f.full_shape(int(num_envs)), f.dtype, order=f.layouts[0]) for f in chosen}
        return BufferSet(arrays, self.version, self.capabilities, int(num_envs))

    def check(self, buffers, num_envs: int) -> dict:
        """The arrays of ``buffers`` (a ``BufferSet`` or a dict, any subset of the fields) that
        an engine of ``num_envs`` envs with this spec can adopt, as a dict; or ``TypeError`` /
        ``ValueError`` naming the version, capability flag or field that does not fit."""
        if isinstance(buffers, BufferSet):
            if buffers.version != self.version:
                raise ValueError(f"buffers were made for buffer protocol version {buffers.version}, but this engine "
                                 f"follows version {self.version}; allocate them from engine.buffer_spec")
            if buffers.capabilities != self.capabilities:
                extra = _flag_names(buffers.capabilities & ~self.capabilities)
                lacking = _flag_names(self.capabilities & ~buffers.capabilities)
                raise ValueError(f"buffers were made for capabilities {_flag_names(buffers.capabilities)}, but this "
                                 f"{self.game} engine has {_flag_names(self.capabilities)} (flags only in the "
                                 f"buffers: {extra}; only in the engine: {lacking}); allocate them from "
                                 f"engine.buffer_spec")
        elif not isinstance(buffers, Mapping):
            raise TypeError(f"buffers must be a BufferSet or a dict of arrays, but got {type(buffers).__name__}")
        own = self.names()
        for name in buffers:
            if name not in own:
                needs = _CAPABILITY_OF.get(name)
                if needs is not None:
                    raise ValueError(f"buffer {name} needs capability {needs.name}, which this {self.game} engine "
                                     f"lacks (its capabilities: {_flag_names(self.capabilities)})")
                raise TypeError(f"unknown buffer name(s) {sorted(set(buffers) - set(own))}; this {self.game} "
                                f"engine's buffers are {list(own)}")
        for name, arr in buffers.items():
            self[name].check(arr, num_envs)
        names = list(buffers)
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                if np.shares_memory(buffers[names[a]], buffers[names[b]]):
                    raise ValueError(f"buffers {names[a]} and {names[b]} overlap")
        return dict(buffers.items())

    def describe(self) -> str:
        """The fields as a text table: name, per-env shape, dtype, capability, doc."""
        lines = [f"{self.game} buffer protocol v{self.version}, capabilities {_flag_names(self.capabilities)}"]
        for f in self.fields:
            flag = f.capability.name if f.capability else "-"
            lines.append(f"  {f.name:<20} {str(f.shape):<12} {str(f.dtype):<8} {flag:<10} {f.doc}")
        return "\n".join(lines)


#: The capability each optional field of a fixed name needs (for a clear refusal).
_CAPABILITY_OF = {"masks": Capability.MASKS, "events": Capability.EVENTS, "acting_seat": Capability.SEATS,
                  "seat_rewards": Capability.SEATS, "telemetry_records": Capability.TELEMETRY,
                  "telemetry_written": Capability.TELEMETRY}


def buffer_spec(game: GameSpec, params, precision: str = "float64", telemetry: int = 0,
                mask_format: str = "bool") -> BufferSpec:
    """The ``BufferSpec`` of an engine of ``game`` with scalar ``params`` (its ``Params``) in
    ``precision``, with a telemetry ring of ``telemetry`` records per env (0: none), its masks
    bool or packed (``mask_format``; ``vecsim.engine.packed_masks``).

    Raises ``TypeError``/``ValueError`` as the engine does for a game whose spaces it cannot
    batch; checks nothing about ``params`` (``vecsim.engine.engine.build_params`` does)."""
    float_dtype = np.dtype(np.float32 if precision == "float32" else np.float64)
    obs_space = game.observation_space(params)
    if not isinstance(obs_space, spaces.Box):
        obs_space = spaces.flatten_space(obs_space)
    obs_dim = int(np.prod(obs_space.shape))
    obs_dtype = np.dtype(obs_space.dtype)
    obs_layouts = "FC" if game.hints.obs_order == "F" else "CF"
    action_space = game.action_space(params)
    n_mask = int(action_space.n) if game.has_action_mask else 0
    event_names = engine_event_names(game)
    fields = [
        BufferField("obs", (obs_dim,), obs_dtype, "flat observations (Gymnasium's flatten order)",
                    layouts=obs_layouts),
        BufferField("rewards", (), float_dtype, "reward of the last step (0 after a reset)"),
        BufferField("terminals", (), np.dtype(np.bool_), "the last step ended the episode (terminated)"),
        BufferField("truncations", (), np.dtype(np.bool_), "the last step reached max_episode_steps (truncated)"),
        BufferField("final_obs", (obs_dim,), obs_dtype, "SAME_STEP mode: the observation that ended the episode",
                    layouts=obs_layouts),
        BufferField("has_final", (), np.dtype(np.bool_), "SAME_STEP mode: final_obs holds this step's last observation"),
    ]
    caps = Capability.NONE
    if n_mask:
        caps |= Capability.MASKS
        if mask_format == "packed":
            fields.append(BufferField("masks", ((n_mask + 7) // 8,), np.dtype(np.uint8),
                                      "legal actions packed eight a byte (all set once the episode terminated)",
                                      Capability.MASKS))
        else:
            fields.append(BufferField("masks", (n_mask,), np.dtype(np.bool_),
                                      "legal actions (all True once the episode terminated)", Capability.MASKS))
    if event_names:
        caps |= Capability.EVENTS
        fields.append(BufferField("events", (len(event_names),), np.dtype(np.int64),
                                  f"per-step counters {', '.join(event_names)}", Capability.EVENTS))
    info = game.info_fields(params)
    if info:
        state = game.allocate_state(1, float_dtype.type, params)
        for key, field_name in info.items():
            arr = getattr(state, field_name)
            flag = Capability.SEATS if key in SEAT_FIELDS else Capability.INFO
            caps |= flag
            doc = ("the seat to act" if key == "acting_seat" else "each seat's reward of the last step"
                   if key == "seat_rewards" else f"the game's info[{key!r}] (State.{field_name})")
            fields.append(BufferField(key, tuple(arr.shape[1:]), arr.dtype, doc, flag, home=STATE,
                                      state_field=field_name))
    if telemetry:
        from vecsim.core.telemetry import RECORD_FIELDS

        caps |= Capability.TELEMETRY
        fields.append(BufferField("telemetry_records", (int(telemetry), len(RECORD_FIELDS)), np.dtype(np.int64),
                                  f"ring of ({', '.join(RECORD_FIELDS)}) records, record k at slot k % capacity",
                                  Capability.TELEMETRY, home=RING))
        fields.append(BufferField("telemetry_written", (), np.dtype(np.int64),
                                  "records pushed so far (monotonic; the ring's write count)",
                                  Capability.TELEMETRY, home=RING))
    return BufferSpec(game.env_id, PROTOCOL_VERSION, caps, tuple(fields))


def engine_event_names(game: GameSpec) -> tuple:
    """The event columns of an engine of ``game``: the game's ``EVENTS``, then the engine's
    ``invalid_action`` where the game's mask is binding."""
    return game.events + (("invalid_action",) if game.enforces_mask else ())
