"""asv benchmarks of vecsim (see ``asv_bench/asv.conf.json``)."""
