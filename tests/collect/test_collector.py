"""``EpisodeCollector``: job-ordered, seed-determined episodes from a pool of engine slots."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest
from numba import njit

import vecsim
from vecsim.collect.collector import EpisodeBatch, EpisodeCollector, PolicyError
from vecsim.core.jit import exact, kernel_options
from vecsim.engine.fusion import inline_if_same_semantics

CARTPOLE = "CartPole-v1"
PENDULUM = "Pendulum-v1"
#: One Tetris configuration for every Tetris test: its kernels compile once (slowly).
TETRIS = "Tetris-v0"
TETRIS_RULES = dict(preset="classic", action_mode="drop")
HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent  # the folder of the test games
ARRAYS = ("observations", "actions", "rewards", "dones", "terminated", "lengths", "job_ids", "seeds",
          "action_masks", "log_probs", "values")


def cartpole_policy(obs, masks):
    """Deterministic, state-dependent: push toward the pole's lean."""
    assert masks is None
    return (obs[:, 2] + 0.3 * obs[:, 3] > 0).astype(np.int64)


def pendulum_policy(obs, masks):
    """Actions with log-probs and values, all functions of the observation."""
    actions = (-2.0 * obs[:, 2:3]).astype(np.float32)
    return actions, obs[:, 0].astype(np.float64), obs[:, 1] * 3.0


_OBS_WEIGHTS = (np.arange(1, 1025, dtype=np.int64) * 7919) % 10007


def tetris_policy(obs, masks):
    """Deterministic and spread out: the k-th legal placement, k a hash of the observation."""
    counts = masks.sum(axis=1)
    k = (obs.astype(np.int64) @ _OBS_WEIGHTS[: obs.shape[1]]) % counts
    return np.argmax(masks.cumsum(axis=1) > k[:, None], axis=1)


@njit
def lean_policy(s, p, i, rng):
    """``cartpole_policy`` inside the kernel (float32 arithmetic, as on the observation)."""
    return np.int64(np.float32(s.theta[i]) + np.float32(0.3) * np.float32(s.theta_dot[i]) > 0)


@exact
def lean_policy_exact(s, p, i, rng):
    """``lean_policy`` compiled with vecsim's bit-exact options (inlined into the kernel)."""
    return np.int64(np.float32(s.theta[i]) + np.float32(0.3) * np.float32(s.theta_dot[i]) > 0)


@njit
def jitter_policy(s, p, i, rng):
    """A jitted policy whose episodes end early and at varied lengths (a bit of the state)."""
    return np.int64(s.theta_dot[i] * 1e4) & 1


def assert_same_batch(a: EpisodeBatch, b: EpisodeBatch) -> None:
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
        else:
            assert x.dtype == y.dtype and np.array_equal(x, y), name


def collect(env_id, num_workers, max_steps, policy, seed, n, **kwargs) -> EpisodeBatch:
    with EpisodeCollector(env_id, num_workers, max_steps, policy, seed, **kwargs) as collector:
        return collector.request_episodes(n)


def tetris_batch(num_workers, policy, n=24, **kwargs) -> EpisodeBatch:
    return collect(TETRIS, num_workers, 64, policy, 3, n, **TETRIS_RULES, **kwargs)


def replay(batch: EpisodeBatch, env_id, num_workers, seed, **kwargs) -> EpisodeBatch:
    """The batch's played actions fed back as an action-array policy."""
    return collect(env_id, num_workers, batch.rewards.shape[1], batch.actions.copy(), seed, len(batch), **kwargs)


def run_with_timeout(fn, timeout=30.0):
    """Run ``fn`` in a thread; return (exception or None, result); fail if it hangs."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "call hung"
    return box.get("error"), box.get("result")


def raises_within(errors, fn, match=None):
    error, _ = run_with_timeout(fn)
    assert isinstance(error, errors), f"expected {errors}, got {error!r}"
    if match is not None:
        assert match in str(error), str(error)
    return error


# -- determinism -------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["random", cartpole_policy], ids=["random", "callable"])
def test_batch_does_not_depend_on_num_workers(policy):
    batches = [collect(CARTPOLE, w, 40, policy, 11, 24) for w in (1, 2, 8)]
    for other in batches[1:]:
        assert_same_batch(batches[0], other)


def test_box_batch_does_not_depend_on_num_workers():
    batches = [collect(PENDULUM, w, 25, pendulum_policy, 5, 7) for w in (1, 2, 8)]
    for other in batches[1:]:
        assert_same_batch(batches[0], other)


def acrobot_policy(obs, masks):
    """Deterministic, state-dependent: torque along the first link's angular velocity."""
    return np.where(obs[:, 4] > 0, 2, 0).astype(np.int64)


