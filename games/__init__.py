"""Game rules for vecsim, one module (small game) or package (large game) per game.

Each module follows the game contract documented in ``games/README.md`` and ``vecsim.engine.game``.
"""
