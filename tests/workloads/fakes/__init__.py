"""Protocol modules the runner tests register in place of the real benchmarks."""
