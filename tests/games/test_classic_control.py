"""Classic control against Gymnasium's own environments, step by step, bit for bit.

Each test puts the same physical state into a vecsim engine of ``K`` envs and into ``K``
Gymnasium envs (``gymnasium.make(id).unwrapped``), stored the way Gymnasium stores it, plays
the same random actions in both, and asserts that observations, rewards, termination flags
and the physical state itself are identical to the last bit. When an env terminates, and
every ``RESEED_EVERY`` steps, both sides get a fresh random state. The random states reach
far beyond the starting distribution (large velocities, angles of several turns, walls) so
that every clipping, bounding and wrapping branch runs; continuous actions include
out-of-bounds values and values exactly at the float32 bounds.

A second kind of test steps ``M`` random states spread over each game's whole observation
space (and beyond its termination thresholds) once each, batched in one engine, against one
Gymnasium env that is given each state in turn.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium
import numpy as np
import pytest

import vecsim

K = 8
STEPS = 200
RESEED_EVERY = 25
M = 4096  # random states per game in the whole-space test, stepped in one engine


# -- what differs from game to game --------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One classic control game and how to drive its Gymnasium twin."""

    env_id: str
    random_state: Callable  # (rng) -> (values, dtype Gymnasium stores them in)
    observe: Callable  # Gymnasium env -> its observation of env.state
    action_bounds: Callable | None = None  # Params -> (low, high) for Box actions
    per_env: dict = field(default_factory=dict)  # Params field -> K values
    gym_attr: dict = field(default_factory=dict)  # Params field -> Gymnasium attribute
    fixup: Callable = lambda env: None  # re-derive Gymnasium's constants computed in __init__
    # (rng, n) -> (values (n, d) float64, float32 (n,) bool: Gymnasium stores the row as float32)
    space_states: Callable | None = None
    # (eng, i, values, dtype): state fields besides PHYSICAL_STATE that Gymnasium's dtype sets
    mark_storage: Callable = lambda eng, i, values, dtype: None


def _cartpole_state(rng):
    values = rng.uniform(-1, 1, 4) * [2.6, 3.0, 0.25, 3.5]
    return values, np.float64


def _mountain_car_state(rng):
    position = rng.choice([rng.uniform(-1.2, 0.6), -1.2, 0.6])
    return np.array([position, rng.uniform(-0.07, 0.07)]), np.float64


def _continuous_mountain_car_state(rng):
    """Gymnasium's state is float64 after reset (velocity 0) and float32 after every step."""
    kind = rng.choice(["reset", "reset to a float32", "float64", "float32", "float32", "wall"])
    position, velocity = rng.uniform(-1.2, 0.6), rng.uniform(-0.07, 0.07)
    if kind == "reset":
        return np.array([rng.uniform(-0.6, -0.4), 0.0]), np.float64
    if kind == "reset to a float32":  # reset(options={"low": b, "high": b}) for a float32 b
        return np.array([np.float32(rng.uniform(-0.6, -0.4)), 0.0]), np.float64
    if kind == "float64":
        return np.array([position, velocity]), np.float64
    if kind == "wall":
        position = rng.choice([-1.2, 0.6, 0.45])
    return np.array([position, velocity], dtype=np.float32).astype(np.float64), np.float32


def _pendulum_state(rng):
    return np.array([rng.uniform(-20, 20), rng.uniform(-12, 12)]), np.float64


def _acrobot_state(rng):
    """Gymnasium's state is float32 after reset and float64 after every step."""
    if rng.random() < 0.25:
        return rng.uniform(-0.1, 0.1, 4).astype(np.float32).astype(np.float64), np.float32
    return rng.uniform(-1, 1, 4) * [4.0, 4.0, 16.0, 32.0], np.float64


def _continuous_mountain_car_storage(eng, i, values, dtype):
    """Only a float64 state of float32 numbers needs its position in ``float64_position`` to
    be told apart from the float32 state of the same values; any other is typed by its values
    (see the game's docstring)."""
    if dtype == np.float64 and np.array_equal(values.astype(np.float32), values):
        eng.state.float64_position[i] = values[0]


# -- random states across the whole observation space --------------------------------------
def _stored_as(n: int, dtype) -> np.ndarray:
    return np.full(n, dtype == np.float32)


