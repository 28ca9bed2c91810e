"""tools/bench_no_valid_host.py: a NoValidHost beside a placement, its
message counted from the host table and from each host."""

import os
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                    os.pardir, "tools", "bench_no_valid_host.py")


def test_both_ways_of_counting_are_timed_on_a_full_fleet():
    done = subprocess.run(
        [sys.executable, TOOL, "--hosts", "40", "--calls", "1"],
        capture_output=True, text=True, timeout=120, check=True)
    line, = [line for line in done.stdout.splitlines()
             if line.startswith("no_valid_host ")]
    fields = dict(field.split("=") for field in line.split()[1:])
    assert fields["hosts"] == "40"
    assert set(fields) == {"hosts", "placed_ms", "no_valid_host_ms",
                           "asked_each_host_ms", "asked_over_read"}
    assert all(float(value) > 0 for value in fields.values())
