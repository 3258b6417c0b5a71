"""Shadow mode (``games/drmario/shadow.py``): twins that track games played elsewhere, from
imperfect evidence, and give the coordinator simulation mode's decisions.

The games elsewhere are the emulator capture of the attract demo (the capture's own facts)
and games on the frame-exact rules fed the twins' scripts (``perception.ExternalGames``); the
evidence comes through ``perception.Perception`` with 2 frames of capture latency, 0-3 frames of
latency jitter and 5% of the frames dropped."""

from pathlib import Path

import numpy as np
import pytest

import vecsim
from vecsim.games.drmario import perception as P
from vecsim.games.drmario import decision, rules, shadow
from vecsim.games.drmario.replay import frames
from vecsim.games.drmario.state import allocate
from vecsim.games.drmario.tables import POWER_ON_CYCLE

DATA = Path(__file__).resolve().parents[2] / "data" / "drmario"


@pytest.fixture(scope="module")
def capture():
    return P.CaptureFacts(DATA / "nes_demo.json", DATA / "nes_demo_inputs.json")


def _demo_twins(capture, n):
    twins = shadow.ShadowTwins(n, level=10, speed="med", driven_by="inputs")
    twins.start_from(capture.start_state(n))
    twins.schedule_inputs(np.repeat(capture.buttons[None], n, axis=0))
    return twins


def _replayed_decisions(capture):
    """Simulation's costs at each decision point of the demo: the inputs replayed on the
    frame-exact rules, planned at each point where the pill becomes controllable."""
    s = allocate(1, decision=True)
    start = capture.start_state(1)
    shadow.copy_rules_rows(s, start)
    costs = []
    for b in capture.buttons:
        before = s.next_action[0]
        frames(s, np.array([b], np.int64))
        if before != rules.FALLING and s.next_action[0] == rules.FALLING:
            decision.next_decision(s, np.int64(0), np.int64(0))
            costs.append(s.cost_to_lock[0].copy())
    return costs


def test_the_demo_capture_is_tracked_with_no_false_desync_and_simulations_decisions(capture):
    n = 3  # three captures of the demo, each with its own jitter and drops
    twins = _demo_twins(capture, n)
    perception = P.Perception(n, seed=1, latency_frames=2, jitter_frames=3, drop=0.05)
    expected = _replayed_decisions(capture)
    seen = []
    for f in range(1, capture.frames + 1):
        before = twins.tracking.decisions.copy()
        twins.ingest(perception.observe(capture.facts(f, n), f))
        for i in np.flatnonzero(twins.tracking.decisions != before):
            seen.append((i, int(twins.tracking.decisions[i]) - 1, twins.plan.cost_to_lock[i].copy()))
        assert np.all(twins.tracking.desyncs == 0), f"a false desync at frame {f}"
    assert len(expected) == 43  # the capture's 43 spawns, each a decision point
    assert len(seen) == n * len(expected)
    for i, k, cost in seen:
        np.testing.assert_array_equal(cost, expected[k], err_msg=f"twin {i}, decision {k}")
    assert np.all(twins.frame == capture.frames)
    assert np.all(twins.quality & shadow.LOCKED) and np.all(twins.quality & shadow.TIMEBASE_STABLE)
    assert np.all(twins.quality & shadow.PARTIAL)  # the capture has no pill colors
    # Capture latency 2 frames plus jitter 1.5 on average, at the NTSC rate.
    tb = twins.timebase
    np.testing.assert_allclose(tb.latency * shadow.NTSC_FRAME_RATE, 3.5, atol=0.5)
    assert np.all(np.abs(tb.drift_ppm) < 500) and np.all(tb.jitter_frames < 2.0)


def test_a_perfect_capture_agrees_with_the_demo_at_its_own_frame(capture):
    """No latency, jitter or drops: every record agrees with the track at exactly its frame
    (the inputs file reproduces the emulator capture frame by frame)."""
    twins = _demo_twins(capture, 1)
    perception = P.Perception(1, latency_frames=0, jitter_frames=0, drop=0.0)
    for f in range(1, capture.frames + 1):
        twins.ingest(perception.observe(capture.facts(f), f))
        assert twins.tracking.mismatch[0] == 0 and twins.tracking.offset[0] == 0, f"frame {f}"


