"""Packed legal-action masks (``vecsim.engine.packed_masks``): ``Engine.packed_masks`` and the
VectorEnv's ``mask_format="packed"`` equal ``numpy.packbits`` of the bool masks, little bit
order, on Blokus classic (36,400 actions, whole bytes) and Duo (17,836: a last byte half used),
through play, terminated envs' all-True rows and resets."""

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


@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step"])
def test_the_vector_envs_packed_mask_format_gives_the_packed_bool_masks(copy, autoreset_mode):
    envs = [gym.make_vec(DUO, num_envs=3, vectorization_mode="vector_entry_point", copy=copy,
                         autoreset_mode=autoreset_mode, mask_format=fmt) for fmt in ("bool", "packed")]
    (_, info), (_, packed_info) = (env.reset(seed=7) for env in envs)
    rng = np.random.default_rng(7)
    kept = []
    for _ in range(40):
        np.testing.assert_array_equal(packed_info["action_mask"], packbits(info["action_mask"]))
        assert packed_info["action_mask"].dtype == np.uint8
        if copy:
            kept.append((packed_info["action_mask"], packbits(info["action_mask"])))
        actions = random_legal(info["action_mask"], rng)
        (*_, info), (*_, packed_info) = (env.step(actions) for env in envs)
        np.testing.assert_array_equal(envs[1].action_masks(), info["action_mask"])  # action_masks() stays bool
    for returned, expected in kept:  # copy=True: nothing returned is overwritten later
        np.testing.assert_array_equal(returned, expected)


def test_a_bad_mask_format_is_refused_naming_it():
    with pytest.raises(ValueError, match="mask_format must be one of"):
        gym.make_vec(DUO, num_envs=2, vectorization_mode="vector_entry_point", mask_format="bits")
