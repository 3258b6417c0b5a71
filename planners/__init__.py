"""Placement planners (reachable placements, feasibility masks, cost to lock) for vecsim games."""