def test_faults_shown_in_the_capture_are_each_detected_and_clean_twins_stay_locked(capture):
    n = 7
    twins = _demo_twins(capture, n)
    faults = [P.Fault("teleport", 0, 700), P.Fault("flip", 1, 900), P.Fault("skip", 2, 1100),
              P.Fault("jump", 3, 1300, 0.3), P.Fault("jump", 4, 1500, -0.2)]
    run = P.run_capture(twins, capture, P.Perception(n, seed=7), faults, frames=2000)
    for k, fault in enumerate(faults):
        i = fault.twin
        delay = run.detected[i][0] - run.injected[k]
        assert 0 < delay <= 12, (fault, run.detected[i])
        if fault.kind == "jump":  # re-locked on the frame the jump moved: +0.3 s, 18 frames back
            moved = [e[2] for e in run.events[i] if e[0] == "soft_resync"]
            assert abs(moved[0] + round(fault.seconds * shadow.NTSC_FRAME_RATE)) <= 2, run.events[i]
            assert twins.quality[i] & shadow.LOCKED
    # Rebuilt at the next spawn (the capture shows no colors: the pill is the reserve's); the
    # pill locks where the capture's did, and the twin is locked again.
    assert [e[0] for e in run.events[0]] == ["desync", "hard_resync"] and twins.quality[0] & shadow.LOCKED
    assert not run.detected[5] and not run.detected[6] and np.all(twins.quality[5:] & shadow.LOCKED)


def _quickest_low(info, i):
    """The lowest feasible placement, the quickest of those: games that last."""
    feasible = np.flatnonzero(info["action_mask"][i])
    rows = (feasible % 128) // 8
    low = feasible[rows == rows.max()]
    return int(low[np.argmin(info["cost_to_lock"][i][low])])


def test_a_hundred_simulated_games_no_false_desync_and_the_simulations_decisions():
    n = 100
    seeds = POWER_ON_CYCLE[np.arange(n) * 317 + 11]
    level, speed = 12, 2
    twins = shadow.ShadowTwins(n, level=level, speed=speed)
    twins.reset(seeds)
    games = P.ExternalGames.levels(seeds, level, speed)
    rng = np.random.default_rng(0)

    def choose(info, i):  # a random feasible placement
        return int(rng.choice(np.flatnonzero(info["action_mask"][i])))

    run = P.run_decisions(twins, games, P.Perception(n, seed=4), choose, 1800)
    assert np.all(twins.tracking.desyncs == 0)
    assert all(not d for d in run.detected)
    # The same placements in simulation mode give the same decisions, one by one.
    sim = vecsim.make("DrMario-v0", n, level=level, speed=speed, seed=seeds)
    sim.reset(seed=0)
    counts = [len(d) for d in run.decisions]
    assert min(counts) >= 5
    for k in range(max(counts)):
        info = sim.info_arrays
        actions = np.zeros(n, np.int64)
        for i in range(n):
            if k < counts[i]:
                a, twin_info = run.decisions[i][k]
                for key, value in info.items():  # the mask, costs, tau and every other output
                    np.testing.assert_array_equal(twin_info[key], value[i], err_msg=f"{key}: game {i}, decision {k}")
                np.testing.assert_array_equal(twin_info["action_mask"], sim.masks[i])
                np.testing.assert_array_equal(twin_info["obs"], sim.obs[i])
                actions[i] = a
            elif sim.masks[i].any():
                actions[i] = np.flatnonzero(sim.masks[i])[0]
        sim.step(actions)
    sim.close()


@pytest.fixture(scope="module")
def fault_run():
    n = 10
    seeds = POWER_ON_CYCLE[np.arange(n) * 131 + 7]
    kinds = [("teleport", 0.0), ("flip", 0.0), ("skip", 0.0), ("jump", 0.3), ("jump", -0.2)] * 2
    faults = [P.Fault(kind, i, 300 + 40 * i, seconds) for i, (kind, seconds) in enumerate(kinds)]
    twins = shadow.ShadowTwins(n, level=5, speed="low", recovery="hard")
    twins.reset(seeds)
    games = P.ExternalGames.levels(seeds, 5, 0)
    run = P.run_decisions(twins, games, P.Perception(n, seed=3), _quickest_low, 2000, faults=faults)
    return twins, faults, run


