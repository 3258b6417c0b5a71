"""PettingZoo front ends of a multi-seat vecsim game (``SEATS`` > 1): ``VecsimAECEnv``
(PettingZoo's ``AECEnv``, agents acting in turn) and ``VecsimParallelEnv`` (its
``ParallelEnv``), each over one game of an engine, stepped by the same kernels.

Agents are named by seat, ``"seat_0"``, ``"seat_1"``, ...; the game must be in the mode where
every seat is played by the caller (Blokus's default ``mode="selfplay"``). Observations follow
PettingZoo's convention for games with illegal moves: a dict with ``"observation"``, the
game's flat observation ``(obs_dim,)`` from that seat's point of view
(``vecsim.gym.vector.split_row`` gives the parts of a ``Dict`` space), and ``"action_mask"``
``(n_actions,)`` int8, 1 where the move is legal (all 0 for a seat not to move). Each seat's
reward is its ``seat_rewards`` entry of the move; the terminal infos hold the game's extra
outputs (Blokus: ``final_scores``, ``winner``). Needs ``pip install "vecsim[pettingzoo]"``.
"""

from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces

from vecsim.extras import require

require("pettingzoo", "pettingzoo", "vecsim.gym.pettingzoo")
from pettingzoo import AECEnv, ParallelEnv  # noqa: E402

from vecsim.engine.engine import Engine, check_seed  # noqa: E402
from vecsim.engine.registry import resolve


