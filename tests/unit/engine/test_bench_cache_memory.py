"""tools/bench_cache_memory.py: the host cache's traced memory per
host, by allocating line."""

import os
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                    os.pardir, "tools", "bench_cache_memory.py")


def test_prints_the_cache_memory_per_host_and_where_it_goes():
    out = subprocess.run(
        [sys.executable, TOOL, "--hosts", "30", "--top", "3"],
        check=True, capture_output=True, text=True).stdout.splitlines()
    fields = dict(part.split("=") for part in out[0].split())
    assert fields["hosts"] == "30"
    traced = float(fields["traced_bytes_per_host"])
    # A host holds its metrics, their history and its state: KBs, and
    # never more than the load's peak.
    assert 1000 < traced <= float(fields["peak_bytes_per_host"])
    assert len(out) == 4 and all(" B " in line for line in out[1:])