def test_every_injected_fault_is_detected_once_and_the_twin_recovers(fault_run):
    twins, faults, run = fault_run
    assert np.all(run.injected >= 0)
    for k, fault in enumerate(faults):
        i = fault.twin
        assert len(run.detected[i]) == 1, (fault, run.events[i])
        delay = run.detected[i][0] - run.injected[k]
        # A record shows a fault after the capture latency; four disagreeing records declare it.
        # A clock jump shows only once the facts change: the pill falls a row every 41 frames
        # at this speed, and the throw of the next pill takes 22 more with no change.
        assert 0 < delay <= (100 if fault.kind == "jump" else 12), (fault, delay)
        kinds = [e[0] for e in run.events[i]]
        assert kinds == ["desync", "soft_resync" if fault.kind == "jump" else "hard_resync"], run.events[i]
        assert twins.quality[i] & shadow.LOCKED  # back in lock
    # The soft resyncs moved the timebase by the jump: +0.3 s is 18 frames, -0.2 s is -12.
    moved = {f.seconds: [e[2] for e in run.events[f.twin] if e[0] == "soft_resync"][0]
             for f in faults if f.kind == "jump"}
    assert abs(moved[0.3] + 18) <= 3 and abs(moved[-0.2] - 12) <= 3
    # A desync's value names what disagreed: a flipped virus shows in cells and virus counts.
    flip = [e for e in run.events[1] if e[0] == "desync"][0]
    assert flip[2] & shadow.MISMATCH_CELLS and flip[2] & shadow.MISMATCH_VIRUSES


def test_policy_end_and_a_failed_soft_resync_end_the_twin_with_desync():
    n = 2
    seeds = POWER_ON_CYCLE[[5, 9]]
    twins = shadow.ShadowTwins(n, level=12, speed="high", recovery=["end", "soft"])
    twins.reset(seeds)
    games = P.ExternalGames.levels(seeds, 12, 2)
    faults = [P.Fault("flip", 0, 100), P.Fault("flip", 1, 100)]
    run = P.run_decisions(twins, games, P.Perception(n, seed=5), _quickest_low, 400, faults=faults)
    assert list(twins.terminal_reason) == [shadow.DESYNC, shadow.DESYNC]
    assert np.all(twins.scripts_void) and not twins.awaiting.any()
    assert [len(d) for d in run.detected] == [1, 1]


def test_bad_input_is_refused_by_name(capture):
    with pytest.raises(ValueError, match="recovery must be one of"):
        shadow.ShadowTwins(2, recovery="later")
    with pytest.raises(ValueError, match="num_twins must be an int >= 1"):
        shadow.ShadowTwins(0)
    with pytest.raises(ValueError, match="level must be an integer in"):
        shadow.ShadowTwins(1, level=30)
    twins = shadow.ShadowTwins(2, level=12, speed="high", horizon=100)  # awaiting from the start
    with pytest.raises(RuntimeError, match="before reset"):
        twins.ingest(shadow.evidence(2))
    with pytest.raises(ValueError, match="seed must be"):
        twins.reset(1)  # off the power-on cycle: the LFSR falls to 0
    twins.reset(POWER_ON_CYCLE[[3, 4]])
    ev = shadow.evidence(2)
    ev.present[:] = True
    ev.pill_seen[:] = True
    ev.x[1] = 8
    with pytest.raises(ValueError, match=r"Evidence.x\[1\]=8 is outside \[0, 7\]"):
        twins.ingest(ev)
    with pytest.raises(ValueError, match="Evidence.board must be a C-contiguous uint8"):
        twins.ingest(ev._replace(board=ev.board.astype(np.int64)))
    frame_before = twins.frame.copy()
    with pytest.raises(ValueError, match=r"Evidence.time\[0\]=nan"):
        twins.ingest(ev._replace(x=np.zeros(2, np.int64), time=np.array([np.nan, 0.0])))
    np.testing.assert_array_equal(twins.frame, frame_before)  # nothing ran
    assert twins.awaiting.all()
    infeasible = int(np.flatnonzero(~twins.action_mask[0])[0])
    with pytest.raises(ValueError, match=rf"actions\[0\]={infeasible} is infeasible"):
        twins.decide(np.array([infeasible, 0]))
    with pytest.raises(ValueError, match=r"actions\[1\]=512 is not a placement"):
        twins.decide(np.array([0, 512]), np.array([False, True]))
    with pytest.raises(RuntimeError, match="driven_by='inputs'"):
        twins.schedule_inputs(np.zeros((2, 4), np.uint8))
    with pytest.raises(ValueError, match=r"buffers\['tau'\] must be a C-contiguous writeable int64 array of shape \(2,\)"):
        shadow.ShadowTwins(2, buffers={"tau": np.zeros(3, np.int64)})
    with pytest.raises(ValueError, match="not a decision output"):
        shadow.ShadowTwins(2, buffers={"obs": np.zeros(2)})
    with pytest.raises(ValueError, match="seed must be"):
        P.ExternalGames.levels([1, 0x8988], 12, 2)  # seed 1 falls to the LFSR's fixed point: it would never start
    start = capture.start_state(2)
    start.x[1] = 9
    with pytest.raises(ValueError, match=r"state.x\[1\] is outside \[0, 7\]"):
        shadow.ShadowTwins(2, driven_by="inputs").start_from(start)