@pytest.mark.parametrize("env_id,policy,kwargs", [
    (CARTPOLE, cartpole_policy, {}), (PENDULUM, pendulum_policy, {}),
    # Games that step runs of envs a call (KernelHints.envs_per_call > 1): the collector's own loop for them
    (TETRIS, tetris_policy, TETRIS_RULES), ("Acrobot-v1", acrobot_policy, {}),
], ids=["cartpole", "pendulum", "tetris", "acrobot"])
def test_job_equals_a_single_engine_seeded_seed_plus_j(env_id, policy, kwargs):
    seed, k = 40, 60
    batch = collect(env_id, 3, k, policy, seed, 5, **kwargs)
    for j in range(5):
        eng = vecsim.make(env_id, 1, max_episode_steps=None, **kwargs)
        obs = eng.reset(seed=seed + j).copy()
        for t in range(k):
            masks = eng.masks.copy() if eng.masks.shape[1] else None
            out = policy(obs, masks)
            action = out[0] if isinstance(out, tuple) else out
            np.testing.assert_array_equal(batch.observations[j, t], obs[0])
            np.testing.assert_array_equal(batch.actions[j, t], action[0])
            res = eng.step_no_reset(action)
            assert batch.rewards[j, t] == res.rewards[0]
            obs = res.observations.copy()
            if res.terminals[0] or t == k - 1:
                assert batch.lengths[j] == t + 1
                assert batch.terminated[j] == res.terminals[0]
                break
        eng.close()


def test_results_come_in_job_order():
    batch = collect(CARTPOLE, 4, 30, "random", 100, 10)
    np.testing.assert_array_equal(batch.job_ids, np.arange(10))
    np.testing.assert_array_equal(batch.seeds, 100 + np.arange(10))
    with EpisodeCollector(CARTPOLE, 4, 30, "random", 100) as collector:
        first, second = collector.request_episodes(4), collector.request_episodes(6)
    np.testing.assert_array_equal(second.job_ids, np.arange(4, 10))
    assert np.array_equal(second.observations, batch.observations[4:])
    assert np.array_equal(first.rewards, batch.rewards[:4])


@pytest.mark.parametrize("env_id,policy", [(CARTPOLE, "random"), (CARTPOLE, cartpole_policy),
                                           (PENDULUM, pendulum_policy), (PENDULUM, "random")])
def test_serial_and_parallel_kernels_give_the_same_batch(env_id, policy):
    serial = collect(env_id, 67, 40, policy, 8, 150, parallel=False)
    parallel = collect(env_id, 67, 40, policy, 8, 150, parallel=True)
    assert_same_batch(serial, parallel)


def test_random_actions_replayed_through_an_action_array_give_the_same_batch(masked_game):
    # The random policy draws from a stream of its own: the env's draws are those of a replay.
    batch = collect(masked_game, 3, 30, "random", 4, 10)
    assert_same_batch(batch, replay(batch, masked_game, 5, 4))


def test_in_kernel_policy_plays_the_physics_of_the_engine():
    # CartPole's step reads sin/cos from its pre-step pass: the in-kernel loop must run it too.
    batch = collect(CARTPOLE, 4, 80, lean_policy, 2, 9)
    assert_same_batch(batch, replay(batch, CARTPOLE, 3, 2))
    assert batch.lengths.mean() > 30  # the policy balances the pole for a while


