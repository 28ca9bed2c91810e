"""Readings files (Azure vm_cpu_readings layout) made here, overlaid on
the CPU model: joined by vmid on the trace's shifted clock, streamed in
time order; bad lines skipped and counted."""

import numpy as np
import pytest

from scheduler.simulation import readings
from scheduler.simulation import trace

VMTABLE = ("a,s,d,1000,9000,90,40,80,Delay-insensitive,2,4\n"
           "b,s,d,1300,9000,90,40,80,Delay-insensitive,2,4\n")


@pytest.fixture
def workload(tmp_path) -> trace.Workload:
    path = tmp_path / "vmtable.csv"
    path.write_text(VMTABLE)
    return trace.read_vmtable(str(path))


def _file(tmp_path, text: str, name: str = "readings.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_the_trace_keeps_vmids_and_its_shift(workload):
    assert list(workload.vmid) == ["a", "b"]
    assert workload.start == 1000.0
    assert list(workload.truncated(1).vmid) == ["a"]


def test_readings_join_by_vmid_on_the_shifted_clock(tmp_path, workload):
    # Trace time 1000 is simulated 0: a reading at 1600 is slot 2's.
    path = _file(tmp_path, "1600,a,1,2,55.5\n1900,b,1,2,20\n")
    overlay = readings.Overlay(workload, 0, [path])
    model = readings.Overlay(workload, 0)
    for slot in (0, 1):
        got, modelled = overlay.utilisation(slot), model.utilisation(slot)
        np.testing.assert_array_equal(got, modelled)
    got, modelled = overlay.utilisation(2), model.utilisation(2)
    assert got[0] == 55.5 and got[1] == modelled[1]
    got = overlay.utilisation(3)
    assert list(got) == [55.5, 20.0]
    # Kept across the gap that follows.
    assert list(overlay.utilisation(7)) == [55.5, 20.0]
    assert overlay.counts().as_dict()["readings_used"] == 2


def test_several_files_merge_by_time(tmp_path, workload):
    first = _file(tmp_path, "1000,a,0,0,10\n1600,a,0,0,30\n", "1.csv")
    second = _file(tmp_path, "1300,a,0,0,20\n", "2.csv")
    overlay = readings.Overlay(workload, 0, [first, second])
    assert [overlay.utilisation(slot)[0] for slot in range(3)] == [
        10.0, 20.0, 30.0]


def test_bad_lines_are_skipped_and_counted(tmp_path, workload):
    path = _file(tmp_path, "timestamp,vmid,mincpu,maxcpu,avgcpu\n"
                 "1000,a,0,0,10\n"
                 "1000,a,0,0\n"            # 4 columns
                 "1300,a,0,0,abc\n"        # not a number
                 "1300,a,0,0,150\n"        # beyond 100
                 "1300,zz,0,0,50\n"        # unknown VM
                 "1000,a,0,0,99\n"         # out of time order
                 "\xff\xfe,a,0,0,5\n"      # not UTF-8
                 "1600,a,0,0,70\n")
    overlay = readings.Overlay(workload, 0, [path])
    values = [overlay.utilisation(slot)[0] for slot in range(3)]
    assert values == [10.0, 10.0, 70.0]
    counts = overlay.counts()
    assert counts.as_dict() == {
        "readings_used": 2, "readings_unknown_vm": 1, "readings_skipped": 5,
        "readings_malformed": 4, "readings_out_of_order": 1}
    assert [number for _, number, _ in counts.problems] == [3, 4, 5, 7, 8]
    assert "out of" not in counts.problems[0][2]
    assert "before an earlier line" in counts.problems[3][2]


def test_problems_shown_are_bounded(tmp_path, workload):
    path = _file(tmp_path, "x\n" * (readings.SHOWN + 5))
    overlay = readings.Overlay(workload, 0, [path])
    overlay.utilisation(0)
    counts = overlay.counts()
    # The first line is taken for a header.
    assert counts.malformed == readings.SHOWN + 4
    assert len(counts.problems) == readings.SHOWN


def test_the_file_is_read_as_time_advances(tmp_path, workload):
    path = _file(tmp_path, "".join(f"{1000 + 300 * k},a,0,0,{k % 100}\n"
                                   for k in range(1000)))
    stream = readings.ReadingsStream([path], workload)
    assert len(list(stream.until(900.0))) == 3
    assert stream.counts.used == 3


def test_missing_file_and_synthetic_workload_are_errors(tmp_path, workload):
    with pytest.raises(readings.ReadingsError, match="cannot read"):
        readings.check_files([str(tmp_path / "nope.csv")])
    with pytest.raises(readings.ReadingsError, match="needs a trace"):
        readings.ReadingsStream([_file(tmp_path, "")],
                                trace.synthetic(3, 0))


def test_series_and_precomputed_replay_the_overlay(tmp_path, workload):
    path = _file(tmp_path, "1300,a,0,0,42\n")
    matrix, counts = readings.series(workload, 0, [path], 4)
    assert matrix.shape == (2, 4) and counts.used == 1
    overlay = readings.Overlay(workload, 0, [path])
    source = readings.Precomputed(matrix)
    for slot in range(4):
        np.testing.assert_allclose(source.utilisation(slot),
                                   overlay.utilisation(slot), rtol=1e-6)
    np.testing.assert_array_equal(source.utilisation(9), matrix[:, 3])


def test_a_line_the_csv_reader_refuses_is_skipped(tmp_path, workload):
    path = _file(tmp_path, "1000,a,0,0,10\n1300,a\x00,0,0,20\n"
                 f"1300,{'x' * 200000},0,0,30\n1600,a,0,0,40\n")
    overlay = readings.Overlay(workload, 0, [path])
    assert [overlay.utilisation(slot)[0] for slot in range(3)] == [
        10.0, 10.0, 40.0]
    counts = overlay.counts()
    assert (counts.malformed, counts.unknown_vm) == (1, 1)
    assert "field larger than field limit" in counts.problems[0][2]