def test_decision_outputs_go_into_the_callers_buffers():
    n = 2
    costs, tau = np.zeros((n, 512), np.uint16), np.full(n, -1, np.int64)
    twins = shadow.ShadowTwins(n, level=12, speed="high", horizon=100, buffers={"cost_to_lock": costs, "tau": tau})
    twins.reset(POWER_ON_CYCLE[[3, 4]])
    assert twins.info["cost_to_lock"] is costs and np.any(costs != decision.UNREACHABLE)
    quickest = np.where(twins.action_mask, costs, 0xFFFF).argmin(axis=1)
    twins.decide(quickest)
    assert np.all(tau > 0) and twins.info["tau"] is tau  # the step's frames, written in place


def test_the_benchmark_prints_the_cost_of_a_record_and_refuses_bad_arguments(capsys):
    from vecsim.bench import drmario_shadow

    drmario_shadow.main(["--twins", "3", "--frames", "40"])
    out = capsys.readouterr().out
    assert "shadow ingest, 3 twins" in out and out.count("twins at 60.1 Hz per core") == 2
    with pytest.raises(ValueError, match="need --twins >= 1"):
        drmario_shadow.main(["--twins", "0"])


# --- the Gymnasium VectorEnv over a link ----------------------------------------------------

def _shadow_env(n, seed=2, **kwargs):
    from vecsim.games.drmario.shadow_env import ShadowVectorEnv

    twins = shadow.ShadowTwins(n, level=12, speed="high")
    return ShadowVectorEnv(twins, P.SimulatedLink(P.Perception(n, seed=seed), level=12, speed=2), **kwargs)


def test_the_vector_env_steps_each_twin_as_simulation_steps_its_game():
    """Twins decide when their own games reach a decision: each twin's observations, masks,
    costs and rewards, decision by decision, are DrMario-v0's for the same placements."""
    n = 6
    seeds = POWER_ON_CYCLE[np.arange(n) * 101 + 7]
    env = _shadow_env(n)
    obs, info = env.reset(options={"lfsr": seeds})
    rng = np.random.default_rng(1)
    seen = [[] for _ in range(n)]  # per twin: [obs, mask, costs, action, reward]
    for _ in range(400):
        actions = np.zeros(n, np.int64)
        for i in np.flatnonzero(info["awaiting"]):
            actions[i] = rng.choice(np.flatnonzero(info["action_mask"][i]))
            seen[i].append([obs[i].copy(), info["action_mask"][i].copy(), info["cost_to_lock"][i].copy(),
                            int(actions[i]), None])
        obs, rewards, terminated, truncated, info = env.step(actions)
        assert not truncated.any() and np.all(rewards[~info["awaiting"] & ~terminated] == 0)
        for i in np.flatnonzero(info["awaiting"] | terminated):
            if seen[i] and seen[i][-1][4] is None:
                seen[i][-1][4] = rewards[i]
        if min(len(s) for s in seen) > 8:  # the 8th decision's reward given
            break
    assert np.all(env.twins.tracking.desyncs == 0) and min(len(s) for s in seen) > 8
    sim = vecsim.make("DrMario-v0", n, level=12, speed=2, seed=seeds)
    sim.reset(seed=0)
    cleared = 0
    for k in range(8):
        actions = np.array([seen[i][k][3] for i in range(n)])
        for i in range(n):
            o, mask, costs, _, _ = seen[i][k]
            np.testing.assert_array_equal(o, sim.obs[i], err_msg=f"twin {i}, decision {k}")
            np.testing.assert_array_equal(mask, sim.masks[i])
            np.testing.assert_array_equal(costs, sim.info_arrays["cost_to_lock"][i])
        sim.step(actions)
        np.testing.assert_array_equal([seen[i][k][4] for i in range(n)], sim.rewards)
        cleared += sim.rewards.sum()
    sim.close()
    assert cleared > 0  # some placement cleared viruses: the rewards were compared where they are not 0