def test_in_kernel_policy_is_inlined_only_under_its_own_float_semantics():
    # Inlined code compiles with its caller's flags: a policy is inlined into the kernel only
    # when its fast-math flags and error model are the kernel's, and called otherwise.
    exact64, fast32 = kernel_options("float64", False), kernel_options("float32", False)
    assert inline_if_same_semantics(lean_policy, exact64) is lean_policy  # Python's error model
    assert inline_if_same_semantics(lean_policy_exact, fast32) is lean_policy_exact
    inlined = inline_if_same_semantics(lean_policy_exact, exact64)
    assert inlined is not lean_policy_exact and inlined.targetoptions["inline"] == "always"
    assert inlined.py_func is lean_policy_exact.py_func
    # Inlined or called, the same policy plays the same episodes.
    assert_same_batch(collect(CARTPOLE, 4, 80, lean_policy_exact, 2, 9), collect(CARTPOLE, 4, 80, lean_policy, 2, 9))


# -- layout ------------------------------------------------------------------------------
def test_shapes_and_dtypes():
    batch = collect(CARTPOLE, 4, 50, "random", 0, 6)
    assert batch.observations.shape == (6, 50, 4) and batch.observations.dtype == np.float32
    assert batch.actions.shape == (6, 50) and batch.actions.dtype == np.int64
    assert batch.rewards.shape == (6, 50) and batch.rewards.dtype == np.float64
    assert batch.dones.shape == (6, 50) and batch.dones.dtype == np.bool_
    assert batch.lengths.dtype == np.int64 and len(batch) == 6
    box = collect(PENDULUM, 2, 10, "random", 0, 3)
    assert box.actions.shape == (3, 10, 1) and box.actions.dtype == np.float32


def test_padding_is_zeros_and_done():
    batch = collect(CARTPOLE, 4, 200, "random", 0, 12)
    for b, length in enumerate(batch.lengths):
        assert 1 <= length <= 200
        assert not batch.dones[b, : length - 1].any()
        assert batch.dones[b, length - 1:].all()
        for name in ("observations", "actions", "rewards"):
            assert not getattr(batch, name)[b, length:].any(), name
        assert batch.observations[b, :length].any(axis=-1).all()


def test_episodes_cut_at_max_steps_are_done_and_not_terminated():
    batch = collect(PENDULUM, 3, 17, "random", 0, 4)  # Pendulum never terminates
    np.testing.assert_array_equal(batch.lengths, 17)
    assert batch.dones[:, 16].all() and not batch.dones[:, :16].any()
    assert not batch.terminated.any()
    short = collect(CARTPOLE, 3, 8, "random", 0, 20)
    assert (short.lengths <= 8).all() and (short.lengths == 8).any()
    assert short.dones[np.arange(20), short.lengths - 1].all()


def test_log_probs_and_values_are_recorded():
    batch = collect(PENDULUM, 2, 12, pendulum_policy, 1, 3)
    np.testing.assert_array_equal(batch.log_probs, batch.observations[..., 0].astype(np.float64))
    np.testing.assert_array_equal(batch.values, batch.observations[..., 1] * 3.0)


class TogglingPolicy:
    """``cartpole_policy``, with log-probs and values (functions of the observation) in the
    batches listed in ``with_extras``; ``ends`` are the call counts at which batches end."""

    def __init__(self, ends=(), with_extras=()):
        self.calls, self.ends, self.with_extras = 0, list(ends), set(with_extras)

    def __call__(self, obs, masks):
        batch = sum(self.calls >= end for end in self.ends)
        self.calls += 1
        actions = cartpole_policy(obs, masks)
        return (actions, obs[:, 0].astype(np.float64), obs[:, 1] * 2.0) if batch in self.with_extras else actions


@pytest.mark.parametrize("prefetch", [False, True])
def test_log_probs_appear_in_the_batches_whose_policy_returns_them(prefetch):
    counter = TogglingPolicy()
    with EpisodeCollector(CARTPOLE, 4, 30, counter, 1) as collector:
        ends = [collector.request_episodes(6) and counter.calls for _ in range(4)]
    # Batches 0 and 1 fill both sets of arrays (with prefetch) with log-probs; 2 has none.
    policy = TogglingPolicy(ends, with_extras=(0, 1, 3))
    with EpisodeCollector(CARTPOLE, 4, 30, policy, 1, prefetch=prefetch) as collector:
        batches = [collector.request_episodes(6) for _ in range(3)]
        assert batches[2].log_probs is None and batches[2].values is None
        last = collector.request_episodes(6)
        np.testing.assert_array_equal(last.log_probs, last.observations[..., 0].astype(np.float64))
        np.testing.assert_array_equal(last.values, last.observations[..., 1] * 2.0)


