"""A third benchmark that lives only in the tests: its protocol module, profiles and bench
package in this one folder, registered by one line (``test_third_benchmark.py``), to show
that the generic code (runner, preflight, report, bench suite) needs nothing else."""
