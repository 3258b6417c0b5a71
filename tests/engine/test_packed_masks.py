"""Packed legal-action masks (``vecsim.engine.packed_masks``): ``Engine.packed_masks`` and the
VectorEnv's ``mask_format="packed"`` equal ``numpy.packbits`` of the bool masks, little bit
order, on Blokus classic (36,400 actions, whole bytes) and Duo (17,836: a last byte half used),
through play, terminated envs' all-True rows and resets, in every autoreset mode; an engine
with ``mask_format="packed"`` (the game's kernel writes the bits, no bool mask) gives the same
games and refuses or flags the same illegal actions as a bool one."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import vecsim
from vecsim.engine.packed_masks import pack_mask_rows

CLASSIC, DUO = "vecsim/Blokus-v0", "vecsim/BlokusDuo-v0"


def packbits(masks):
    return np.packbits(masks, axis=1, bitorder="little")


def random_legal(masks, rng):
    return (rng.random(masks.shape) * masks).argmax(axis=1)


@pytest.mark.parametrize("blokus_id", [CLASSIC, DUO])
def test_packed_masks_equal_numpy_packbits_of_the_bool_masks_through_whole_games(blokus_id):
    eng = vecsim.make(blokus_id, 3)
    eng.reset(seed=4)
    rng = np.random.default_rng(4)
    terminated = 0
    for _ in range(120):
        packed = eng.packed_masks()
        np.testing.assert_array_equal(packed, packbits(eng.masks))
        back = np.unpackbits(packed, axis=1, count=eng.masks.shape[1], bitorder="little").astype(bool)
        np.testing.assert_array_equal(back, eng.masks)
        eng.step(random_legal(eng.masks, rng))
        terminated += int(eng.terminals.sum())
    assert terminated >= 1  # an all-True row (a finished game) was packed too


def test_packed_masks_are_written_into_the_callers_array_or_refused_naming_it():
    eng = vecsim.make(DUO, 2)
    eng.reset(seed=0)
    out = np.full((2, (eng.masks.shape[1] + 7) // 8), 0xFF, np.uint8)
    assert eng.packed_masks(out) is out
    np.testing.assert_array_equal(out, packbits(eng.masks))
    assert eng.packed_masks() is eng.packed_masks()  # the engine's own buffer, a view
    for bad, error in ((out[:1], ValueError), (out.astype(np.int16), ValueError), (out.T, ValueError),
                       (out.tolist(), TypeError)):
        with pytest.raises(error, match="out must"):
            eng.packed_masks(bad)


def test_pack_mask_rows_packs_any_width_as_numpy_does():
    rng = np.random.default_rng(1)
    for width in (1, 7, 8, 9, 63, 64, 65, 200):
        masks = rng.random((5, width)) < 0.3
        out = np.zeros((5, (width + 7) // 8), np.uint8)
        pack_mask_rows(masks, out)
        np.testing.assert_array_equal(out, packbits(masks), err_msg=f"width {width}")


def assert_same_outputs(got, expected, step):
    for a, b in zip(got, expected):
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            for key in a:
                np.testing.assert_array_equal(a[key], b[key], err_msg=f"{key}, step {step}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"step {step}")


@pytest.mark.parametrize("blokus_id,copy,autoreset_mode", [
    (DUO, True, "next_step"), (DUO, False, "next_step"), (DUO, True, "same_step"), (DUO, False, "disabled"),
    (CLASSIC, False, "next_step"), (CLASSIC, True, "same_step"), (CLASSIC, True, "disabled")])
def test_the_vector_envs_packed_mask_format_gives_the_packed_bool_masks(blokus_id, copy, autoreset_mode):
    envs = [gym.make_vec(blokus_id, num_envs=3, vectorization_mode="vector_entry_point", copy=copy,
                         autoreset_mode=autoreset_mode, mask_format=fmt) for fmt in ("bool", "packed")]
    engine = envs[1].unwrapped.engine  # the kernel writes the packed bits: no bool mask anywhere
    assert engine.mask_format == "packed" and engine.masks.dtype == np.uint8
    (_, info), (_, packed_info) = (env.reset(seed=7) for env in envs)
    rng = np.random.default_rng(7)
    kept, finished = [], 0
    for step in range(90 if blokus_id == CLASSIC else 50):
        np.testing.assert_array_equal(packed_info["action_mask"], packbits(info["action_mask"]), err_msg=f"step {step}")
        assert packed_info["action_mask"].dtype == np.uint8
        if copy:
            kept.append((packed_info["action_mask"], packbits(info["action_mask"])))
        actions = random_legal(info["action_mask"], rng)
        out, packed_out = (env.step(actions) for env in envs)
        assert_same_outputs(packed_out[:4], out[:4], step)
        info, packed_info = out[4], packed_out[4]
        np.testing.assert_array_equal(envs[1].action_masks(), envs[0].action_masks())  # action_masks() stays bool
        done = out[2] | out[3]
        finished += int(done.sum())
        if "final_info" in info:  # SAME_STEP: the finished envs' masks as they ended, packed too
            np.testing.assert_array_equal(packed_info["final_info"]["action_mask"],
                                          packbits(info["final_info"]["action_mask"]))
        if autoreset_mode == "disabled" and done.any():
            (_, info), (_, packed_info) = (env.reset(options={"reset_mask": done.copy()}) for env in envs)
            np.testing.assert_array_equal(packed_info["action_mask"], packbits(info["action_mask"]))
            # a masked reset's info holds the reset envs' rows only: go on from the whole masks
            info = {"action_mask": envs[0].action_masks().copy()}
            packed_info = {"action_mask": engine.packed_masks().copy()}
    assert finished >= 1  # a terminated env's all-legal row, and its reset, were compared too
    for returned, expected in kept:  # copy=True: nothing returned is overwritten later
        np.testing.assert_array_equal(returned, expected)


@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step", "disabled"])
def test_copied_bool_masks_equal_the_kernels_bools_and_stay(autoreset_mode):
    # copy=True bool: each step's masks are a new array; the engine's own masks stay bool
    envs = [gym.make_vec(DUO, num_envs=3, vectorization_mode="vector_entry_point", copy=copy,
                         autoreset_mode=autoreset_mode) for copy in (False, True)]
    assert [env.unwrapped.engine.mask_format for env in envs] == ["bool", "bool"]
    assert all(env.unwrapped.engine.masks.dtype == np.bool_ for env in envs)
    (_, info), (_, copied_info) = (env.reset(seed=5) for env in envs)
    rng = np.random.default_rng(5)
    kept, finished = [], 0
    for step in range(50):
        np.testing.assert_array_equal(copied_info["action_mask"], info["action_mask"], err_msg=f"step {step}")
        kept.append(copied_info["action_mask"])
        copied_info["action_mask"][:] = True  # the caller's array: the engine's check never reads it
        actions = random_legal(info["action_mask"], rng)
        out, copied_out = (env.step(actions) for env in envs)
        assert_same_outputs(copied_out[:4], out[:4], step)
        info, copied_info = out[4], copied_out[4]
        np.testing.assert_array_equal(envs[1].action_masks(), envs[0].action_masks())
        done = out[2] | out[3]
        finished += int(done.sum())
        if "final_info" in info:
            np.testing.assert_array_equal(copied_info["final_info"]["action_mask"], info["final_info"]["action_mask"])
        if autoreset_mode == "disabled" and done.any():
            for env in envs:
                env.reset(options={"reset_mask": done.copy()})
            info, copied_info = {"action_mask": envs[0].action_masks().copy()}, {"action_mask": envs[1].action_masks()}
    assert finished >= 1
    assert all(returned.all() for returned in kept)  # each step's array is new and never written again
    masks = envs[0].action_masks()
    actions = random_legal(masks, rng)
    env = int(np.flatnonzero((~masks).any(axis=1))[0])
    actions[env] = np.flatnonzero(~masks[env])[0]
    messages = []
    for vector_env in envs:  # refused by both, in the same words
        with pytest.raises(ValueError, match="is not a legal action") as caught:
            vector_env.step(actions)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("invalid_action", ["raise", "flag"])
def test_a_packed_engine_refuses_or_flags_the_same_illegal_actions_as_a_bool_one(invalid_action):
    engines = [vecsim.make(DUO, 4, mask_format=fmt, invalid_action=invalid_action) for fmt in ("bool", "packed")]
    for eng in engines:
        eng.reset(seed=2)
    rng = np.random.default_rng(2)
    for step in range(12):
        masks = engines[0].masks
        actions = random_legal(masks, rng)
        env = step % 4
        actions[env] = int(np.flatnonzero(~masks[env])[rng.integers(int((~masks[env]).sum()))])  # an illegal one
        if invalid_action == "raise":
            messages = []
            for eng in engines:
                with pytest.raises(ValueError, match="is not a legal action") as caught:
                    eng.step(actions)
                messages.append(str(caught.value))
            assert messages[0] == messages[1]
            actions[env] = random_legal(masks, rng)[env]
        results = [eng.step(actions) for eng in engines]
        for name in ("obs", "rewards", "terminals", "truncations", "events"):
            np.testing.assert_array_equal(getattr(engines[1], name), getattr(engines[0], name), err_msg=name)
        np.testing.assert_array_equal(engines[1].masks, packbits(engines[0].masks))
        assert len(results) == 2


def test_a_bad_or_unsupported_mask_format_is_refused_naming_it():
    with pytest.raises(ValueError, match="mask_format must be one of"):
        vecsim.make(DUO, 2, mask_format="bits")
    with pytest.raises(ValueError, match="mask_format='packed' needs a game that writes packed masks"):
        vecsim.make("Tetris-v0", 2, mask_format="packed")


def test_the_vector_env_packs_the_bool_masks_of_a_game_without_a_packed_writer():
    envs = [gym.make_vec("vecsim/Tetris-v0", num_envs=3, vectorization_mode="vector_entry_point",
                         mask_format=fmt) for fmt in ("bool", "packed")]
    assert envs[1].unwrapped.engine.mask_format == "bool"
    (_, info), (_, packed_info) = (env.reset(seed=1) for env in envs)
    rng = np.random.default_rng(1)
    for _ in range(5):
        np.testing.assert_array_equal(packed_info["action_mask"], packbits(info["action_mask"]))
        actions = random_legal(info["action_mask"], rng)
        (*_, info), (*_, packed_info) = (env.step(actions) for env in envs)


def test_a_bad_mask_format_is_refused_naming_it():
    with pytest.raises(ValueError, match="mask_format must be one of"):
        gym.make_vec(DUO, num_envs=2, vectorization_mode="vector_entry_point", mask_format="bits")