def test_without_masks_or_extras_those_fields_are_none():
    batch = collect(CARTPOLE, 2, 12, cartpole_policy, 1, 3)
    assert batch.action_masks is None and batch.log_probs is None and batch.values is None


def test_policy_is_called_once_per_step_with_all_running_slots():
    sizes = []

    def policy(obs, masks):
        sizes.append(obs.shape[0])
        return np.zeros(obs.shape[0], dtype=np.int64)

    batch = collect(CARTPOLE, 8, 30, policy, 0, 20)
    assert sizes[0] == 8 and max(sizes) == 8
    assert len(sizes) < batch.lengths.sum()  # batched, not once per env


# -- policies ----------------------------------------------------------------------------
def test_actions_given_up_front():
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, size=(9, 40))
    batch = collect(CARTPOLE, 3, 40, actions, 7, 9)
    for b, length in enumerate(batch.lengths):
        np.testing.assert_array_equal(batch.actions[b, :length], actions[b, :length])
    box = rng.uniform(-2, 2, size=(4, 10, 1)).astype(np.float32)
    assert np.array_equal(collect(PENDULUM, 2, 10, box, 0, 4).actions, box)


def test_random_policy_is_deterministic_and_uniform():
    a = collect(CARTPOLE, 2, 100, "random", 9, 30)
    b = collect(CARTPOLE, 5, 100, "random", 9, 30)
    assert_same_batch(a, b)
    played = np.concatenate([a.actions[i, :n] for i, n in enumerate(a.lengths)])
    assert 0.4 < played.mean() < 0.6
    box = collect(PENDULUM, 3, 50, "random", 9, 4).actions
    assert box.min() >= -2 and box.max() <= 2 and box.std() > 0.5


# -- stream and prefetch -----------------------------------------------------------------
def test_stream_yields_the_episodes_of_request_episodes():
    batch = collect(CARTPOLE, 4, 60, "random", 3, 11)
    with EpisodeCollector(CARTPOLE, 4, 60, "random", 3) as collector:
        streamed = list(collector.stream(11))
        after = collector.request_episodes(2)
    assert len(streamed) == 11
    for b, episode in enumerate(streamed):
        assert len(episode) == 1 and episode.job_ids[0] == b
        for name in ("observations", "actions", "rewards", "dones", "lengths"):
            assert np.array_equal(getattr(episode, name)[0], getattr(batch, name)[b]), name
    np.testing.assert_array_equal(after.job_ids, [11, 12])


def test_stream_blocks_other_calls_while_open():
    with EpisodeCollector(CARTPOLE, 2, 20, "random", 0) as collector:
        stream = collector.stream(5)
        next(stream)
        with pytest.raises(RuntimeError, match="stream"):
            collector.request_episodes(1)
        stream.close()
        assert collector.request_episodes(1).job_ids[0] == 5


def test_prefetch_returns_the_same_batches():
    with EpisodeCollector(CARTPOLE, 8, 50, cartpole_policy, 2) as plain:
        expected = [plain.request_episodes(16) for _ in range(3)]
    with EpisodeCollector(CARTPOLE, 8, 50, cartpole_policy, 2, prefetch=True) as pre:
        got = [pre.request_episodes(16) for _ in range(3)]
        assert_same_batch(got[2], expected[2])  # valid until the next request
        other = pre.request_episodes(5)  # a different size discards the prefetched batch
    np.testing.assert_array_equal(other.job_ids, np.arange(48, 53))
    assert got[0].observations is got[2].observations  # two sets alternate


def test_prefetch_leaves_the_caller_one_of_numbas_threads():
    import numba

    seen = []  # (thread name, Numba threads) at each policy call

    def policy(obs, masks):
        seen.append((threading.current_thread().name, numba.get_num_threads()))
        return cartpole_policy(obs, masks)

    threads = numba.get_num_threads()
    with EpisodeCollector(CARTPOLE, 8, 20, policy, 2, prefetch=True) as collector:
        collector.request_episodes(8)  # collected here, then the next one in the background
        second = collector.request_episodes(8)  # collected in the background
        assert numba.get_num_threads() == threads  # the caller's own setting is untouched
        background = {n for name, n in seen if name == "vecsim-collector-prefetch"}
        foreground = {n for name, n in seen if name == threading.current_thread().name}
        assert background == {max(1, threads - 1)} and foreground == {threads}
        with EpisodeCollector(CARTPOLE, 8, 20, cartpole_policy, 2) as plain:
            plain.request_episodes(8)
            assert_same_batch(second, plain.request_episodes(8))


