"""The buffer protocol (vecsim.engine.abi): every output described, caller-owned arrays of any
field written in place by the kernels, and buffers made for another version or capability set
refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import vecsim
from vecsim.engine.abi import PROTOCOL_VERSION, BufferSet, Capability
from vecsim.engine.engine import NO_RESET, SAME_STEP

from conftest import lenient

ALWAYS = ("obs", "rewards", "terminals", "truncations", "final_obs", "has_final")


def test_buffer_spec_describes_every_output_of_the_engine(game_id):
    eng = vecsim.make(game_id, 3)
    spec = eng.buffer_spec
    assert spec.version == PROTOCOL_VERSION and spec.game == eng.game.env_id
    assert spec.names()[:len(ALWAYS)] == ALWAYS
    own = {"obs": eng.obs, "rewards": eng.rewards, "terminals": eng.terminals, "truncations": eng.truncations,
           "final_obs": eng.final_obs, "has_final": eng.has_final, "masks": eng.masks, "events": eng.events,
           **eng.info_arrays}
    for field in spec.fields:
        arr = own[field.name]
        assert (arr.shape, arr.dtype) == (field.full_shape(3), field.dtype), field.name
        assert field.doc
    assert ("masks" in spec) == bool(eng.n_mask) == bool(spec.capabilities & Capability.MASKS)
    assert ("events" in spec) == bool(eng.event_names) == bool(spec.capabilities & Capability.EVENTS)
    assert set(eng.info_arrays) == {f.name for f in spec.fields if f.capability & (Capability.INFO | Capability.SEATS)}
    assert bool(spec.capabilities & Capability.SEATS) == (eng.num_seats > 1)
    assert not spec.capabilities & Capability.TELEMETRY
    assert spec.describe().count("\n") == len(spec.fields)


def _same_bits(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def test_every_field_in_caller_buffers_is_written_in_place(game_id, actions_for, rng):
    """Zero-copy: the kernels write the caller's arrays themselves, bit for bit what an engine
    with its own buffers writes, in every step mode."""
    n = 5
    ref = vecsim.make(game_id, n, **lenient(game_id))
    bufs = ref.buffer_spec.allocate(n)
    addresses = {k: v.ctypes.data for k, v in bufs.items()}
    eng = vecsim.make(game_id, n, buffers=bufs, **lenient(game_id))
    assert eng.obs is bufs["obs"] and eng.result.observations is bufs["obs"] and eng.rewards is bufs["rewards"]
    assert eng.masks is bufs["masks"] if "masks" in bufs else eng.n_mask == 0
    for key in eng.info_arrays:
        assert eng.info_arrays[key] is bufs[key]
    eng.reset(seed=7)
    ref.reset(seed=7)
    own = lambda e, name: e.info_arrays[name] if name in e.info_arrays else getattr(e, name)  # noqa: E731
    for step in range(24):
        acts = actions_for(eng, rng)
        if step % 3 == 0:
            eng.step_mode(SAME_STEP, acts)
            ref.step_mode(SAME_STEP, acts)
        else:
            for e in (eng, ref):
                e.step_mode(NO_RESET, acts)
                e.reset_envs(e.terminals | e.truncations)
        for name, arr in bufs.items():
            assert _same_bits(arr, own(ref, name)), (step, name)
    assert {k: v.ctypes.data for k, v in bufs.items()} == addresses


def test_buffers_may_be_rows_of_rollout_storage():
    n, steps = 4, 3
    spec = vecsim.make("Tetris-v0", n).buffer_spec
    storage = {f.name: np.zeros((steps, *f.full_shape(n)), f.dtype) for f in spec.fields if f.name != "final_obs"}
    ref = vecsim.make("Tetris-v0", n)
    ref.reset(seed=2)
    for t in range(steps):
        eng = vecsim.make("Tetris-v0", n, buffers={name: rows[t] for name, rows in storage.items()})
        eng.reset(seed=2)
        for _ in range(t + 1):
            eng.step(eng.masks.argmax(axis=1))
        ref.step(ref.masks.argmax(axis=1))
        assert np.array_equal(storage["obs"][t], ref.obs) and np.array_equal(storage["masks"][t], ref.masks)
        assert np.array_equal(storage["events"][t], ref.events)


def test_buffer_set_of_another_version_is_refused():
    spec = vecsim.make("Tetris-v0", 2).buffer_spec
    old = spec.allocate(2)
    old.version = PROTOCOL_VERSION + 1
    with pytest.raises(ValueError, match=f"buffer protocol version {PROTOCOL_VERSION + 1}.*follows version "
                                         f"{PROTOCOL_VERSION}"):
        vecsim.make("Tetris-v0", 2, buffers=old)


def test_buffer_set_of_another_capability_set_is_refused_naming_the_flags():
    # Drop mode has masks and events; reach mode adds the placement costs (INFO).
    drop = vecsim.make("Tetris-v0", 2).buffer_spec
    reach = vecsim.make("Tetris-v0", 2, action_mode="reach").buffer_spec
    assert reach.capabilities == drop.capabilities | Capability.INFO
    with pytest.raises(ValueError, match=r"only in the buffers: NONE; only in the engine: INFO"):
        vecsim.make("Tetris-v0", 2, action_mode="reach", buffers=drop.allocate(2))
    with pytest.raises(ValueError, match="buffers were made for capabilities MASKS|EVENTS"):
        vecsim.make("CartPole-v1", 2, buffers=drop.allocate(2, names=["rewards"]))


def test_a_field_of_a_capability_the_engine_lacks_is_refused_naming_the_flag():
    with pytest.raises(ValueError, match="buffer masks needs capability MASKS, which this CartPole-v1 engine lacks"):
        vecsim.make("CartPole-v1", 2, buffers={"masks": np.ones((2, 2), bool)})
    with pytest.raises(ValueError, match="buffer telemetry_written needs capability TELEMETRY"):
        vecsim.make("Tetris-v0", 2, buffers={"telemetry_written": np.zeros(2, np.int64)})


def test_new_fields_are_checked_like_the_first_four():
    spec = vecsim.make("Tetris-v0", 3, action_mode="reach").buffer_spec
    cost = spec["placement_cost"]
    with pytest.raises(ValueError, match=rf"buffer placement_cost must have shape \(3, {cost.shape[0]}\) and dtype "
                                         r"int16, but got shape .* and dtype int32"):
        vecsim.make("Tetris-v0", 3, action_mode="reach", buffers={"placement_cost": np.zeros((3, *cost.shape), np.int32)})
    with pytest.raises(ValueError, match=r"buffer masks must be contiguous \(C order\)"):
        vecsim.make("Tetris-v0", 3, buffers={"masks": np.ones((3, 80), bool, order="F")})
    shared = np.zeros(3, bool)
    with pytest.raises(ValueError, match="buffers terminals and has_final overlap"):
        vecsim.make("Tetris-v0", 3, buffers={"terminals": shared, "has_final": shared})
    with pytest.raises(TypeError, match="buffers must be a BufferSet or a dict"):
        vecsim.make("Tetris-v0", 3, buffers=[np.zeros(3)])
    with pytest.raises(ValueError, match="num_envs must be an int >= 1"):
        spec.allocate(0)
    with pytest.raises(KeyError, match="no field 'costs'"):
        spec.allocate(3, names=["costs"])


def test_starting_values_are_written_into_adopted_buffers():
    """A State-backed field starts as the game allocates it (Tetris's costs: -1, no pose)."""
    spec = vecsim.make("Tetris-v0", 2, action_mode="reach").buffer_spec
    bufs = spec.allocate(2)
    assert isinstance(bufs, BufferSet) and not bufs["masks"].any()
    eng = vecsim.make("Tetris-v0", 2, action_mode="reach", buffers=bufs)
    assert (bufs["placement_cost"] == -1).all() and bufs["masks"].all()
    assert eng.state.cost is bufs["placement_cost"]
