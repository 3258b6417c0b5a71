"""What a game's rules import from vecsim: compile options (``jit``), per-env random streams
(``rng``), numerics that stay bit-exact (``exactmath``, ``fastmath``, ``bits``), placed
allocation (``buffers``), the contract's helpers (``contract``) and drawing (``draw``).
Nothing here knows the engine or any game."""