def test_the_vector_env_restarts_the_twins_of_a_reset_mask_and_leaves_the_others():
    n = 3
    seeds = POWER_ON_CYCLE[[40, 50, 60]]
    env = _shadow_env(n, seed=3)
    first, info = env.reset(options={"lfsr": seeds})
    for _ in range(30):
        _, _, _, _, info = env.step(np.where(info["action_mask"], info["cost_to_lock"], 0xFFFF).argmin(axis=1))
    frames = env.twins.frame.copy()
    assert np.all(frames > 100)
    env.reset(options={"reset_mask": np.zeros(n, np.bool_)})  # restarts nothing
    assert np.all(env.twins.frame >= frames)
    obs, info = env.reset(options={"reset_mask": np.array([False, True, False]), "lfsr": seeds})
    assert env.twins.frame[1] < 100 <= min(env.twins.frame[0], env.twins.frame[2])
    np.testing.assert_array_equal(obs[1], first[1])  # game 1 from its start again
    decided = env.twins.tracking.decisions.copy()
    assert decided[1] < min(decided[0], decided[2])
    for _ in range(20):  # and its new game is tracked with no desync
        _, _, _, _, info = env.step(np.where(info["action_mask"], info["cost_to_lock"], 0xFFFF).argmin(axis=1))
    assert env.twins.tracking.decisions[1] > decided[1] and np.all(env.twins.tracking.desyncs == 0)


def test_the_vector_env_stops_a_desynced_twins_actuator_and_goes_on_after_its_hard_resync():
    n = 2
    env = _shadow_env(n, seed=4)
    stopped = []
    stop = env.link.stop
    env.link.stop = lambda which: (stopped.append(which.copy()), stop(which))
    obs, info = env.reset(options={"lfsr": POWER_ON_CYCLE[[70, 80]]})
    teleported, decided = False, None
    for k in range(60):
        obs, _, terminated, _, info = env.step(np.where(info["action_mask"], info["cost_to_lock"], 0xFFFF).argmin(axis=1))
        if k >= 10 and not teleported:
            teleported = env.link.games.teleport_pill(0)  # the game elsewhere, not what the twin planned
            decided = env.twins.tracking.decisions.copy()
    assert teleported and list(env.twins.tracking.desyncs) == [1, 0]
    got = env.twins.telemetry.read()
    mine = [(got.names[k], int(e)) for e, k in zip(got.env, got.kind) if k >= shadow.TM_DESYNC]
    assert mine == [("desync", 0), ("hard_resync", 0)]
    # The desynced twin's actuator stops first; later stops are games that ended.
    assert stopped[0].tolist() == [True, False]
    assert all(env.twins.terminal_reason[w].all() for w in stopped[1:])
    assert env.twins.tracking.decisions[0] > decided[0] + 2  # decisions went on after the rebuild
    assert np.all(env.twins.quality & shadow.LOCKED) and not np.any(env.twins.terminal_reason == shadow.DESYNC)


class _StuckLink(P.SimulatedLink):
    """A capture that stops delivering: every record missing."""

    def receive(self):
        ev = super().receive()
        ev.present[:] = False
        return ev


def test_the_vector_env_refuses_bad_input_by_name_and_gives_up_on_a_silent_link():
    from vecsim.games.drmario.shadow_env import ShadowVectorEnv

    env = _shadow_env(2)
    with pytest.raises(ValueError, match="seed must be"):
        env.reset(options={"lfsr": np.array([1, POWER_ON_CYCLE[5]])})  # off the power-on cycle
    obs, info = env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must be ints of shape \(2,\)"):
        env.step(np.zeros(3, np.int64))
    i = int(np.flatnonzero(info["awaiting"])[0])
    bad = np.zeros(2, np.int64)
    bad[i] = np.flatnonzero(~info["action_mask"][i])[0]
    bad[1 - i] = np.flatnonzero(info["action_mask"][1 - i])[0]
    with pytest.raises(ValueError, match=rf"actions\[{i}\]={bad[i]} is infeasible"):
        env.step(bad)
    with pytest.raises(ValueError, match=r"reset_mask must be a bool array of shape \(2,\)"):
        env.reset(options={"reset_mask": np.array([1, 0])})
    with pytest.raises(ValueError, match="options are 'reset_mask' and 'lfsr'"):
        env.reset(options={"level": 3})
    with pytest.raises(ValueError, match="lacks send, receive, stop"):
        ShadowVectorEnv(shadow.ShadowTwins(1), object.__new__(type("Half", (), {"start": lambda self: 0})))
    with pytest.raises(ValueError, match="driven_by='decisions'"):
        ShadowVectorEnv(shadow.ShadowTwins(1, driven_by="inputs"), P.SimulatedLink(P.Perception(1)))
    stuck = ShadowVectorEnv(shadow.ShadowTwins(2, level=12, speed="high"),
                            _StuckLink(P.Perception(2, seed=1), level=12, speed=2), max_records=50)
    obs, info = stuck.reset(seed=0)
    with pytest.raises(RuntimeError, match="no twin reached a decision in 50 records"):
        stuck.step(np.where(info["action_mask"], info["cost_to_lock"], 0xFFFF).argmin(axis=1))
