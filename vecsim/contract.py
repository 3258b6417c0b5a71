"""The game contract: what a game module declares, and the small helpers games use.

A game is a module (small game) or package (large game) under ``games/`` that declares:

``NAME``, ``ENV_ID``, ``VERSION``
    Display name (``"CartPole"``), Gymnasium id without namespace (``"CartPole-v1"``).
``MAX_EPISODE_STEPS``, ``REWARD_THRESHOLD``
    Registration defaults (``None`` for no limit / no threshold).
``Params``
    A ``NamedTuple`` of numeric constants whose defaults equal the reference the game
    follows. Inside kernels every field is either a scalar or a ``(num_envs,)`` array (per-env
    constants, e.g. domain randomisation); games read a field with ``param(p.field, i)``.
``State``
    A ``NamedTuple`` of arrays whose leading axis is ``num_envs`` (structure of arrays), and
    ``allocate_state(num_envs, float_dtype, params) -> State`` (``params``: the scalar
    ``Params``, for games whose array sizes depend on them).
``PHYSICAL_STATE``
    Names of the ``State`` fields that make up Gymnasium's ``env.unwrapped.state`` vector.
``OBS_ORDER``
    ``"F"`` when the ``(num_envs, obs_dim)`` observation buffer should be column-major, so
    that a kernel writing observation ``k`` for consecutive envs touches consecutive
    addresses (the step loop then vectorises: twice as fast for CartPole in float64, where
    the libm calls sit in ``pre_step_env``); ``"C"`` for large per-env observations.
``EVENTS``
    Names of per-step event counters written into ``events[i, k]`` (may be empty).
``HAS_ACTION_MASK``
    Whether actions can be illegal; then ``write_mask`` fills ``masks[i, :]``.
``PARALLEL_MIN_ENVS``
    Optional: batch size from which the parallel kernel beats the serial one on two or more
    threads (default 512; a game with costly steps parallelises from smaller batches): an
    int, or a dict of ints by precision (``{"float64": 256, "float32": 1024}``; a precision
    left out gets the default), ``None`` for never.
``COLLECT_PARALLEL_MIN_ENVS``
    Optional, in the same forms: the same for the episode collector's step kernels, whose
    serial loops do not vectorise (default: ``PARALLEL_MIN_ENVS``).
``ONE_THREAD_PARALLEL_MIN_ENVS``
    Optional, in the same forms: the same on a single Numba thread, where the parallel
    kernel runs on the calling thread (default ``None``: the serial kernel). It can win there
    only where its step loop vectorises and the serial kernel's does not (Numba marks the
    arrays of a parallel loop's body ``noalias``; the serial kernel's address-table views are
    distinct only for arrays that share no memory). No game needs it since the serial step
    loops vectorise too.
``observation_space(params)``, ``action_space(params)``
    Single-env Gymnasium spaces for scalar ``params``.
``check_params(values)``
    Optional: raise ``ValueError`` for physically meaningless constants.
``render_rgb(values, params) -> uint8 (H, W, 3)`` and ``render_text(values, params) -> str``
    Rendering of one env from ``values``, a dict of its state fields (no window needed).

and these ``@njit`` functions over one env ``i`` of the batch, compiled with
``vecsim.jit.exact`` (or ``fast``): they run inside the batched kernels, which have no
reference counting, so they never allocate (scratch space belongs in ``State``):

``reset_env(s, p, i, rng)``
    Draw env ``i``'s initial state from its own stream (``vecsim.rng``).
``step_env(s, p, i, actions, events, rng) -> (reward, terminated)``
    Advance env ``i`` by ``actions[i]`` (the kernel has already checked ``action_ok``),
    drawing any randomness from env ``i``'s stream in ``rng``; write this step's event
    counts into ``events[i, :]``.
``write_obs(s, p, i, obs)``
    Write env ``i``'s observation into row ``i`` of ``obs``.
``action_ok(p, actions, i) -> bool``
    Whether ``actions[i]`` is well formed (in range, finite).
``write_mask(s, p, i, masks)``
    Write env ``i``'s legal-action mask (``no_mask`` for games without one).

Optionally:

``step_env_fast``
    Same signature as ``step_env``, compiled with ``vecsim.jit.fast``, used in
    ``precision="float32"``.
``pre_step_env(s, p, i, actions)``
    Run for every env in a pass of its own before ``step_env`` (not in float32 with
    ``step_env_fast``). Put the library calls of a step here (``math.sin``...) and store their
    results in scratch ``State`` fields: a loop that calls libm never vectorises, and with the
    calls moved out the step loop does, bit for bit the same results.
``pre_step_draft_env(s, p, i, actions)`` and ``pre_step_fix_env(s, p, i, actions)``
    With ``pre_step_env``: the same work in two passes for the batched step kernel, which runs
    the draft over every env (through ``vecsim.jit.pre_step_draft_run``, a run of envs a call)
    and then the fix over every env. The draft is plain arithmetic (its loop vectorises) and
    may leave a mark in scratch state where it cannot produce the exact value; the fix calls
    the library there. Draft then fix on one env must store exactly
    what ``pre_step_env`` stores (the collectors, which step env by env, call that).
``prepare_params(given: dict) -> dict``
    Turn user arguments into ``Params`` numbers before validation (named choices such as
    ``action_mode="reach"``, presets).
``enforce_mask(p, i) -> bool``
    ``@njit``: whether an action outside env ``i``'s mask must be refused before the step
    (the engine raises ``ValueError`` and nothing changes). Without it masks are advisory.
``info_fields(params) -> dict``
    Extra per-step outputs: info key -> ``State`` field with leading axis ``num_envs``; they
    appear in the VectorEnv's ``info`` and in ``StepResult.extras``.
``DEMO_AGENT``
    ``(name, "module:function", engine kwargs)``: a batched agent ``function(engine, out=)``
    that ``vecsim demo`` plays besides random actions.
``STEP_USES_RNG``
    ``False`` when ``step_env`` draws no random numbers and writes only env ``i``'s own state
    (default ``True``). Then, in NEXT_STEP autoreset, envs due for reset are stepped with the
    others in one branch-free pass and reset afterwards, which is what lets the step loop
    vectorise; a step that draws must not run before the reset it would shift.
``WRITE_OBS_FILLS_ROW``
    ``True`` when ``write_obs`` writes every element of ``obs[i]`` (default ``False``). Then a
    VectorEnv with ``copy=True`` lets the step kernel write new arrays instead of copying the
    engine's buffers (``Engine.step_mode_fresh``): a row left partly unwritten would hold
    whatever memory the new array got.
``kernel_functions(params) -> dict``
    Which ``@njit`` function of the module stands in for a contract function (``step_env``,
    ``step_env_fast`` or ``write_mask``) in the kernels of a batch with scalar ``params``,
    e.g. ``{"write_mask": "write_mask_without_planner"}``; ``{}`` (or no such function) for
    the contract functions themselves. It may look only at ``STRUCTURAL`` params (one value
    for the whole batch), and a stand-in must behave exactly as the function it replaces for
    every env with those params. Numba compiles every function a kernel can reach, so this
    keeps code the batch never runs out of its compile: Tetris's drop and primitive modes
    leave out the reach planner, half of Tetris's cold compile.
``STRUCTURAL``
    Names of ``Params`` fields that must have one value for the whole batch (they shape the
    spaces or choose ``kernel_functions``); the engine refuses per-env arrays that differ.
``ENVS_PER_CALL``
    Envs stepped by one call of the fused per-env function in the step kernels (default 1).
    Every call passes each ``State`` array by value (pointer, shape and strides): for a game
    of many arrays that costs more than a fast step, and a call that steps a run of
    ``ENVS_PER_CALL`` envs pays it once (Tetris, 22 arrays: 24% less time per env with 16).
    Leave it at 1 for a step loop that vectorises (the classic games): LLVM vectorises the
    loop over envs only in the parallel region's own body.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numba import types
from numba.extending import overload

from vecsim import buffers as placed
from vecsim.jit import exact

REQUIRED = (
    "NAME", "ENV_ID", "MAX_EPISODE_STEPS", "Params", "State", "allocate_state",
    "PHYSICAL_STATE", "OBS_ORDER", "EVENTS", "HAS_ACTION_MASK", "observation_space",
    "action_space", "reset_env", "step_env", "write_obs", "action_ok", "write_mask",
    "render_rgb", "render_text",
)


#: Contract functions a game's ``kernel_functions`` may replace in a batch's kernels.
SPECIALISABLE = ("step_env", "step_env_fast", "write_mask")


def param(value, i):
    """Value of a game constant for env ``i``: ``value[i]`` if per-env, else ``value``."""
    return value[i] if isinstance(value, np.ndarray) else value


@overload(param)
def _param_overload(value, i):
    if isinstance(value, types.Array):
        return lambda value, i: value[i]
    return lambda value, i: value


@exact
def no_mask(s, p, i, masks):
    """``write_mask`` of a game whose actions are always legal."""
    return


@exact
def no_pre_step(s, p, i, actions):
    """``pre_step_env`` of a game that needs no separate pass."""
    return


@exact
def discrete_ok(actions, i, n):
    """Whether the discrete action of env ``i`` lies in ``[0, n)``."""
    a = actions[i]
    return a >= 0 and a < n


@exact
def box_finite(actions, i):
    """Whether every component of env ``i``'s continuous action is finite."""
    ok = True
    for k in range(actions.shape[1]):
        v = actions[i, k]
        ok = ok and (v - v == 0.0)
    return ok


