"""Game rules for vecsim, one module (small game) or package (large game) per game.

Each module follows the game contract documented in ``vecsim.contract``.
"""