def _some_exactly(rng, values: np.ndarray, choices) -> np.ndarray:
    """``values`` with about one in eight replaced by one of ``choices`` (walls, bounds)."""
    return np.where(rng.random(values.shape) < 0.125, rng.choice(choices, values.shape), values)


def _cartpole_space_states(rng, n):
    """Cart position and pole angle over the observation space's bounds, twice the termination
    thresholds (2.4, 12 degrees); the velocities, unbounded there, up to 10."""
    high = np.array([4.8, 10.0, 2 * 12 * 2 * math.pi / 360, 10.0])
    return rng.uniform(-high, high, (n, 4)), _stored_as(n, np.float64)


def _mountain_car_space_states(rng, n, goal=0.5):
    position = _some_exactly(rng, rng.uniform(-1.2, 0.6, n), [-1.2, 0.6, goal])
    velocity = _some_exactly(rng, rng.uniform(-0.07, 0.07, n), [-0.07, 0.0, 0.07])
    return np.stack([position, velocity], axis=1), _stored_as(n, np.float64)


def _continuous_mountain_car_space_states(rng, n):
    """Half float32 states (after a step), half float64 (after reset, or written), of which
    half hold float32 numbers only, as a reset to a float32 bound leaves them."""
    values, _ = _mountain_car_space_states(rng, n, goal=0.45)
    kind = rng.integers(0, 4, n)
    float32 = kind < 2
    rounded = float32 | (kind == 2)
    values[rounded] = values[rounded].astype(np.float32)
    values[(kind == 2) & (rng.random(n) < 0.5), 1] = 0.0  # reset's velocity
    return values, float32


def _pendulum_space_states(rng, n):
    """Angles of several turns (Gymnasium stores theta unwrapped), speeds 1.5 times the
    bound (8) that the step clips to."""
    values = np.stack([rng.uniform(-4 * math.pi, 4 * math.pi, n), rng.uniform(-12.0, 12.0, n)], axis=1)
    return values, _stored_as(n, np.float64)


def _acrobot_space_states(rng, n):
    """Every pair of angles, speeds 1.5 times the bounds (4 pi, 9 pi) that the step clips to;
    a quarter are float32 reset states (Gymnasium's reset stores float32)."""
    high = np.array([math.pi, math.pi, 6 * math.pi, 13.5 * math.pi])
    values = rng.uniform(-high, high, (n, 4))
    float32 = rng.random(n) < 0.25
    values[float32] = rng.uniform(-0.1, 0.1, (int(float32.sum()), 4)).astype(np.float32)
    return values, float32


def _cartpole_fixup(env):
    env.total_mass = env.masspole + env.masscart
    env.polemass_length = env.masspole * env.length


