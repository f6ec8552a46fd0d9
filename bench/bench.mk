# Benchmarks: make bench (filled in by the benchmark work).
