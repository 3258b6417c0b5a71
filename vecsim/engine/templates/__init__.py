"""Kernel templates, read as text by ``vecsim.engine.codegen`` and never imported: each is
rendered for one game into a real module in vecsim's cache folder, which Numba can cache."""