CASES = {
    "CartPole-v1": Case(
        "CartPole-v1", _cartpole_state, lambda env: np.array(env.state, dtype=np.float32),
        per_env={"gravity": np.linspace(9.0, 10.5, K), "masscart": np.linspace(0.7, 1.6, K),
                 "masspole": np.linspace(0.05, 0.3, K), "length": np.linspace(0.3, 0.9, K),
                 "force_mag": np.linspace(7.0, 13.0, K), "tau": np.linspace(0.01, 0.03, K)},
        fixup=_cartpole_fixup, space_states=_cartpole_space_states,
    ),
    "MountainCar-v0": Case(
        "MountainCar-v0", _mountain_car_state, lambda env: np.array(env.state, dtype=np.float32),
        per_env={"goal_velocity": np.linspace(0.0, 0.013, K), "force": np.linspace(0.0007, 0.0013, K),
                 "gravity": np.linspace(0.0021, 0.0029, K), "max_speed": np.linspace(0.05, 0.09, K),
                 "goal_position": np.linspace(0.3, 0.55, K)},
        space_states=_mountain_car_space_states,
    ),
    "MountainCarContinuous-v0": Case(
        "MountainCarContinuous-v0", _continuous_mountain_car_state,
        lambda env: np.array(env.state, dtype=np.float32),
        action_bounds=lambda p: (p.min_action, p.max_action),
        # bounds that are not float32 numbers: Gymnasium compares the float32 action with
        # them in float32, and a clipped force is then the float64 bound
        per_env={"min_action": -np.linspace(0.6, 1.3, K), "max_action": np.linspace(0.3, 1.7, K),
                 "power": np.linspace(0.0011, 0.0019, K), "goal_velocity": np.linspace(0.0, 0.011, K),
                 "max_speed": np.linspace(0.05, 0.09, K), "goal_position": np.linspace(0.3, 0.55, K)},
        space_states=_continuous_mountain_car_space_states, mark_storage=_continuous_mountain_car_storage,
    ),
    "Pendulum-v1": Case(
        "Pendulum-v1", _pendulum_state, lambda env: env._get_obs(),
        action_bounds=lambda p: (-np.asarray(p.max_torque), np.asarray(p.max_torque)),
        per_env={"g": np.linspace(9.0, 11.3, K), "m": np.linspace(0.7, 1.9, K), "l": np.linspace(0.6, 1.7, K),
                 "max_torque": np.linspace(1.3, 2.7, K), "dt": np.linspace(0.03, 0.07, K),
                 "max_speed": np.linspace(6.5, 9.1, K)},
        space_states=_pendulum_space_states,
    ),
    "Acrobot-v1": Case(
        "Acrobot-v1", _acrobot_state, lambda env: env._get_ob(),
        per_env={"dt": np.linspace(0.1, 0.25, K), "link_length_1": np.linspace(0.8, 1.3, K),
                 "link_mass_1": np.linspace(0.7, 1.9, K), "link_mass_2": np.linspace(0.6, 1.7, K),
                 "link_com_pos_1": np.linspace(0.3, 0.7, K), "link_com_pos_2": np.linspace(0.35, 0.65, K),
                 "link_moi": np.linspace(0.8, 1.2, K), "max_vel_1": np.linspace(2.0, 13.0, K),
                 "max_vel_2": np.linspace(5.0, 30.0, K), "book_or_nips": np.array([0.0, 1.0] * (K // 2))},
        gym_attr={"dt": "dt", "link_length_1": "LINK_LENGTH_1", "link_mass_1": "LINK_MASS_1",
                  "link_mass_2": "LINK_MASS_2", "link_com_pos_1": "LINK_COM_POS_1",
                  "link_com_pos_2": "LINK_COM_POS_2", "link_moi": "LINK_MOI", "max_vel_1": "MAX_VEL_1",
                  "max_vel_2": "MAX_VEL_2", "book_or_nips": "book_or_nips"},
        space_states=_acrobot_space_states,
    ),
}
IDS = list(CASES)
NUMPY_TRIG = ("Pendulum-v1", "Acrobot-v1")  # Gymnasium calls np.sin/np.cos, not math.sin/math.cos


@functools.cache
def _numpy_trig_is_libm() -> bool:
    """Whether NumPy's float64 sin/cos equal the C library's here (not so with AVX-512 SVML)."""
    x = np.random.default_rng(0).uniform(-50.0, 50.0, 2000)
    return all(np.sin(v) == math.sin(v) and np.cos(v) == math.cos(v) for v in x)


def _skip_if_numpy_trig_differs(env_id: str) -> None:
    if env_id in NUMPY_TRIG and not _numpy_trig_is_libm():
        pytest.skip("NumPy's float64 sin/cos on this CPU differ from the C library's in the last bit "
                    "(AVX-512 SVML loops, numpy/numpy#23523); vecsim's kernels call the C library")


def _gym_value(name: str, value: float):
    if name == "book_or_nips":
        return "nips" if value else "book"
    return float(value)


# -- engines, built once per module --------------------------------------------------------
@pytest.fixture(scope="module")
def engines():
    """``engines(env_id, per_env, num_envs)``: a memoised engine, ``K`` envs by default, no
    step limit. All run the serial kernels, so a big batch compiles nothing more."""
    built = {}

    def get(env_id: str, per_env: bool = False, num_envs: int = K):
        key = (env_id, per_env, num_envs)
        if key not in built:
            params = CASES[env_id].per_env if per_env else {}
            eng = vecsim.make(env_id, num_envs=num_envs, max_episode_steps=None, parallel=False, **params)
            eng.reset(seed=7)
            built[key] = eng
        return built[key]

    yield get
    for eng in built.values():
        eng.close()


def _gym_envs(case: Case, per_env: bool) -> list:
    envs = [gymnasium.make(case.env_id).unwrapped for _ in range(K)]
    if per_env:
        for i, env in enumerate(envs):
            for name, values in case.per_env.items():
                setattr(env, case.gym_attr.get(name, name), _gym_value(name, values[i]))
            case.fixup(env)
    return envs


# -- playing both in lockstep --------------------------------------------------------------
def _put_state(case: Case, eng, env, i: int, values: np.ndarray, dtype) -> None:
    """The same physical state in env ``i`` of the engine and in the Gymnasium env."""
    _put_engine_state(case, eng, i, values, dtype)
    _put_gym_state(env, values, dtype)


def _put_engine_state(case: Case, eng, i: int, values: np.ndarray, dtype) -> None:
    for name, v in zip(eng.game.physical_state, values):
        getattr(eng.state, name)[i] = v
    case.mark_storage(eng, i, values, dtype)


def _put_gym_state(env, values: np.ndarray, dtype) -> None:
    env.state = np.array(values, dtype=dtype)
    if hasattr(env, "steps_beyond_terminated"):  # CartPole: a new episode, as after reset()
        env.steps_beyond_terminated = None


def _physical(eng, i: int) -> np.ndarray:
    return np.array([getattr(eng.state, name)[i] for name in eng.game.physical_state])


def _exact(values) -> str:
    """``values`` with as many digits as tell each number apart (NumPy's repr shows 8)."""
    return np.array2string(np.asarray(values), floatmode="unique", separator=", ")


def _assert_bitwise(actual, expected, what: str) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.tobytes() == expected.tobytes(), (
        f"{what}: vecsim {_exact(actual)} != Gymnasium {_exact(expected)} ({actual.dtype}, {expected.dtype})"
    )


def _assert_rows_bitwise(actual, expected, what: str, describe: Callable) -> None:
    """Row ``i`` of ``actual`` has the dtype and bytes of row ``i`` of ``expected``, for every
    ``i``; else the message counts the rows that differ and shows the first (``describe(i)``)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (
        f"{what}: vecsim {actual.dtype} {actual.shape} != Gymnasium {expected.dtype} {expected.shape}"
    )
    n = len(actual)
    as_bytes = [np.ascontiguousarray(a).reshape(n, -1).view(np.uint8) for a in (actual, expected)]
    differ = np.flatnonzero((as_bytes[0] != as_bytes[1]).any(axis=1))
    assert differ.size == 0, (
        f"{what}: {differ.size} of {n} differ; the first, {describe(differ[0])}: "
        f"vecsim {_exact(actual[differ[0]])} != Gymnasium {_exact(expected[differ[0]])}"
    )


def _random_actions(case: Case, eng, rng, n: int = K) -> np.ndarray:
    if case.action_bounds is None:
        return rng.integers(0, eng.single_action_space.n, n)
    low, high = (np.broadcast_to(np.asarray(b, dtype=np.float64), (n,)) for b in case.action_bounds(eng.params))
    kind = rng.integers(0, 6, n)
    inside = rng.uniform(low, high)
    beyond = rng.uniform(1.5 * low, 1.5 * high)
    huge = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(1, 4, n)
    picks = np.choose(kind, [inside, beyond, low, high, huge, np.zeros(n)])
    return picks.astype(np.float32).reshape(n, 1)  # low, high: exactly the float32 bounds


def _gym_action(case: Case, actions: np.ndarray, i: int):
    return int(actions[i]) if case.action_bounds is None else actions[i].copy()


def play_in_lockstep(case: Case, eng, envs: list, rng, steps: int = STEPS) -> int:
    """Step both sides ``steps`` times; returns how many episodes terminated.

    A terminated env, and every env each ``RESEED_EVERY`` steps, gets a fresh random state.
    """
    for i, env in enumerate(envs):
        _put_state(case, eng, env, i, *case.random_state(rng))
    eng.refresh()
    for i, env in enumerate(envs):
        _assert_bitwise(eng.obs[i], case.observe(env), f"{case.env_id} env {i} observation of a written state")
    terminations = 0
    for t in range(steps):
        actions = _random_actions(case, eng, rng)
        result = eng.step_no_reset(actions)
        for i, env in enumerate(envs):
            where = f"{case.env_id} step {t} env {i} action {actions[i]}"
            obs, reward, terminated, truncated, _ = env.step(_gym_action(case, actions, i))
            _assert_bitwise(result.observations[i], obs, f"{where}: observation")
            _assert_bitwise(result.rewards[i], np.float64(reward), f"{where}: reward")
            assert bool(result.terminals[i]) == terminated, f"{where}: terminated"
            assert not result.truncations[i] and not truncated, f"{where}: truncated"
            _assert_bitwise(_physical(eng, i), np.asarray(env.state, dtype=np.float64), f"{where}: state")
        done = result.terminals.copy()
        if done.any():
            terminations += int(done.sum())
            eng.reset_envs(done)
        if t % RESEED_EVERY == RESEED_EVERY - 1:  # fresh far-away states for every env
            done[:] = True
        for i in np.flatnonzero(done):
            _put_state(case, eng, envs[i], i, *case.random_state(rng))
        eng.refresh()
    return terminations


# -- the tests -----------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
def test_matches_gymnasium_bit_for_bit(env_id, engines):
    _skip_if_numpy_trig_differs(env_id)
    case = CASES[env_id]
    terminations = play_in_lockstep(case, engines(env_id), _gym_envs(case, per_env=False), np.random.default_rng(1))
    assert terminations > 0 or env_id == "Pendulum-v1", "the re-seeding after termination ran"


@pytest.mark.parametrize("env_id", IDS)
def test_per_env_params_match_gymnasium_envs_with_those_constants(env_id, engines):
    _skip_if_numpy_trig_differs(env_id)
    case = CASES[env_id]
    eng = engines(env_id, per_env=True)
    for name, values in case.per_env.items():
        np.testing.assert_array_equal(getattr(eng.params, name), values)
    terminations = play_in_lockstep(case, eng, _gym_envs(case, per_env=True), np.random.default_rng(2))
    assert terminations > 0 or env_id == "Pendulum-v1", "the re-seeding after termination ran"


@pytest.mark.parametrize("env_id", ["MountainCarContinuous-v0", "Pendulum-v1"])
def test_out_of_bounds_actions_are_clipped_as_in_gymnasium(env_id, engines):
    """Actions at, just beyond and far beyond the bounds give Gymnasium's result exactly."""
    _skip_if_numpy_trig_differs(env_id)
    case = CASES[env_id]
    eng = engines(env_id)
    envs = _gym_envs(case, per_env=False)
    low, high = (float(b) for b in case.action_bounds(eng.params))
    grid = np.array([low, high, np.nextafter(np.float32(high), np.float32(np.inf)), 1.5 * high,
                     -3.0e38, 3.0e38, 1e-30, -0.0], dtype=np.float32).reshape(K, 1)
    rng = np.random.default_rng(3)
    for _ in range(5):
        for i, env in enumerate(envs):
            _put_state(case, eng, env, i, *case.random_state(rng))
        eng.refresh()
        result = eng.step_no_reset(grid)
        for i, env in enumerate(envs):
            obs, reward, terminated, _, _ = env.step(grid[i].copy())
            _assert_bitwise(result.observations[i], obs, f"{env_id} action {grid[i]}: observation")
            _assert_bitwise(result.rewards[i], np.float64(reward), f"{env_id} action {grid[i]}: reward")
            assert bool(result.terminals[i]) == terminated
        if result.terminals.any():
            eng.reset_envs(result.terminals.copy())


def test_continuous_car_landing_exactly_on_the_float32_wall_stops(engines):
    """``position == self.min_position`` compares an ``np.float32`` position in float32.

    A car moving left that lands, unclipped, exactly on float32(-1.2) counts as at the wall
    (its velocity becomes 0) although float32(-1.2) != -1.2 in float64. Eight neighbouring
    float32 start positions: some stop short, one lands exactly, the rest are clipped.
    """
    case = CASES["MountainCarContinuous-v0"]
    eng = engines(case.env_id)
    envs = _gym_envs(case, per_env=False)
    wall, v0 = np.float32(-1.2), np.float32(-0.005)

    def velocity_after(p):  # Gymnasium's update for action 0 from the float32 state (p, v0)
        return v0 + (np.float32(0.0) * 0.0015 - 0.0025 * math.cos(3 * p))

    p = np.float32(-1.1972)
    for _ in range(3):
        p = np.float32(wall - velocity_after(p))
    starts = [p + np.float32(k) * np.spacing(p) for k in range(-4, 4)]
    assert any(s + velocity_after(s) == wall for s in starts), "one start lands exactly on the wall"
    for i, (env, start) in enumerate(zip(envs, starts)):
        _put_state(case, eng, env, i, np.array([start, v0], dtype=np.float64), np.float32)
    eng.refresh()
    result = eng.step_no_reset(np.zeros((K, 1), dtype=np.float32))
    for i, env in enumerate(envs):
        obs, reward, *_ = env.step(np.zeros(1, dtype=np.float32))
        _assert_bitwise(result.observations[i], obs, f"start {starts[i]!r}: observation")
        _assert_bitwise(result.rewards[i], np.float64(reward), f"start {starts[i]!r}: reward")
    landed = [i for i, s in enumerate(starts) if s + velocity_after(s) == wall]
    assert all(result.observations[i, 1] == 0.0 for i in landed)


@pytest.mark.parametrize("env_id", IDS)
def test_one_step_from_random_states_across_the_observation_space_matches_gymnasium(env_id, engines):
    """``M`` states spread over the observation space and past the termination thresholds
    (``Case.space_states``), each stored as Gymnasium stores it, and a random action each (Box
    actions at, beyond and far beyond the bounds): the observation of the written state, and
    the observation, reward, termination and state after one step, equal Gymnasium's bit for bit.
    """
    _skip_if_numpy_trig_differs(env_id)
    case = CASES[env_id]
    eng = engines(env_id, num_envs=M)
    env = gymnasium.make(env_id).unwrapped
    rng = np.random.default_rng(4)
    values, float32 = case.space_states(rng, M)
    dtypes = [np.float32 if f else np.float64 for f in float32]
    eng.reset(seed=8)  # every env in a fresh episode, whatever an earlier test's step ended
    for i in range(M):
        _put_engine_state(case, eng, i, values[i], dtypes[i])
    eng.refresh()
    written = eng.obs.copy()
    actions = _random_actions(case, eng, rng, M)
    result = eng.step_no_reset(actions)

    seen, obs = np.empty_like(written), np.empty_like(result.observations)
    rewards, terminated, states = np.empty(M), np.empty(M, dtype=bool), np.empty_like(values)
    for i in range(M):
        _put_gym_state(env, values[i], dtypes[i])
        seen[i] = case.observe(env)
        obs[i], rewards[i], terminated[i], truncated, _ = env.step(_gym_action(case, actions, i))
        assert not truncated
        states[i] = np.asarray(env.state, dtype=np.float64)

    def describe(i):
        return f"env {i}: state {_exact(values[i])} stored as {np.dtype(dtypes[i])}, action {_exact(actions[i])}"

    # Gymnasium observes a float32 Acrobot state with NumPy's float32 sin/cos (xfail test below)
    observed = np.flatnonzero(~float32 if env_id == "Acrobot-v1" else np.ones(M, dtype=bool))
    _assert_rows_bitwise(written[observed], seen[observed], f"{env_id} observation of the written state",
                         lambda k: describe(observed[k]))
    _assert_rows_bitwise(result.observations, obs, f"{env_id} observation after a step", describe)
    _assert_rows_bitwise(result.rewards, rewards, f"{env_id} reward", describe)
    _assert_rows_bitwise(result.terminals, terminated, f"{env_id} terminated", describe)
    physical = np.stack([getattr(eng.state, name) for name in eng.game.physical_state], axis=1)
    _assert_rows_bitwise(physical, states, f"{env_id} state after a step", describe)
    assert not result.truncations.any()
    assert 0 < terminated.sum() < M or env_id == "Pendulum-v1", "both sides of the termination test ran"


def test_continuous_car_reset_to_a_float32_number_steps_in_float64_as_gymnasiums_reset_state():
    """Gymnasium's reset stores a float64 array, and its first step computes in float64 even
    when the values are float32 numbers, as ``reset(options={"low": b, "high": b})`` leaves
    them for a float32 ``b``; vecsim's reset to ``reset_low = reset_high = b`` does the same."""
    case = CASES["MountainCarContinuous-v0"]
    bounds = np.linspace(-0.6, -0.4, K).astype(np.float32).astype(np.float64)
    eng = vecsim.make(case.env_id, num_envs=K, max_episode_steps=None, parallel=False,
                      reset_low=bounds, reset_high=bounds)
    envs = _gym_envs(case, per_env=False)
    rng = np.random.default_rng(6)
    for episode in range(16):
        eng.reset(seed=episode)
        for i, env in enumerate(envs):
            env.reset(seed=episode, options={"low": bounds[i], "high": bounds[i]})
            assert env.state.dtype == np.float64 and env.state[0] == eng.state.position[i]
        for t in range(3):  # the float64 first step, then float32 ones
            actions = _random_actions(case, eng, rng)
            result = eng.step_no_reset(actions)
            for i, env in enumerate(envs):
                where = f"reset to {bounds[i]!r}, episode {episode} step {t}, action {actions[i]}"
                obs, reward, terminated, _, _ = env.step(actions[i].copy())
                _assert_bitwise(result.observations[i], obs, f"{where}: observation")
                _assert_bitwise(result.rewards[i], np.float64(reward), f"{where}: reward")
                assert bool(result.terminals[i]) == terminated, f"{where}: terminated"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_continuous_car_state_assigned_as_an_array_steps_in_that_arrays_dtype(dtype):
    """``env.unwrapped.state = array``: Gymnasium's next step computes in the array's dtype, even
    where a float64 array holds float32 numbers (the numbers alone would say float32)."""
    gym_env = gymnasium.make("MountainCarContinuous-v0").unwrapped
    env = gymnasium.make("vecsim/MountainCarContinuous-v0")
    gym_env.reset(seed=0)
    env.reset(seed=0)
    rng = np.random.default_rng(7)
    for k in range(300):
        state = np.array([rng.uniform(-1.2, 0.5), rng.uniform(-0.07, 0.07)]).astype(np.float32).astype(dtype)
        action = np.array([rng.uniform(-1.2, 1.2)], dtype=np.float32)
        gym_env.state, env.unwrapped.state = state.copy(), state.copy()
        obs, reward, terminated, _, _ = gym_env.step(action)
        ours, our_reward, our_terminated, truncated, _ = env.step(action)
        _assert_bitwise(ours, obs, f"state {state!r}, action {action}: observation")
        _assert_bitwise(np.float64(our_reward), np.float64(reward), f"state {state!r}: reward")
        assert our_terminated == terminated
        if our_terminated or truncated:
            env.reset(seed=k)


@pytest.mark.xfail(reason="Gymnasium's Acrobot._get_ob takes NumPy's float32 sin/cos of the float32 state "
                          "reset leaves (SIMD loops, not correctly rounded: about 1 angle in 1,000 differs "
                          "in the last bit here); vecsim rounds the C library's float64 values")
def test_acrobot_observes_its_float32_reset_state_as_gymnasium_does(engines):
    case = CASES["Acrobot-v1"]
    eng = engines(case.env_id, num_envs=M)
    env = gymnasium.make(case.env_id).unwrapped
    expected = np.empty_like(eng.obs)
    starts = np.empty((M, 4))
    eng.reset(seed=9)
    for i in range(M):
        expected[i], _ = env.reset(seed=i)
        starts[i] = env.state
        _put_engine_state(case, eng, i, starts[i], np.float32)
    eng.refresh()
    _assert_rows_bitwise(eng.obs, expected, "Acrobot-v1 reset observation", lambda i: f"start {_exact(starts[i])}")


@pytest.mark.parametrize("env_id", IDS)
def test_reset_draws_gymnasiums_starting_distribution(env_id, engines):
    eng = engines(env_id)
    eng.reset(seed=11)
    states = np.stack([_physical(eng, i) for i in range(K)])
    if env_id == "CartPole-v1":
        assert np.all(np.abs(states) <= 0.05)
    elif env_id.startswith("MountainCar"):
        assert np.all((-0.6 <= states[:, 0]) & (states[:, 0] <= -0.4)) and np.all(states[:, 1] == 0.0)
    elif env_id == "Pendulum-v1":
        assert np.all(np.abs(states[:, 0]) <= math.pi) and np.all(np.abs(states[:, 1]) <= 1.0)
    else:  # Acrobot stores its starting state as float32
        assert np.all(np.abs(states) <= 0.1)
        np.testing.assert_array_equal(states.astype(np.float32).astype(np.float64), states)
    assert len(np.unique(states[:, 0])) == K, "each env draws from its own stream"


@pytest.mark.parametrize("env_id", IDS)
def test_render_rgb_and_text(env_id, engines):
    eng = engines(env_id)
    eng.reset(seed=5)
    for _ in range(3):
        eng.step(eng.zero_actions())
    img = eng.render_rgb(0)
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8
    assert img.ndim == 3 and img.shape[2] == 3 and img.shape[0] >= 100 and img.shape[1] >= 100
    assert np.any(img != img[0, 0]), "more than one colour"
    text = eng.render_text(0)
    assert isinstance(text, str) and text.strip()


#: The state fields in the order of the Gymnasium env's ``state``.
GYMNASIUM_STATE = {
    "CartPole-v1": ("x", "x_dot", "theta", "theta_dot"),
    "MountainCar-v0": ("position", "velocity"),
    "MountainCarContinuous-v0": ("position", "velocity"),
    "Pendulum-v1": ("theta", "theta_dot"),
    "Acrobot-v1": ("theta1", "theta2", "dtheta1", "dtheta2"),
}


def _ink(img: np.ndarray) -> np.ndarray:
    """The pixels dark enough to be drawn lines and shapes rather than anti-aliased fringes."""
    return np.any(img < 160, axis=2)


def _within_a_pixel(mask: np.ndarray) -> np.ndarray:
    near = mask.copy()
    near[1:] |= mask[:-1]
    near[:-1] |= mask[1:]
    near[:, 1:] |= near[:, :-1].copy()
    near[:, :-1] |= near[:, 1:].copy()
    return near


def _agreement(a: np.ndarray, b: np.ndarray) -> float:
    """The smaller of the shares of each image's ink that lies within a pixel of the other's."""
    ink_a, ink_b = _ink(a), _ink(b)
    return min((ink_a & _within_a_pixel(ink_b)).sum() / ink_a.sum(), (ink_b & _within_a_pixel(ink_a)).sum() / ink_b.sum())


@pytest.mark.parametrize("env_id", IDS)
def test_render_rgb_draws_gymnasiums_scene(env_id, engines):
    """The picture is Gymnasium's (its pygame renderer, given the same state) up to
    anti-aliasing: at least 98% of either image's ink lies within a pixel of the other's, while
    moving the first state variable by 0.05 (three pixels of CartPole's cart) falls below."""
    eng = engines(env_id)
    eng.reset(seed=11)
    env = gymnasium.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    scene = env.unwrapped
    try:
        for _ in range(4):
            for _ in range(6):
                eng.step(eng.zero_actions())
            for i in range(0, K, 3):
                state = np.array([getattr(eng.state, name)[i] for name in GYMNASIUM_STATE[env_id]])
                if env_id == "Pendulum-v1":
                    scene.last_u = None  # zero torque: no arrow in either picture
                scene.state = state
                ours, gymnasiums = eng.render_rgb(i), scene.render()
                assert ours.shape == gymnasiums.shape
                assert _agreement(ours, gymnasiums) >= 0.98, (env_id, state)
                scene.state = state + np.eye(len(state))[0] * 0.05
                assert _agreement(ours, scene.render()) < 0.98, (env_id, state)
    finally:
        env.close()


def test_acrobot_steps_promptly_from_an_angle_set_far_out_of_range():
    """Gymnasium's ``wrap`` subtracts 2 pi until the angle is in range: from 1e15 rad, about
    1.6e14 loops (days). vecsim's takes the whole turns at once beyond 2**20 of them, and
    matches Gymnasium bit for bit below."""
    env = gymnasium.make("vecsim/Acrobot-v1")
    gym_env = gymnasium.make("Acrobot-v1").unwrapped
    env.reset(seed=0)
    gym_env.reset(seed=0)
    for theta in (7.5, -1e3, 1e15, -3e300):
        env.unwrapped.state = np.array([theta, 0.0, 0.0, 0.0])
        obs, *_ = env.step(1)
        assert -math.pi <= env.unwrapped.state[0] <= math.pi and np.isfinite(obs).all(), theta
        if abs(theta) < 1e6:
            gym_env.state = np.array([theta, 0.0, 0.0, 0.0])
            _assert_bitwise(obs, gym_env.step(1)[0], f"theta1 {theta}")
