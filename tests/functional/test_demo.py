"""What ``scheduler-manage demo`` prints: the weighing configuration
first, each decision with why it was made and the explain table of that
decision, the no-fit answer once, and no warnings about the in-memory
bus; the choices the README describes (by load, a burst spread by its
pending claims)."""

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
    for line in ("MetricsWeigher x 1", "ResourcesWeigher x 3",
                 "RAMWeigher x 0.01", "CPUWeigher x 0.01",
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
        # Why: the chosen host's weight, the sum of the weighers' parts.
        why = re.search(rf"^  why \(instance 1\): {re.escape(host)} "
                        r"weighs ([\d.]+) = "
                        r"(.*?);", section, re.MULTILINE)
        assert why, section
        parts = [float(p) for p in re.findall(r" ([+-][\d.]+)", why[2])]
        assert abs(sum(parts) - float(why[1])) < 0.005, section

    chosen = [re.findall(r"instance \d: (\S+)", s) for s in sections[:4]]
    # The explicit goals decide: most free memory, least busy CPU.
    assert chosen[1] == ["sim-gpu-1"]
    assert chosen[2] == ["sim-quiet-1"]
    # The burst spreads: pending claims raise cpu.percent as it goes.
    assert len(chosen[3]) == 3 and len(set(chosen[3])) >= 2, chosen[3]
    burst = re.search(r"pending claims \(this burst's of all\), counted in "
                      r"cpu.percent until the node's next report: (.*?) "
                      r"Policy", " ".join(sections[3].split()))
    assert burst, sections[3]
    # Each host's share of the burst, of all its pending claims (the
    # earlier requests' included).
    shares = re.findall(r"(\S+) (\d+) of (\d+) \(", burst[1])
    assert sorted(h for h, _, _ in shares) == sorted(set(chosen[3]))
    assert sum(int(n) for _, n, _ in shares) == 3
    assert all(int(n) <= int(total) for _, n, total in shares)
    # By load: RAM and vCPUs (x0.01 each) tip only near-ties.
    rows = re.findall(r"^  (?:\*|alt| {3})\s+(\S+)\s+[\d.]+\s+([\d.]+)",
                      sections[0], re.MULTILINE)
    by_load = {host: float(metrics) for host, metrics in rows}
    assert by_load[chosen[0][0]] >= max(by_load.values()) - 0.02, rows
    no_fit = sections[4]
    assert no_fit.count("0/6 hosts available") == 1
    assert "NoValidHost: 0/6 hosts available: 6 RamFilter" in no_fit