class _SeatGame:
    """One game of ``env_id`` on an engine of one env, with its agents, spaces and views."""

    def __init__(self, env_id: str, render_mode: str | None, params: dict):
        game = resolve(env_id)
        if game.seats < 2:
            raise ValueError(f"the PettingZoo API needs a game with seats, but {env_id} has SEATS = {game.seats}")
        game.check_render_mode(render_mode)
        if not game.has_action_mask:
            raise ValueError(f"the PettingZoo API of vecsim needs a game with an action mask, and {env_id} has none")
        self.engine = Engine(game, 1, **params)
        self.render_mode = render_mode
        self.possible_agents = [f"seat_{q}" for q in range(game.seats)]
        n_actions = self.engine.n_mask
        flat = spaces.flatten_space(self.engine.single_observation_space)
        self.obs_space = spaces.Dict({"observation": flat,
                                      "action_mask": spaces.Box(0, 1, (n_actions,), np.int8)})
        self.act_space = spaces.Discrete(n_actions)
        self.no_moves = np.zeros(n_actions, np.int8)

    def acting(self) -> str:
        return self.possible_agents[int(self.engine.acting_seat[0])]

    def reset(self, seed) -> None:
        if seed is not None:
            check_seed(seed)
        self.engine.reset(seed=seed)

    def current_obs(self) -> dict:
        """The acting seat's observation and legal moves."""
        eng = self.engine
        return {"observation": eng.obs[0].copy(), "action_mask": eng.action_masks()[0].astype(np.int8)}

    def play(self, agent: str, action) -> None:
        """The acting seat ``agent`` plays ``action``, checked in the words of the PettingZoo API."""
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            if not (isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu"):
                raise TypeError(f"the action of {agent} must be an int in [0, {self.act_space.n}), "
                                f"but got {action!r}")
        a = int(action)
        if not 0 <= a < self.act_space.n:
            raise ValueError(f"the action of {agent} must be in [0, {self.act_space.n}), but got {a}")
        if not self.engine.action_masks()[0, a]:
            raise ValueError(f"action {a} of {agent} is not a legal move (its action_mask is 0 there)")
        self.engine.step_no_reset(np.array([a], np.int64))

    def seat_rewards(self) -> dict:
        rewards = self.engine.seat_rewards[0]
        return {agent: float(rewards[q]) for q, agent in enumerate(self.possible_agents)}

    def final_infos(self) -> dict:
        """Each agent's terminal info: the game's extra outputs, the seat's entry of per-seat ones."""
        eng, seats = self.engine, len(self.possible_agents)
        infos = {}
        for q, agent in enumerate(self.possible_agents):
            info = {}
            for key, arr in eng.info_arrays.items():
                if key in ("acting_seat", "seat_rewards"):
                    continue
                row = arr[0]
                info[key] = row[q].item() if np.ndim(row) == 1 and row.shape[0] == seats else np.array(row).tolist()
            infos[agent] = info
        return infos

    def render(self):
        if self.render_mode == "rgb_array":
            return self.engine.render_rgb(0)
        if self.render_mode == "ansi":
            return self.engine.render_text(0)
        return None


class VecsimAECEnv(AECEnv):
    """One game of a multi-seat vecsim game as a PettingZoo ``AECEnv``: the seat to move is
    ``agent_selection``; a seat that cannot move is skipped (Blokus: it has passed for good).

    Parameters
    ----------
    env_id : str
        A vecsim id of a game with ``SEATS`` > 1, e.g. ``"vecsim/BlokusDuo-v0"``.
    render_mode : {None, "rgb_array", "ansi"}
    **params
        Game parameters (as ``vecsim.make``), in the mode where every seat acts.

    An agent's observation is the one it last received at its turn (at the reset, the first
    seat's: the starting position); ``action_mask`` is all 0 but for the agent to move.
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "is_parallelizable": False}

    def __init__(self, env_id: str, render_mode: str | None = None, **params):
        super().__init__()
        self._game = _SeatGame(env_id, render_mode, params)
        self.metadata = dict(self.metadata, name=self._game.engine.game.env_id)
        self.render_mode = render_mode
        self.possible_agents = list(self._game.possible_agents)
        self._seen: dict = {}

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        self._check_agent(agent)
        return self._game.obs_space

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        self._check_agent(agent)
        return self._game.act_space

    def _check_agent(self, agent) -> None:
        if agent not in self.possible_agents:
            raise ValueError(f"agent must be one of {self.possible_agents}, but got {agent!r}")

    def reset(self, seed=None, options=None) -> None:
        self._game.reset(seed)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}
        first = self._game.current_obs()["observation"]
        self._seen = dict.fromkeys(self.agents, first)
        self.agent_selection = self._game.acting()

    def observe(self, agent):
        self._check_agent(agent)
        game = self._game
        if agent == self.agent_selection and not (self.terminations.get(agent) or self.truncations.get(agent)):
            return game.current_obs()
        return {"observation": self._seen[agent].copy(), "action_mask": game.no_moves.copy()}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self._game
        self._seen[agent] = game.engine.obs[0].copy()
        game.play(agent, action)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = game.seat_rewards()
        self._accumulate_rewards()
        eng = game.engine
        if eng.terminals[0] or eng.truncations[0]:
            done = dict.fromkeys(self.agents, True)
            if eng.terminals[0]:
                self.terminations = done
            else:
                self.truncations = done
            self.infos = game.final_infos()
            for a in self.agents:
                self._seen[a] = eng.obs[0].copy()  # the final position
        self.agent_selection = game.acting()

    def render(self):
        return self._game.render()

    def close(self) -> None:
        self._game.engine.close()


class VecsimParallelEnv(ParallelEnv):
    """One game of a multi-seat vecsim game as a PettingZoo ``ParallelEnv``: every live agent
    is given an observation each step, and a step plays the move of the seat to move (the
    only one whose ``action_mask`` is not all 0); the other agents' actions are not used.

    Parameters as ``VecsimAECEnv``'s. Rewards are every seat's ``seat_rewards`` of the move;
    all agents end together, with the game's terminal infos.
    """

    metadata = {"render_modes": ["rgb_array", "ansi"]}

    def __init__(self, env_id: str, render_mode: str | None = None, **params):
        self._game = _SeatGame(env_id, render_mode, params)
        self.metadata = dict(self.metadata, name=self._game.engine.game.env_id)
        self.render_mode = render_mode
        self.possible_agents = list(self._game.possible_agents)
        self.agents = []
        self._seen: dict = {}

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        if agent not in self.possible_agents:
            raise ValueError(f"agent must be one of {self.possible_agents}, but got {agent!r}")
        return self._game.obs_space

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        if agent not in self.possible_agents:
            raise ValueError(f"agent must be one of {self.possible_agents}, but got {agent!r}")
        return self._game.act_space

    def _observations(self) -> dict:
        game = self._game
        acting = game.acting()
        now = game.current_obs()
        self._seen[acting] = now["observation"]
        return {agent: now if agent == acting else {"observation": self._seen[agent].copy(),
                                                     "action_mask": game.no_moves.copy()}
                for agent in self.agents}

    def reset(self, seed=None, options=None):
        self._game.reset(seed)
        self.agents = list(self.possible_agents)
        self._seen = dict.fromkeys(self.agents, self._game.current_obs()["observation"])
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict):
        if not self.agents:
            raise RuntimeError("the game is over: call reset() before stepping")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict of agent -> action, but got {type(actions).__name__}")
        game = self._game
        acting = game.acting()
        if acting not in actions:
            raise ValueError(f"actions must hold the move of {acting}, the seat to move, but got keys "
                             f"{sorted(actions)}")
        game.play(acting, actions[acting])
        eng = game.engine
        rewards = game.seat_rewards()
        terminated = bool(eng.terminals[0])
        truncated = bool(eng.truncations[0])
        agents = self.agents
        if terminated or truncated:
            for a in agents:
                self._seen[a] = eng.obs[0].copy()
            obs = {a: {"observation": eng.obs[0].copy(), "action_mask": game.no_moves.copy()} for a in agents}
            infos = game.final_infos()
            self.agents = []
        else:
            obs = self._observations()
            infos = {a: {} for a in agents}
        return (obs, {a: rewards[a] for a in agents}, dict.fromkeys(agents, terminated),
                dict.fromkeys(agents, truncated), infos)

    def render(self):
        return self._game.render()

    def close(self) -> None:
        self._game.engine.close()
