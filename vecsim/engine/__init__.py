"""The batched engine: a game read once (``game``), its kernels generated from templates
(``codegen``, ``templates/``, ``fusion``, ``views``), the serial/parallel choice (``threads``,
``tuning``), and ``Engine``, the zero-copy API with ``StepResult`` and ``ResetMask``; the
buffer protocol of its outputs (``abi``) and its telemetry rings (``telemetry``)."""

from vecsim.engine.abi import PROTOCOL_VERSION, BufferField, BufferSet, BufferSpec, Capability
from vecsim.engine.engine import NEXT_STEP, NO_RESET, SAME_STEP, Engine
from vecsim.engine.reset_mask import ResetMask
from vecsim.engine.step_result import StepResult
from vecsim.core.telemetry import Telemetry, TelemetryEvents

__all__ = ["Engine", "ResetMask", "StepResult", "NEXT_STEP", "SAME_STEP", "NO_RESET", "BufferSpec", "BufferField",
           "BufferSet", "Capability", "PROTOCOL_VERSION", "Telemetry", "TelemetryEvents"]
