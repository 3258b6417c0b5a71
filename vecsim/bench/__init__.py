"""Measurement: throughput against peers (``measure``) and the parallel-threshold calibration
(``calibrate``) that fills the engine's tuning table. Imported by ``vecsim bench`` and
``vecsim calibrate``, never by the engine."""