def test_prefetch_thread_ends_with_close():
    before = threading.active_count()
    collector = EpisodeCollector(CARTPOLE, 4, 100, "random", 0, prefetch=True)
    collector.request_episodes(8)
    collector.close()
    collector.close()  # idempotent
    assert threading.active_count() == before


# -- faults ------------------------------------------------------------------------------
def test_policy_exception_propagates_chained_and_collector_stays_usable():
    calls = {"n": 0}

    def flaky(obs, masks):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyError("boom")
        return cartpole_policy(obs, masks)

    with EpisodeCollector(CARTPOLE, 4, 30, flaky, 0) as collector:
        error = raises_within(PolicyError, lambda: collector.request_episodes(6))
        assert isinstance(error.__cause__, KeyError)
        assert_same_batch(collector.request_episodes(6), collect(CARTPOLE, 4, 30, cartpole_policy, 0, 6))


def test_policy_exception_in_prefetch_surfaces_on_next_request():
    calls = {"n": 0}

    def flaky(obs, masks):
        calls["n"] += 1
        if calls["n"] == 1000:
            raise ZeroDivisionError("late")
        return cartpole_policy(obs, masks)

    with EpisodeCollector(CARTPOLE, 2, 200, flaky, 0, prefetch=True) as collector:
        errors = 0
        for _ in range(20):
            error, _ = run_with_timeout(lambda: collector.request_episodes(20))
            if error is not None:
                assert isinstance(error, PolicyError) and isinstance(error.__cause__, ZeroDivisionError)
                errors += 1
        assert errors == 1


@pytest.mark.parametrize("bad,error,fragment", [
    (lambda obs: np.zeros(obs.shape[0] + 1, dtype=np.int64), ValueError, "shape"),
    (lambda obs: np.zeros(obs.shape[0], dtype=np.float64), TypeError, "dtype"),
    (lambda obs: np.full(obs.shape[0], 7), ValueError, "job"),
    (lambda obs: np.full(obs.shape[0], -1), ValueError, "slot"),
    (lambda obs: np.array(["a"] * obs.shape[0]), TypeError, "dtype"),
    (lambda obs: (np.zeros(obs.shape[0], dtype=np.int64), np.zeros(3), np.zeros(obs.shape[0])), ValueError,
     "log_probs"),
    (lambda obs: (np.zeros(obs.shape[0], dtype=np.int64), 1), ValueError, "tuple"),
])
def test_bad_policy_output_is_named(bad, error, fragment):
    with EpisodeCollector(CARTPOLE, 3, 10, lambda obs, masks: bad(obs), 0) as collector:
        raises_within(error, lambda: collector.request_episodes(4), fragment)


def test_bad_box_action_is_named():
    def policy(obs, masks):
        actions = np.zeros((obs.shape[0], 1))
        actions[-1] = np.nan
        return actions

    with EpisodeCollector(PENDULUM, 3, 10, policy, 0) as collector:
        raises_within(ValueError, lambda: collector.request_episodes(4), "job 2")


@pytest.mark.parametrize("n,error", [(0, ValueError), (-3, ValueError), (2.0, TypeError), (True, TypeError),
                                     ("4", TypeError)])
def test_bad_num_episodes(n, error):
    with EpisodeCollector(CARTPOLE, 2, 10, "random", 0) as collector:
        with pytest.raises(error, match="num_episodes"):
            collector.request_episodes(n)
        with pytest.raises(error, match="num_episodes"):
            collector.stream(n)


@pytest.mark.parametrize("first_job,error", [(-1, ValueError), (1.0, TypeError), ("2", TypeError)])
def test_bad_first_job(first_job, error):
    with EpisodeCollector(CARTPOLE, 2, 10, "random", 0) as collector:
        with pytest.raises(error, match="first_job"):
            collector.request_episodes(3, first_job=first_job)


