"""Measurement: throughput against peers (``measure``; the other libraries' drivers in
``peers``, keyed by Gymnasium env id) and the parallel-threshold calibration (``calibrate``)
that fills the engine's tuning table. Imported by ``vecsim bench`` and ``vecsim calibrate``,
never by the engine. The operant worker loads this folder in a Python without vecsim, so this
file imports nothing."""