def allocate_float_fields(state_cls, num_envs: int, float_dtype) -> tuple:
    """Allocate one ``(num_envs,)`` float array per field of ``state_cls``, placed apart in the
    cache (``vecsim.buffers``)."""
    return state_cls(*(placed.zeros(num_envs, float_dtype) for _ in state_cls._fields))


@dataclass(frozen=True)
class GameSpec:
    """A loaded game module and what the engine derives from it."""

    module: ModuleType

    @property
    def name(self) -> str:
        return self.module.NAME

    @property
    def env_id(self) -> str:
        return self.module.ENV_ID

    @property
    def params_cls(self):
        return self.module.Params

    @property
    def state_cls(self):
        return self.module.State

    def source_files(self) -> list[str]:
        """Source files whose text can change this game's compiled kernels.

        For a game package (``games/tetris/``): every ``.py`` file in it. For a game module
        (``games/cartpole.py``): the modules beside it, which it may import. In both cases the
        top-level package's private helpers (``games/_exactmath.py``) and ``planners/``. A
        changed callee must give a new kernel module; an unrelated game's edit must not.
        """
        import pathlib

        top = importlib.import_module(self.module.__name__.split(".")[0])
        top_dirs = [pathlib.Path(p) for p in getattr(top, "__path__", [])]
        files: set[str] = set()
        if hasattr(self.module, "__path__"):  # a package: all of it
            for root in self.module.__path__:
                files.update(str(f) for f in pathlib.Path(root).rglob("*.py"))
        else:
            files.update(str(f) for f in pathlib.Path(inspect.getfile(self.module)).parent.glob("*.py"))
        for root in top_dirs:
            files.update(str(f) for f in root.glob("_*.py"))
        try:
            for root in importlib.import_module("planners").__path__:
                files.update(str(f) for f in pathlib.Path(root).rglob("*.py"))
        except ImportError:
            pass
        files.add(inspect.getfile(self.module))
        return sorted(files)


    def kernel_functions(self, params) -> tuple[tuple[str, str], ...]:
        """The game's ``kernel_functions(params)`` for scalar ``params``, checked, as sorted
        ``(contract name, stand-in name)`` pairs (empty for a game without it): what the
        kernel modules of that batch are generated with."""
        from numba.core.registry import CPUDispatcher

        chooser = getattr(self.module, "kernel_functions", None)
        chosen = {} if chooser is None else chooser(params)
        if not isinstance(chosen, dict):
            raise TypeError(f"{self.module.__name__}.kernel_functions must return a dict, but returned {chosen!r}")
        for name, stand_in in chosen.items():
            if name not in SPECIALISABLE:
                raise ValueError(f"{self.module.__name__}.kernel_functions may replace only {SPECIALISABLE}, "
                                 f"but named {name!r}")
            if not isinstance(stand_in, str) or not isinstance(getattr(self.module, stand_in, None), CPUDispatcher):
                raise TypeError(f"{self.module.__name__}.kernel_functions chose {stand_in!r} for {name!r}, "
                                f"which is not an @njit function of the module")
        return tuple(sorted(chosen.items()))


def load_game(module_name: str) -> GameSpec:
    """Import a game module and check that it declares the whole contract."""
    mod = importlib.import_module(module_name)
    missing = [name for name in REQUIRED if not hasattr(mod, name)]
    if missing:
        raise TypeError(f"game module {module_name!r} lacks {', '.join(missing)}")
    two_pass = [hasattr(mod, name) for name in ("pre_step_env", "pre_step_draft_env", "pre_step_fix_env")]
    if any(two_pass[1:]) and not all(two_pass):
        raise TypeError(f"game module {module_name!r} must declare pre_step_draft_env and pre_step_fix_env "
                        f"together, with pre_step_env")
    return GameSpec(mod)