@pytest.mark.parametrize("policy", ["random", cartpole_policy], ids=["random", "callable"])
def test_first_job_collects_those_jobs_and_later_requests_go_on_from_there(policy):
    whole = collect(CARTPOLE, 3, 40, policy, 11, 12)
    with EpisodeCollector(CARTPOLE, 2, 40, policy, 11) as collector:
        middle = collector.request_episodes(5, first_job=4)
        after = collector.request_episodes(3)
    assert_same_batch(whole._rows(slice(4, 9)), middle)
    assert_same_batch(whole._rows(slice(9, 12)), after)


@pytest.mark.parametrize("kwargs,error,fragment", [
    (dict(max_steps=0), ValueError, "max_steps"),
    (dict(num_workers=0), ValueError, "num_workers"),
    (dict(num_workers=-2), ValueError, "num_workers"),
    (dict(num_workers=1.5), TypeError, "num_workers"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(policy="greedy"), ValueError, "policy"),
    (dict(policy=42), TypeError, "policy"),
    (dict(policy=np.zeros((4, 9), dtype=np.int64)), ValueError, "shape"),
    (dict(policy=np.zeros((4, 10))), TypeError, "dtype"),
])
def test_bad_construction(kwargs, error, fragment):
    args = dict(env_id=CARTPOLE, num_workers=2, max_steps=10, policy="random", seed=0)
    args.update(kwargs)
    with pytest.raises(error, match=fragment):
        EpisodeCollector(**args)


def test_action_array_too_short_for_the_request():
    with EpisodeCollector(CARTPOLE, 2, 10, np.zeros((3, 10), dtype=np.int64), 0) as collector:
        with pytest.raises(ValueError, match="holds 3 jobs"):
            collector.request_episodes(4)


def test_use_after_close():
    collector = EpisodeCollector(CARTPOLE, 2, 10, "random", 0)
    collector.close()
    assert collector.closed
    with pytest.raises(RuntimeError, match="closed"):
        collector.request_episodes(1)
    with pytest.raises(RuntimeError, match="closed"):
        collector.stream(1)


def test_close_during_a_prefetch_collection_stops_the_thread():
    started, release = threading.Event(), threading.Event()
    calls = {"n": 0}

    def slow(obs, masks):
        calls["n"] += 1
        if threading.current_thread().name == "vecsim-collector-prefetch":
            started.set()
            release.wait(0.01)
        return cartpole_policy(obs, masks)

    before = threading.active_count()
    collector = EpisodeCollector(CARTPOLE, 2, 500, slow, 0, prefetch=True)
    collector.request_episodes(1)
    assert started.wait(30)
    error, _ = run_with_timeout(collector.close)
    assert error is None
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="closed"):
        collector.request_episodes(1)


# -- games with action masks -------------------------------------------------------------
@pytest.fixture
def masked_game(monkeypatch):
    """``tests/masked_walk_game.py`` registered as ``MaskedWalk-v0`` for one test."""
    vecsim.register("masked_walk_game")
    yield "MaskedWalk-v0"
    vecsim.unregister("MaskedWalk-v0")


def test_masks_are_recorded_and_random_actions_are_legal(masked_game):
    batches = [collect(masked_game, w, 30, "random", 4, 12) for w in (1, 5)]
    assert_same_batch(*batches)
    batch = batches[0]
    assert batch.action_masks.shape == (12, 30, 3) and batch.action_masks.dtype == np.bool_
    for b, length in enumerate(batch.lengths):
        played = batch.action_masks[b, np.arange(length), batch.actions[b, :length]]
        assert played.all()
        assert not batch.action_masks[b, length:].any()
    x = batch.observations[..., 0]
    live = ~batch.dones | (np.arange(30) == batch.lengths[:, None] - 1)
    np.testing.assert_array_equal(batch.action_masks[..., 0][live], (x > -1.0)[live])


def test_policy_gets_masks_and_masked_actions_are_rejected(masked_game):
    seen = []

    def always_right(obs, masks):
        seen.append(masks.shape)
        return np.full(obs.shape[0], 2)

    with EpisodeCollector(masked_game, 3, 30, always_right, 0) as collector:
        raises_within(ValueError, lambda: collector.request_episodes(6), "action mask")
    assert seen[0] == (3, 3)


