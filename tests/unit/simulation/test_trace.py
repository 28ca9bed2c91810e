"""The vmtable reader and the synthetic workload."""

import csv

import numpy as np
import pytest

from scheduler.simulation import trace

GOOD = "vm1,sub,dep,100,700,90,40,80,Interactive,>24,>64"


def _read(tmp_path, text: str) -> trace.Workload:
    path = tmp_path / "vmtable.csv"
    path.write_text(text)
    return trace.read_vmtable(str(path))


def test_buckets_read_as_lower_bound_and_times_from_first_vm(tmp_path):
    work = _read(tmp_path, GOOD + "\nvm2,s,d,40,100,10,5,8,Delay-insensitive,"
                 "2,4\n")
    assert len(work) == 2 and work.skipped == []
    # Sorted by creation, times from the first creation.
    assert work.created.tolist() == [0.0, 60.0]
    assert work.deleted.tolist() == [60.0, 660.0]
    assert work.cores.tolist() == [2, 24]
    assert work.memory_mb.tolist() == [4096, 65536]
    assert work.interactive.tolist() == [False, True]
    assert work.span == 60.0


@pytest.mark.parametrize("line, reason", [
    ("vm,s,d,1,2,3", "6 columns, expected 11"),
    ("vm,s,d,1,2,x,4,5,I,2,4", "not a number"),
    ("vm,s,d,500,100,9,4,5,I,2,4", "negative lifetime"),
    ("vm,s,d,1,2,9,4,500,I,2,4", "within 0..100"),
    ("vm,s,d,1,2,9,4,5,I,0,4", "not positive"),
    ("vm,s,d,1,nan,9,4,5,I,2,4", "not a finite number"),
])
def test_malformed_lines_are_skipped_with_their_number(tmp_path, line,
                                                       reason):
    work = _read(tmp_path, f"{GOOD}\n{line}\n{GOOD}\n")
    assert len(work) == 2
    (number, why), = work.skipped
    assert number == 2 and reason in why


def test_unreadable_or_empty_trace_is_a_trace_error(tmp_path):
    with pytest.raises(trace.TraceError, match="cannot read"):
        trace.read_vmtable(str(tmp_path / "missing.csv"))
    with pytest.raises(trace.TraceError, match="no usable line"):
        _read(tmp_path, "a,b\n\n")


def test_written_trace_reads_back(tmp_path):
    work = trace.synthetic(50, seed=3, duration=3600)
    path = str(tmp_path / "out.csv")
    write_vmtable(work, path)
    back = trace.read_vmtable(path)
    assert len(back) == 50 and back.skipped == []
    assert back.cores.tolist() == work.cores.tolist()
    np.testing.assert_allclose(back.avgcpu, work.avgcpu, atol=0.01)


def test_synthetic_is_seeded_and_shaped_like_the_dataset():
    work = trace.synthetic(4000, seed=7)
    again = trace.synthetic(4000, seed=7)
    assert np.array_equal(work.created, again.created)
    assert not np.array_equal(work.created, trace.synthetic(4000, 8).created)
    assert np.all(np.diff(work.created) >= 0)
    assert np.all(work.deleted > work.created)
    assert set(work.cores.tolist()) <= {1, 2, 4, 8, 24}
    # Most VMs are small and mostly idle; bursts stay within 0..100.
    assert np.mean(work.cores <= 2) == pytest.approx(0.70, abs=0.03)
    assert np.median(work.avgcpu) < 20
    assert np.all(work.avgcpu <= work.p95maxcpu)
    assert np.all(work.p95maxcpu <= work.maxcpu)
    assert work.maxcpu.max() <= 100
    # A third already runs in the first ten minutes.
    assert np.mean(work.created < 600) == pytest.approx(0.3, abs=0.02)


def write_vmtable(workload: trace.Workload, path: str) -> None:
    """Write ``workload`` as a vmtable CSV (the sample trace)."""
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        for i in range(len(workload)):
            writer.writerow((
                f"vm{i:06d}", "sub0", f"dep{i // 10:05d}",
                round(float(workload.created[i])),
                round(float(workload.deleted[i])),
                f"{workload.maxcpu[i]:.2f}", f"{workload.avgcpu[i]:.2f}",
                f"{workload.p95maxcpu[i]:.2f}",
                "Interactive" if workload.interactive[i]
                else "Delay-insensitive",
                int(workload.cores[i]),
                f"{workload.memory_mb[i] / 1024:g}"))
