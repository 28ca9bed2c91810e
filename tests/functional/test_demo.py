"""What ``scheduler-manage demo`` prints: the weighing configuration
first, each decision with the explain table of that decision, the no-fit
answer once, and no warnings about the in-memory bus."""

import re


def _sections(out: str) -> list[str]:
    """The text of each request, from its ``==`` title on."""
    return re.split(r"^(?===)", out, flags=re.MULTILINE)[1:]


def test_demo_output(write_config, run_console_script, tmp_path):
    config = write_config({"DEFAULT": {"state_path": tmp_path / "state"}})
    result = run_console_script("scheduler-manage", "demo",
                                config_file=config, timeout=120)
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines()
            if " WARNING " in line] == []
    out = result.stdout

    weighing = out[out.index("Weighing"):out.index("==")]
    for line in ("RAMWeigher x 1", "CPUWeigher x 1", "MetricsWeigher x 1",
                 "ResourcesWeigher x 1",
                 "[filter_scheduler] weight_normalization = minmax",
                 "[metrics] weight_setting = cpu.percent=-1"):
        assert f"  {line}\n" in weighing

    sections = _sections(out)
    assert len(sections) == 5
    for section in sections[:4]:
        # The decision's weight is the one of the explained chosen row.
        decided = float(re.search(r"instance 1: \S+ \(weight ([\d.]+)",
                                  section)[1])
        host = re.search(r"instance 1: (\S+) ", section)[1]
        row = re.search(rf"^  \*\s+{re.escape(host)}\s+([\d.]+)", section,
                        re.MULTILINE)
        assert row, section
        assert float(row[1]) == round(decided, 3), section
    no_fit = sections[4]
    assert no_fit.count("0/6 hosts available") == 1
    assert "NoValidHost: 0/6 hosts available: 6 RamFilter" in no_fit