def test_random_policy_on_a_box_space_replays_the_same():
    batch = collect(PENDULUM, 2, 20, "random", 6, 5)
    assert_same_batch(batch, replay(batch, PENDULUM, 3, 6))


def test_illegal_entry_of_an_action_array_is_named():
    actions = np.zeros((4, 10), dtype=np.int64)
    actions[2, 3] = 5
    with EpisodeCollector(CARTPOLE, 2, 10, actions, 0) as collector:
        error = raises_within(ValueError, lambda: collector.request_episodes(4), "policy action 5 of job 2")
        assert "at step 3 (action array policy[2, 3])" in str(error)


def test_unsigned_actions_too_large_for_int64_are_named_as_returned():
    def policy(obs, masks):
        return np.full(obs.shape[0], 2**64 - 1, dtype=np.uint64)

    with EpisodeCollector(CARTPOLE, 2, 10, policy, 0) as collector:
        raises_within(ValueError, lambda: collector.request_episodes(2), str(2**64 - 1))


# -- reuse of a dropped batch's arrays ---------------------------------------------------
@pytest.mark.parametrize("env_id, policy, max_steps, kwargs", [
    (CARTPOLE, "random", 60, {}),
    (CARTPOLE, jitter_policy, 60, {}),
    (PENDULUM, pendulum_policy, 25, {"max_episode_steps": 9}),
    (TETRIS, tetris_policy, 64, TETRIS_RULES),
], ids=["random", "jitted", "box", "tetris-masks"])
def test_a_dropped_batch_lends_its_arrays_to_the_next_one(env_id, policy, max_steps, kwargs):
    """The reused arrays are not cleared first: the kernels put back to padding the steps an
    earlier, longer episode left beyond the new episode's end. The batch equals a fresh one."""
    reference = collect(env_id, 4, max_steps, policy, 5, 20, **kwargs)
    with EpisodeCollector(env_id, 4, max_steps, policy, 5, **kwargs) as collector:
        first = collector.request_episodes(10)
        address, old_lengths = first.observations.ctypes.data, first.lengths.copy()
        del first
        batch = collector.request_episodes(10)
        assert batch.observations.ctypes.data == address  # new memory would cost page faults
        assert_same_batch(batch, reference._rows(slice(10, 20)))
    if env_id != PENDULUM:  # Pendulum's episodes all end at the time limit
        assert (batch.lengths < old_lengths).any()  # the padding path was taken


def test_a_loop_that_holds_the_previous_batch_alternates_between_two_sets_of_arrays():
    """``batch = collector.request_episodes(B)`` keeps the previous batch referenced while the
    next one is collected: the batch before it lends its arrays (new memory each time made
    such a Tetris loop ten times slower)."""
    reference = collect(CARTPOLE, 4, 60, cartpole_policy, 5, 60)
    addresses = []
    with EpisodeCollector(CARTPOLE, 4, 60, cartpole_policy, 5) as collector:
        batch = None
        for k in range(6):
            batch = collector.request_episodes(10)
            addresses.append(batch.observations.ctypes.data)
            assert_same_batch(batch, reference._rows(slice(10 * k, 10 * k + 10)))
    assert addresses[0] != addresses[1]
    assert addresses[2:] == addresses[:2] * 2


def test_a_batch_or_an_array_or_a_view_still_held_is_never_overwritten():
    with EpisodeCollector(CARTPOLE, 4, 60, "random", 5) as collector:
        whole = collector.request_episodes(10)
        array = collector.request_episodes(10).observations
        view = collector.request_episodes(10).rewards[3:]
        copies = [whole.observations.copy(), array.copy(), view.copy()]
        for _ in range(3):
            collector.request_episodes(10)
        for kept, copy in zip((whole.observations, array, view), copies):
            np.testing.assert_array_equal(kept, copy)


