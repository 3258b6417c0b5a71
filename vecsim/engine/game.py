"""The one reader of a game module: ``load_game`` reads it once into a ``GameSpec`` that holds
every name of the contract, each optional one with its default. The engine, the front ends
and the collector ask the ``GameSpec``, never the module. ``games/README.md`` is the guide.

Required (a game that lacks one is refused by name):

``NAME``, ``ENV_ID``
    Display name (``"CartPole"``) and Gymnasium id without namespace (``"CartPole-v1"``).
``Params``
    A ``NamedTuple`` of numeric constants whose defaults equal the reference the game follows.
    In kernels a field is a scalar or a ``(num_envs,)`` array (per-env constants): read it
    with ``vecsim.core.contract.param(p.field, i)``.
``State``, ``allocate_state(num_envs, float_dtype, params) -> State``
    A ``NamedTuple`` of arrays whose leading axis is ``num_envs`` (structure of arrays).
``observation_space(params)``, ``action_space(params)``
    Single-env Gymnasium spaces for scalar ``params`` (``Discrete`` from 0, or a 1-D ``Box``).
``reset_env(s, p, i, rng)``, ``step_env(s, p, i, actions, events, rng) -> (reward, terminated)``,
``write_obs(s, p, i, obs)``
    ``@njit`` functions over env ``i`` (compiled with ``vecsim.core.jit.exact`` or ``fast``);
    they run inside kernels without reference counting, so they never allocate.

Optional, with the default this reader gives:

=============================  ===================================================================
``VERSION``                    ``ENV_ID``'s ``-vN`` suffix
``render_text(values, p)``     one line of the env's state fields, ``name=value`` (``values``: a
                               dict of one env's state fields)
``render_rgb(values, p)``      none: ``render_mode="rgb_array"`` is refused, naming the text one;
                               with it, one env as ``uint8 (H, W, 3)``
``MAX_EPISODE_STEPS``          ``None`` (no truncation); ``REWARD_THRESHOLD``: ``None``
``EVENTS``                     ``()``: names of the per-step counters ``step_env`` writes
``PHYSICAL_STATE``             every ``State`` field: what ``env.unwrapped.state`` shows
``SCRATCH_STATE``              ``()``: ``State`` fields that are the scratch of the thread running
                               a step, not an env's (``vecsim.core.scratch``: leading axis
                               ``thread_rows()``, a step reads row ``thread_row()``); left out of
                               memory per env, ``env_values`` and the checkers' per-env views
``RENDER_FPS``                 30
``action_ok(p, actions, i)``   derived from the action space: ``0 <= a < n``, or every component
                               finite
``write_mask(s, p, i, masks)`` none: every action is always legal (no mask)
``write_obs_changes``          ``write_obs``: ``(s, p, i, obs)``, what env ``i``'s last step
                               changed of its observation, ``obs[i]`` holding the one before;
                               the run step kernels call it while the engine's buffer is current
                               (``vecsim.engine.fusion.step_run_and_write``)
``write_mask_packed``,         none: ``Engine(mask_format="packed")`` is refused (the VectorEnv's
``all_legal_packed``           packed ``mask_format`` packs the bool masks). Both
                               ``(s, p, i, packed)``: env ``i``'s row of packed masks
                               (``vecsim.engine.packed_masks``), and a terminated env's all-legal
                               row, written by the kernels instead of bools
``enforce_mask(p, i)``         none: a mask is advisory; with it an action outside the mask is
                               refused before the step, or with ``invalid_action="flag"`` not
                               stepped and flagged in the engine's ``invalid_action`` event
``action_legal(s, p, i, a)``   none: the binding mask's checks read the mask the last step
                               wrote; with it (a game with ``enforce_mask``) they ask env
                               ``i``'s state whether action ``a`` (already in range) is legal,
                               the same answer as its mask, and the mask is an output only: the
                               kernels may write it into new arrays (``Engine.step_mode_fresh``),
                               and a caller writing into a mask it was handed cannot make an
                               illegal action pass
``refuse_env(s, p, i)``        none: what such a refused step sets in env ``i``'s state (step
                               outputs the game keeps there, such as frames played: 0)
``prepare_params(given)``      none: named choices (``action_mode="reach"``) to numbers
``check_params(values)``       none: raise ``ValueError`` for meaningless constants
``STRUCTURAL``                 ``()``: ``Params`` fields with one value for the whole batch
``kernel_functions(params)``   none: stand-ins (``SPECIALISABLE``) for a batch's kernels
``info_fields(params)``        none: info key -> ``State`` field, per-step extra outputs
``write_physical_state``       each ``PHYSICAL_STATE`` field of env ``i`` from ``values``, in
``(state, i, values)``         order: what a single env's ``env.unwrapped.state = values`` does
                               (plain Python; ``values`` a 1-D array of the dtype the caller
                               gave, for a game whose reference steps each dtype differently)
``step_env_fast``              none: the step of ``precision="float32"`` (``fast`` options)
``pre_step_env``               none: a pass of library calls before the step loop, so that the
                               step loop vectorises; ``pre_step_draft_env`` and
                               ``pre_step_fix_env`` split it into a vectorisable draft and a fix
``KERNEL_HINTS``               ``vecsim.core.contract.KernelHints()``: performance hints only
``DEMO_AGENT``                 none: ``(name, "module:function", engine kwargs)`` for ``vecsim demo``
``SEATS``                      1: the players that take turns. With more, ``State`` holds
                               ``acting_seat`` ``(N,)`` integers (whose turn it is) and
                               ``seat_rewards`` ``(N, SEATS)`` floats (each seat's reward of the
                               last step), which ``reset_env`` and ``step_env`` keep up to date;
                               ``step_env`` returns the reward of the seat that acted. The engine
                               reports both in every step's info (``acting_seat``,
                               ``seat_rewards``), in every front end
``CALLABLE_OPPONENT``          none: with ``SEATS`` > 1, ``(field, choice)``: a Python callable
                               given for the ``Params`` field ``field`` plays every seat but
                               seat 0 out of the kernel (``vecsim.engine.opponents``), the
                               field taking the named ``choice``, under which ``step_env`` plays
                               the move of whichever seat ``acting_seat`` names and leaves
                               ``acting_seat`` at 0 once the episode has ended
``TRAIN_PRESETS``              none: algorithm (``"ppo"``, ``"maskable-ppo"``, ``"dqn"``, ``"sac"``,
                               ``"a2c"``) -> ``dict(hyperparameters=..., num_envs=..., steps=...,
                               source=..., step_bonus=0.0)``, the tuned settings ``vecsim train``
                               starts from (``{"linear": v}``: a schedule from ``v`` down to 0)
``TELEMETRY``                  ``()``: names of the telemetry event kinds (kind ``k`` is
                               ``TELEMETRY[k]``); with any, ``step_env`` (and ``step_env_fast``)
                               take a last parameter ``telemetry=None`` and report events with
                               ``vecsim.core.telemetry.push_event``; an engine made with
                               ``telemetry=capacity`` passes a ring, others pass nothing
``BENCH_VARIANTS``             none: ``vecsim bench`` times the game per precision; else a dict
                               variant name -> engine kwargs (``{"drop": {"action_mode": "drop"}}``),
                               one column per variant
=============================  ===================================================================

Batch sizes from which a game's parallel kernels win are not the game's to declare: they are
measured per machine and live in the tuning table (``vecsim.engine.tuning``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import KernelHints, no_mask, no_pre_step, no_refuse

#: The ``State`` fields of a game with ``SEATS`` > 1, reported in every step's info.
SEAT_FIELDS = ("acting_seat", "seat_rewards")
REQUIRED = (
    "NAME", "ENV_ID", "Params", "State", "allocate_state", "observation_space", "action_space",
    "reset_env", "step_env", "write_obs",
)

#: The optional contract function that writes env ``i``'s legal actions as packed bits
#: (``vecsim.engine.packed_masks``) instead of bools, for ``Engine(mask_format="packed")``; a
#: game that has it also has ``all_legal_packed(s, p, i, packed)`` (every action's bit set).
PACKED_MASK_FN = "write_mask_packed"

#: Contract functions a game's ``kernel_functions`` may replace in a batch's kernels.
SPECIALISABLE = ("reset_env", "step_env", "step_env_fast", "write_mask")

#: The ``@njit`` functions a kernel may call, with the stand-in for a game that has none.
_KERNEL_DEFAULTS = {"write_mask": no_mask, "pre_step_env": no_pre_step, "refuse_env": no_refuse}


def contract_function(module: ModuleType, name: str):
    """The game module's ``@njit`` contract function ``name``, or the contract's default for it
    (``write_mask``: no mask). The kernel builders (``vecsim.engine.fusion``) ask this."""
    found = getattr(module, name, None)
    return _KERNEL_DEFAULTS[name] if found is None and name in _KERNEL_DEFAULTS else found


def _optional(module, name, default):
    return getattr(module, name, default)


@dataclass(frozen=True)
class GameSpec:
    """A game module read once: every contract name, optional ones with their defaults.

    Attributes
    ----------
    module : ModuleType
        The game module (kernels import it by name; nothing else reads it).
    name, env_id, version : str
    max_episode_steps : int or None
    reward_threshold : float or None
    params_cls, state_cls : type
        The game's ``Params`` and ``State`` NamedTuples.
    events : tuple of str
    physical_state : tuple of str
    scratch_state : tuple of str
        ``State`` fields whose rows are threads', not envs' (``vecsim.core.scratch``).
    render_fps : int
    has_action_mask : bool
        Whether the game writes legal-action masks (it declares ``write_mask``).
    has_action_ok : bool
        Whether the game checks actions itself (else the action space's check is derived).
    enforces_mask : bool
        Whether an action outside the mask is refused before the step (``enforce_mask``).
    structural : tuple of str
    hints : KernelHints
    demo_agent : tuple or None
    bench_variants : dict
        Variant name -> engine kwargs that ``vecsim bench`` times one column each (``{}``: the
        game is timed per precision).
    seats : int
        Players taking turns (1 for a single-agent game).
    telemetry_events : tuple of str
        Names of the game's telemetry event kinds (``()``: the game reports no telemetry).
    train_presets : dict
        Algorithm -> the settings ``vecsim train`` starts from (``{}``: SB3's defaults).
    callable_opponent : tuple or None
        ``(Params field, choice name)`` under which a callable plays the seats but seat 0.
    """

    module: ModuleType
    name: str
    env_id: str
    version: str
    max_episode_steps: int | None
    reward_threshold: float | None
    params_cls: type
    state_cls: type
    events: tuple
    physical_state: tuple
    render_fps: int
    has_action_mask: bool
    has_action_ok: bool
    enforces_mask: bool
    structural: tuple
    hints: KernelHints
    demo_agent: tuple | None = field(default=None)
    bench_variants: dict = field(default_factory=dict)
    seats: int = 1
    train_presets: dict = field(default_factory=dict)
    telemetry_events: tuple = ()
    callable_opponent: tuple | None = field(default=None)
    scratch_state: tuple = ()

    # -- what the module computes, asked through the reader --------------------------------
    def observation_space(self, params) -> spaces.Space:
        return self.module.observation_space(params)

    def action_space(self, params) -> spaces.Space:
        return self.module.action_space(params)

    def allocate_state(self, num_envs: int, float_dtype, params):
        return self.module.allocate_state(num_envs, float_dtype, params)

    def prepare_params(self, given: dict) -> dict:
        prepare = getattr(self.module, "prepare_params", None)
        return given if prepare is None else prepare(given)

    def check_params(self, values: dict) -> None:
        check = getattr(self.module, "check_params", None)
        if check is not None:
            check(values)

    def info_fields(self, params) -> dict:
        """Info key -> ``State`` field of the extra per-step outputs: a multi-seat game's
        ``acting_seat`` and ``seat_rewards``, then the game's own ``info_fields``."""
        fields = getattr(self.module, "info_fields", None)
        seats = dict.fromkeys(SEAT_FIELDS) if self.seats > 1 else {}
        return {**{k: k for k in seats}, **({} if fields is None else dict(fields(params)))}

    def render_rgb(self, values: dict, params):
        """One env drawn from ``values`` (its state fields) as ``uint8 (H, W, 3)``, by the
        game's ``render_rgb``; ``NotImplementedError`` naming the text renderer where the game
        has none."""
        if not hasattr(self.module, "render_rgb"):
            raise NotImplementedError(f"{self.env_id} has no render_rgb (it is optional); render_text or "
                                      f"render_mode='ansi' shows an env as text")
        return self.module.render_rgb(values, params)

    def render_text(self, values: dict, params) -> str:
        """One env drawn from ``values`` as text: the game's ``render_text``, else one line of
        its state fields, ``name=value``."""
        if hasattr(self.module, "render_text"):
            return self.module.render_text(values, params)
        return " ".join(f"{name}={np.asarray(value).tolist()}" for name, value in values.items())

    def check_render_mode(self, render_mode) -> None:
        """A ``ValueError`` for a ``render_mode`` the front ends do not offer or this game cannot draw."""
        if render_mode not in (None, "rgb_array", "ansi"):
            raise ValueError(f"render_mode must be None, 'rgb_array' or 'ansi', but got render_mode={render_mode!r}")
        if render_mode == "rgb_array" and not hasattr(self.module, "render_rgb"):
            raise ValueError(f"{self.env_id} has no render_rgb, so render_mode='rgb_array' cannot draw it; "
                             f"render_mode='ansi' shows it as text")

    def write_physical_state(self, state, i: int, values) -> None:
        """Env ``i``'s ``physical_state`` fields of ``state`` from the 1-D array ``values`` (checked
        finite and of the right length), as the game's ``write_physical_state`` writes them."""
        write = getattr(self.module, "write_physical_state", None)
        if write is not None:
            write(state, i, values)
            return
        for name, v in zip(self.physical_state, values):
            getattr(state, name)[i] = v

    def enforces_mask_for(self, params) -> bool:
        """Whether a batch with scalar ``params`` refuses actions outside the mask: the game's
        ``enforce_mask(params, 0)``, run as plain Python (nothing to compile)."""
        if not self.enforces_mask:
            return False
        enforce = self.module.enforce_mask
        return bool(getattr(enforce, "py_func", enforce)(params, 0))

    def step_return_error(self, state, params, actions, events, rng) -> TypeError | None:
        """After a step kernel failed to type: a ``TypeError`` naming the game's step function
        where it returns something other than ``(reward, terminated)`` (a number and a bool),
        with what it returns; None where it returns such a pair or does not type on its own
        (Numba's error then names the line). Types a copy of the function for the engine's
        arrays (``state``, ``params``, ``actions``, ``events``, ``rng``): the error path only."""
        import numba
        from numba import types

        from vecsim.core.jit import EXACT_OPTIONS

        args = (state, params, np.int64(0), actions, events, rng)
        for name in ("step_env", "step_env_fast"):
            fn = getattr(self.module, name, None)
            if fn is None:
                continue
            copy = numba.njit(**EXACT_OPTIONS)(fn.py_func)
            try:
                copy.compile(tuple(numba.typeof(a) for a in args))
            except numba.core.errors.NumbaError:
                continue
            returned = copy.nopython_signatures[0].return_type
            pair = isinstance(returned, types.BaseTuple) and len(returned) == 2
            if not (pair and isinstance(returned[0], (types.Number, types.Boolean))
                    and isinstance(returned[1], (types.Boolean, types.Integer))):
                return TypeError(f"{self.module.__name__}.{name} must return (reward, terminated), a number and "
                                 f"a bool, as in `return reward, terminated`; but it returns {returned}")
        return None

    def has(self, name: str) -> bool:
        """Whether the game declares the optional kernel function ``name`` (``step_env_fast``,
        ``pre_step_env``, ``pre_step_fix_env``, ...)."""
        return hasattr(self.module, name)

    def kernel_functions(self, params) -> tuple[tuple[str, str], ...]:
        """The game's ``kernel_functions(params)`` for scalar ``params``, checked, as sorted
        ``(contract name, stand-in name)`` pairs: what the kernel modules of that batch are
        generated with. A game without ``action_ok`` gets the check its action space implies,
        as the pair ``("action_ok", "below_<n>")`` (``Discrete(n)``) or ``("action_ok",
        "finite")`` (``Box``)."""
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
        chosen = dict(chosen)
        if not self.has_action_ok:
            space = self.action_space(params)
            chosen["action_ok"] = f"below_{int(space.n)}" if isinstance(space, spaces.Discrete) else "finite"
        return tuple(sorted(chosen.items()))


#: The contract's compiled functions and their parameters; a step may take a last
#: ``telemetry=None`` (a game with ``TELEMETRY``), which has a default.
KERNEL_PARAMETERS = {
    "reset_env": "s, p, i, rng", "step_env": "s, p, i, actions, events, rng",
    "step_env_fast": "s, p, i, actions, events, rng", "write_obs": "s, p, i, obs",
    "write_obs_changes": "s, p, i, obs", "write_mask": "s, p, i, masks", "write_mask_packed": "s, p, i, packed",
    "all_legal_packed": "s, p, i, packed", "action_ok": "p, actions, i", "enforce_mask": "p, i",
    "action_legal": "s, p, i, a", "refuse_env": "s, p, i", "pre_step_env": "s, p, i, actions", "pre_step_draft_env": "s, p, i, actions",
    "pre_step_fix_env": "s, p, i, actions",
}


def _check_kernel_functions(mod, where: str) -> None:
    """Each contract function the module declares (and each stand-in its ``kernel_functions``
    may name, which ``GameSpec.kernel_functions`` checks) is an ``@exact``/``@fast`` function
    taking the contract's parameters: a ``TypeError`` naming the function and the fix, before
    anything compiles."""
    from numba.core.registry import CPUDispatcher

    for name, wanted in KERNEL_PARAMETERS.items():
        fn = getattr(mod, name, None)
        if fn is None or fn is _KERNEL_DEFAULTS.get(name):
            continue
        if not isinstance(fn, CPUDispatcher):
            raise TypeError(f"{where}: {name} must be compiled for the kernels: decorate it with "
                            f"@vecsim.core.jit.exact (or @fast for a float32 step), but it is {type(fn).__name__} "
                            f"{getattr(fn, '__name__', fn)!r}")
        params = list(inspect.signature(fn.py_func).parameters.values())
        required = [q for q in params if q.default is inspect.Parameter.empty]
        n = len(wanted.split(", "))
        if len(required) != n or len(params) > n + 1:
            raise TypeError(f"{where}: {name} must take ({wanted}), but takes "
                            f"({', '.join(q.name for q in params)})")
        if name in ("step_env", "step_env_fast"):
            returned = _single_value_returned(fn.py_func)
            if returned is not None:
                raise TypeError(f"{where}: {name} must return (reward, terminated), as in `return reward, "
                                f"terminated`, but it has `{returned}`")


#: Return values that are never a pair: a tuple of another length, a number, an operation on numbers.
_NOT_A_PAIR = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)


def _single_value_returned(fn) -> str | None:
    """The first ``return`` statement of ``fn`` that cannot give a ``(reward, terminated)`` pair (no
    value, a tuple of another length, a number or arithmetic, a conditional of those), or None.
    Read from the source, before anything compiles; what only typing can tell (a name, a call)
    is checked when the step kernel compiles (``GameSpec.step_return_error``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None  # no source to read (built in memory): the typing check still names it

    def never_a_pair(node) -> bool:
        if node is None or isinstance(node, _NOT_A_PAIR):
            return True
        if isinstance(node, ast.Tuple):
            return len(node.elts) != 2
        return isinstance(node, ast.IfExp) and never_a_pair(node.body) and never_a_pair(node.orelse)

    pending = list(ast.iter_child_nodes(tree.body[0]))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # a nested function's returns are its own
        if isinstance(node, ast.Return) and never_a_pair(node.value):
            return "return" if node.value is None else f"return {ast.unparse(node.value)}"
        pending.extend(ast.iter_child_nodes(node))
    return None


def load_game(module) -> GameSpec:
    """Read a game module (a module or its import name) once into a ``GameSpec``.

    Raises
    ------
    TypeError
        The module lacks a required name, declares half of a pair, or a hint is malformed.
    """
    mod = importlib.import_module(module) if isinstance(module, str) else module
    if not isinstance(mod, ModuleType):
        raise TypeError(f"a game must be a module or a module's import name, but got {module!r}")
    where = f"game module {mod.__name__!r}"
    missing = [name for name in REQUIRED if not hasattr(mod, name)]
    if missing:
        raise TypeError(f"{where} lacks {', '.join(missing)}")
    _check_kernel_functions(mod, where)
    two_pass = [hasattr(mod, name) for name in ("pre_step_env", "pre_step_draft_env", "pre_step_fix_env")]
    if any(two_pass[1:]) and not all(two_pass):
        raise TypeError(f"{where} must declare pre_step_draft_env and pre_step_fix_env together, with pre_step_env")
    hints = _optional(mod, "KERNEL_HINTS", KernelHints())
    if not isinstance(hints, KernelHints):
        raise TypeError(f"{where}: KERNEL_HINTS must be a vecsim.core.contract.KernelHints, but got {hints!r}")
    hints.check(where)
    events = _names(mod, "EVENTS", (), where)
    fields = getattr(mod.State, "_fields", None)
    if fields is None:
        raise TypeError(f"{where}: State must be a NamedTuple of arrays, but got {mod.State!r}")
    physical = _names(mod, "PHYSICAL_STATE", fields, where)
    unknown = [name for name in physical if name not in fields]
    if unknown:
        raise TypeError(f"{where}: PHYSICAL_STATE names {unknown}, which are not State fields {list(fields)}")
    scratch = _names(mod, "SCRATCH_STATE", (), where)
    unknown = [name for name in scratch if name not in fields]
    if unknown:
        raise TypeError(f"{where}: SCRATCH_STATE names {unknown}, which are not State fields {list(fields)}")
    if hasattr(mod, "enforce_mask") and getattr(mod, "write_mask", no_mask) is no_mask:
        raise TypeError(f"{where} declares enforce_mask but no write_mask: a binding mask needs a mask")
    if hasattr(mod, "action_legal") and not hasattr(mod, "enforce_mask"):
        raise TypeError(f"{where} declares action_legal but no enforce_mask: action_legal answers the checks of "
                        f"a binding mask")
    if hasattr(mod, "enforce_mask") and "invalid_action" in events:
        raise TypeError(f"{where}: the event name 'invalid_action' is the engine's for games with a binding mask "
                        f"(enforce_mask); name the game's events otherwise")
    env_id = mod.ENV_ID
    if not isinstance(env_id, str) or "/" in env_id:
        raise TypeError(f"{where}: ENV_ID must be an id without namespace such as 'MyGame-v0', but got {env_id!r}")
    version = _optional(mod, "VERSION", env_id.rsplit("-", 1)[1] if "-v" in env_id else "v0")
    seats = _optional(mod, "SEATS", 1)
    if isinstance(seats, bool) or not isinstance(seats, int) or seats < 1:
        raise TypeError(f"{where}: SEATS must be an int >= 1, but got {seats!r}")
    lacking = [name for name in SEAT_FIELDS if name not in fields] if seats > 1 else []
    if lacking:
        raise TypeError(f"{where} has SEATS = {seats} but its State lacks {', '.join(lacking)} "
                        f"(acting_seat (N,) ints, seat_rewards (N, SEATS) floats)")
    return GameSpec(
        module=mod, name=mod.NAME, env_id=env_id, version=version,
        max_episode_steps=_optional(mod, "MAX_EPISODE_STEPS", None),
        reward_threshold=_optional(mod, "REWARD_THRESHOLD", None),
        params_cls=mod.Params, state_cls=mod.State,
        events=events,
        physical_state=physical,
        render_fps=_optional(mod, "RENDER_FPS", 30),
        has_action_mask=getattr(mod, "write_mask", no_mask) is not no_mask,
        has_action_ok=hasattr(mod, "action_ok"),
        enforces_mask=hasattr(mod, "enforce_mask"),
        structural=tuple(_optional(mod, "STRUCTURAL", ())),
        hints=hints,
        demo_agent=_optional(mod, "DEMO_AGENT", None),
        bench_variants=_bench_variants(mod, where),
        seats=seats,
        train_presets=_train_presets(mod, where),
        telemetry_events=_telemetry_events(mod, where),
        callable_opponent=_callable_opponent(mod, where, seats),
        scratch_state=scratch,
    )


def _telemetry_events(mod, where: str) -> tuple:
    """The module's ``TELEMETRY`` names, its steps checked to take ``telemetry=None`` last."""
    names = _names(mod, "TELEMETRY", (), where)
    for step in ("step_env", "step_env_fast") if names else ():
        fn = getattr(mod, step, None)
        if fn is None:
            continue
        params = list(inspect.signature(getattr(fn, "py_func", fn)).parameters.values())
        if not params or params[-1].name != "telemetry" or params[-1].default is not None:
            raise TypeError(f"{where} declares TELEMETRY, so its {step} must take a last parameter "
                            f"telemetry=None (the ring to push_event into)")
    return names


def _names(mod, name: str, default, where: str) -> tuple:
    """The module's ``name`` (default ``default``) as a tuple of strings, or a ``TypeError``."""
    value = _optional(mod, name, default)
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{where}: {name} must be a tuple of names, but got {value!r}")
    return tuple(value)


def _callable_opponent(mod, where: str, seats: int) -> tuple | None:
    """The module's ``CALLABLE_OPPONENT`` checked (``None`` where it declares none)."""
    value = _optional(mod, "CALLABLE_OPPONENT", None)
    if value is None:
        return None
    if (seats < 2 or not isinstance(value, tuple) or len(value) != 2 or value[0] not in mod.Params._fields
            or not isinstance(value[1], str)):
        raise TypeError(f"{where}: CALLABLE_OPPONENT must be a (Params field, choice name) pair of a game with "
                        f"SEATS > 1, but got {value!r} (SEATS = {seats})")
    return value


#: Keys of a ``TRAIN_PRESETS`` entry, the first four required.
PRESET_KEYS = ("hyperparameters", "num_envs", "steps", "source", "step_bonus")


def _train_presets(mod, where: str) -> dict:
    """The module's ``TRAIN_PRESETS`` checked (``{}`` where it declares none)."""
    presets = _optional(mod, "TRAIN_PRESETS", {})
    if not isinstance(presets, dict):
        raise TypeError(f"{where}: TRAIN_PRESETS must be a dict of algorithm -> settings, but got {presets!r}")
    for algo, entry in presets.items():
        keys = set(entry) if isinstance(entry, dict) else None
        if keys is None or not set(PRESET_KEYS[:4]) <= keys <= set(PRESET_KEYS):
            raise TypeError(f"{where}: TRAIN_PRESETS[{algo!r}] must be a dict with {', '.join(PRESET_KEYS[:4])} "
                            f"(and optionally step_bonus), but got {entry!r}")
    return dict(presets)


def _bench_variants(mod, where: str) -> dict:
    """The module's ``BENCH_VARIANTS`` checked and copied (``{}`` where it declares none)."""
    variants = _optional(mod, "BENCH_VARIANTS", None)
    if variants is None:
        return {}
    if not isinstance(variants, dict) or not variants:
        raise TypeError(f"{where}: BENCH_VARIANTS must be a non-empty dict of variant name -> engine kwargs, "
                        f"but got {variants!r}")
    checked = {}
    for name, kwargs in variants.items():
        # A name is a table column and a word of a loadtable cell: no spaces.
        if not isinstance(name, str) or not name or name != "".join(name.split()):
            raise TypeError(f"{where}: BENCH_VARIANTS names must be non-empty strings without spaces, "
                            f"but got {name!r}")
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise TypeError(f"{where}: BENCH_VARIANTS[{name!r}] must be a dict of engine kwargs, but got {kwargs!r}")
        checked[name] = dict(kwargs)
    return checked