def test_a_collection_that_failed_leaves_no_trace_in_the_arrays_it_lends():
    calls = {"n": 0, "fail_at": -1}

    def flaky(obs, masks):
        calls["n"] += 1
        if calls["n"] == calls["fail_at"]:
            raise KeyError("boom")
        return cartpole_policy(obs, masks)

    with EpisodeCollector(CARTPOLE, 3, 40, flaky, 1) as collector:
        address = collector.request_episodes(7).observations.ctypes.data
        calls["fail_at"] = calls["n"] + 5  # half-way through the next batch, in the same arrays
        raises_within(PolicyError, lambda: collector.request_episodes(7))
        gc.collect()  # the traceback's frames referenced the failed batch
        batch = collector.request_episodes(7)
        assert batch.observations.ctypes.data == address
    assert_same_batch(batch, collect(CARTPOLE, 3, 40, cartpole_policy, 1, 14)._rows(slice(7, 14)))


# -- Tetris: placements with masks, the issue-#4 workload -----------------------------------
@pytest.mark.parametrize("policy", [tetris_policy, "random"], ids=["callable", "random"])
def test_tetris_batch_does_not_depend_on_num_workers(policy):
    batches = [tetris_batch(w, policy) for w in (1, 2, 8)]
    for other in batches[1:]:
        assert_same_batch(batches[0], other)


@pytest.mark.parametrize("policy", [tetris_policy, "random"], ids=["callable", "random"])
def test_tetris_serial_and_parallel_kernels_give_the_same_batch(policy):
    serial = tetris_batch(67, policy, n=150, parallel=False)
    parallel = tetris_batch(67, policy, n=150, parallel=True)
    assert_same_batch(serial, parallel)


@pytest.mark.parametrize("policy", [tetris_policy, "random"], ids=["callable", "random"])
def test_tetris_batch_equals_the_replay_of_its_actions(policy):
    batch = tetris_batch(16, policy, n=40)
    assert_same_batch(batch, replay(batch, TETRIS, 5, 3, **TETRIS_RULES))


def test_tetris_random_placements_are_legal_and_varied():
    batch = tetris_batch(8, "random")
    for b, length in enumerate(batch.lengths):
        assert batch.action_masks[b, np.arange(length), batch.actions[b, :length]].all()
    assert np.unique(batch.actions[~batch.dones]).size > 20
    assert batch.terminated.any()


def test_tetris_illegal_placement_is_named():
    def greedy_left(obs, masks):
        return np.zeros(obs.shape[0], dtype=np.int64)  # rotation 0, column 0: illegal for some pieces

    with EpisodeCollector(TETRIS, 4, 64, greedy_left, 0, **TETRIS_RULES) as collector:
        raises_within(ValueError, lambda: collector.request_episodes(8), "under its action mask")


_TETRIS_HASH = f"""
import hashlib, json, sys
sys.path[:0] = [{str(TESTS)!r}, {str(HERE)!r}]
import test_collector as t
batch = t.tetris_batch(67, "random", n=150, parallel=True)
print(json.dumps(t.batch_digest(batch)))
"""


def batch_digest(batch: EpisodeBatch) -> str:
    h = hashlib.sha256()
    for name in ARRAYS:
        arr = getattr(batch, name)
        if arr is not None:
            h.update(arr.tobytes())
    return h.hexdigest()


@pytest.mark.slow
def test_tetris_batch_does_not_depend_on_the_thread_count():
    def run(threads):
        proc = subprocess.run([sys.executable, "-c", _TETRIS_HASH], cwd=TESTS.parent, capture_output=True, text=True,
                              env={**os.environ, "NUMBA_NUM_THREADS": threads}, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    one, two = run("1"), run("2")
    assert one == two == batch_digest(tetris_batch(67, "random", n=150, parallel=False))


_CACHE_STATS = f"""
import json, sys
sys.path[:0] = [{str(TESTS)!r}, {str(HERE)!r}]
import test_collector as t
with t.EpisodeCollector(t.CARTPOLE, 3, 20, t.cartpole_policy, 0, parallel=False) as collector:
    collector.request_episodes(4)
    kernel = collector._kernels.advance_serial
print(json.dumps([sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values())]))
"""


@pytest.mark.slow
def test_a_warm_start_loads_the_collection_kernel_from_the_cache():
    def run():
        proc = subprocess.run([sys.executable, "-c", _CACHE_STATS], cwd=TESTS.parent, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    run()  # compiles, unless an earlier run left the kernel in the cache
    hits, misses = run()
    assert (hits, misses) == (1, 0)
