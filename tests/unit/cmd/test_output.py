"""The renderers of ``scheduler-manage hosts list``, ``hosts show`` and
``explain`` on fixed host states and decisions, in every format."""

import csv
import datetime
import io
import json

import pytest

from scheduler.cmd import output
from scheduler.engine import filter_scheduler
from scheduler.hosts import records as host_records
from scheduler.hosts import state as hm

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)
DOWN_AFTER = 60
GIB = 2**30


def ago(seconds: float) -> datetime.datetime:
    return NOW - datetime.timedelta(seconds=seconds)


def fleet() -> list[hm.HostState]:
    busy = hm.HostState(
        node_id=1, uuid="u1", host="busy", nodename="busy.node",
        cluster="c1", availability_zone="az1", vcpus=8, memory_mb=16384,
        disk_gb=100, cpu_allocation_ratio=2.0, vcpus_claimed=6,
        memory_mb_claimed=4096, disk_gb_claimed=20, claims_pending=1,
        vcpus_pending=2, memory_mb_pending=1024, cpu_info={"arch": "x86_64"},
        networks=frozenset({"public", "storage"}),
        metrics={
            "memory.free": hm.Metric(8 * GIB, ago(30), "libvirt"),
            "network.rx.bps": hm.Metric(1e6, ago(12.5), "netdev"),
        },
        bad_metrics=frozenset({"cpu.percent"}),
        updated_at=ago(5), metrics_updated_at=ago(12.5),
        instances={"i-2", "i-1"}, instance_groups={"g1"})
    idle = hm.HostState(
        node_id=2, uuid="u2", host="idle", nodename="idle", cluster="c1",
        availability_zone="az1", vcpus=4, memory_mb=8192, disk_gb=50,
        updated_at=ago(DOWN_AFTER + 1))
    off = hm.HostState(
        node_id=3, uuid="u3", host="off", nodename="off", vcpus=4,
        memory_mb=8192, disk_gb=50, disabled=True,
        disabled_reason="maintenance", updated_at=ago(1))
    return [busy, idle, off]


def records() -> list[dict]:
    return [host_records.host_record(h, NOW, DOWN_AFTER) for h in fleet()]


def test_host_record_fields():
    busy, idle, off = records()
    assert list(busy) == list(output.HOST_FIELDS)
    assert busy["vcpus_free"] == 10 and busy["vcpus_total"] == 16
    assert busy["ram_mb_free"] == 12288 and busy["disk_gb_free"] == 80
    assert (busy["pending_claims"], busy["pending_vcpus"],
            busy["pending_ram_mb"]) == (1, 2, 1024)
    assert busy["metric_age_s"] == 12.5
    assert busy["instances"] == 2 and busy["metrics"] == 2
    assert busy["state"] == "up" and busy["disabled_reason"] is None
    # Never reported metrics; heartbeat older than service_down_time.
    assert idle["metric_age_s"] is None and idle["state"] == "down"
    assert (off["state"], off["disabled_reason"]) == ("disabled",
                                                      "maintenance")


def test_hosts_table():
    lines = output.hosts(records(), "table").splitlines()
    assert lines[0].split() == [
        "host", "nodename", "cluster", "az", "vcpus", "ram_mb", "disk_gb",
        "pending", "instances", "metrics", "metric_age_s", "state"]
    assert set(lines[1]) == {"-", " "}
    busy, idle, off = (line.split() for line in lines[2:])
    assert busy == ["busy", "busy.node", "c1", "az1", "10/16",
                    "12288/16384", "80/100", "1", "claim:", "2", "vCPU",
                    "1024", "MB",
                    "2", "2", "12.5", "up"]
    # Nodename equal to the host, no pending claims, never reported.
    assert idle == ["idle", "-", "c1", "az1", "4/4", "8192/8192",
                    "50/50", "-", "0", "0", "-", "down"]
    assert off[-2:] == ["disabled", "(maintenance)"]


def test_hosts_json_and_csv_carry_every_field():
    as_json = json.loads(output.hosts(records(), "json"))
    assert as_json == json.loads(json.dumps(records()))
    rows = list(csv.DictReader(io.StringIO(output.hosts(records(), "csv"))))
    assert [r["host"] for r in rows] == ["busy", "idle", "off"]
    assert rows[0]["nodename"] == "busy.node"
    assert rows[0]["vcpus_total"] == "16.0"
    assert rows[1]["metric_age_s"] == "" and rows[1]["state"] == "down"
    assert rows[2]["disabled_reason"] == "maintenance"


def detail() -> dict:
    return host_records.host_detail(fleet()[0], NOW, DOWN_AFTER)


def test_host_detail_metrics_and_lists():
    document = detail()
    assert document["metrics"] == [
        # 1024 MB pending lower memory.free; network.rx.bps does not move.
        {"name": "memory.free", "value": 8 * GIB,
         "adjusted": 8 * GIB - 1024 * 2**20, "age_s": 30.0,
         "source": "libvirt"},
        {"name": "network.rx.bps", "value": 1e6, "adjusted": None,
         "age_s": 12.5, "source": "netdev"},
    ]
    assert document["bad_metrics"] == ["cpu.percent"]
    assert document["networks"] == ["public", "storage"]
    assert document["instances"] == ["i-1", "i-2"]
    assert document["server_groups"] == ["g1"]
    assert document["cpu_info"] == {"arch": "x86_64"}
    assert document["state"] == "up"


def test_host_show_table():
    text = output.host(detail(), "table")
    lines = text.splitlines()
    fields = dict(line.split(None, 1) for line in
                  lines[:len(output.HOST_FIELDS)])
    assert fields["nodename"] == "busy.node"
    assert fields["metrics"] == "2" and fields["instances"] == "2"
    assert fields["disabled_reason"] == "-"
    metric_rows = {line.split()[0]: line.split() for line in lines
                   if line.startswith(("memory.free", "network.rx.bps"))}
    assert metric_rows["memory.free"] == [
        "memory.free", str(8 * GIB), str(8 * GIB - 1024 * 2**20), "30",
        "libvirt"]
    assert metric_rows["network.rx.bps"][2] == "-"
    assert "bad metrics: cpu.percent" in lines
    assert 'cpu_info: {"arch": "x86_64"}' in lines
    assert "instances: i-1, i-2" in lines
    assert "server groups: g1" in lines


def test_host_show_json_and_csv():
    assert json.loads(output.host(detail(), "json")) == json.loads(
        json.dumps(detail()))
    rows = list(csv.DictReader(io.StringIO(output.host(detail(), "csv"))))
    by_kind: dict[str, list[dict]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    fields = {r["name"]: r["value"] for r in by_kind["field"]}
    assert fields["host"] == "busy" and fields["state"] == "up"
    assert [(r["name"], r["adjusted"]) for r in by_kind["metric"]] == [
        ("memory.free", str(8 * GIB - 1024 * 2**20)),
        ("network.rx.bps", "")]
    assert [r["value"] for r in by_kind["bad_metric"]] == ["cpu.percent"]
    assert [(r["name"], r["value"]) for r in by_kind["cpu_info"]] == [
        ("arch", '"x86_64"')]
    assert [r["value"] for r in by_kind["instance"]] == ["i-1", "i-2"]
    assert [r["value"] for r in by_kind["network"]] == ["public",
                                                        "storage"]
    assert [r["value"] for r in by_kind["server_group"]] == ["g1"]


def decision(selected: int = 2) -> dict:
    busy, idle, off = fleet()
    extra = hm.HostState(node_id=4, uuid="u4", host="extra",
                         nodename="extra")
    term = filter_scheduler.WeighedTerm
    results = [
        filter_scheduler.HostResult(
            idle, weight=1.5, weights={
                "RAMWeigher": term(8192.0, 1.0, 2.0, 2.0),
                "CPUWeigher": term(4.0, 0.5, -1.0, -0.5)}),
        filter_scheduler.HostResult(
            extra, weight=-1.0, weights={
                "RAMWeigher": term(0.0, 0.0, 2.0, 0.0),
                # Unavailable: [metrics] weight_of_unavailable.
                "CPUWeigher": term(None, None, -1.0, -1.0)}),
        filter_scheduler.HostResult(
            busy, filtered_by="ResourcesThresholdFilter",
            reason="network.rx.bps<85M", detail="network.rx.bps is 1M"),
        filter_scheduler.HostResult(off, filtered_by="ComputeFilter",
                                    reason="disabled"),
    ]
    chosen = [idle, extra][:selected]
    summary = "" if chosen else "0/4 hosts available: ..."
    return {**filter_scheduler.Decision(
        chosen, summary=summary, _explain=lambda: results).as_dict(),
        "policy": "gold v2"}


def test_explain_table_marks_chosen_alternates_and_removed():
    lines = output.explain(decision(), "table").splitlines()
    assert lines[0] == "Policy: gold v2"
    assert lines[1].endswith("(shown per weigher): RAMWeigher x2, "
                             "CPUWeigher x-1")
    lines = lines[2:]
    assert lines[0].split() == ["sel", "host", "weight", "RAMWeigher",
                                "CPUWeigher", "filtered_by", "reason",
                                "detail"]
    rows = {line.split()[1] if line.split()[0] in (
        output.CHOSEN, output.ALTERNATE) else line.split()[0]: line
        for line in lines[2:]}
    # What each weigher added: the columns sum to the weight.
    assert rows["idle"].split() == ["*", "idle", "1.5", "2", "-0.5", "-",
                                    "-", "-"]
    assert rows["extra"].split() == ["alt", "extra", "-1", "0", "-1", "-",
                                     "-", "-"]
    assert rows["busy"].split()[:4] == ["busy", "-", "-", "-"]
    assert rows["busy"].endswith(
        "ResourcesThresholdFilter  network.rx.bps<85M  "
        "network.rx.bps is 1M")
    assert rows["off"].split()[-3:] == ["ComputeFilter", "disabled", "-"]
    assert "No valid host" not in "\n".join(lines)


def test_explain_table_without_policy_or_multipliers():
    # A service older than the policy and multiplier keys: normalised
    # weights, no heading.
    document = decision()
    del document["policy"]
    for host in document["hosts"]:
        for term in host["weights"].values():
            del term["multiplier"], term["weighted"]
    lines = output.explain(document, "table").splitlines()
    assert lines[0].startswith("sel  host")
    assert lines[2].split()[:5] == ["*", "idle", "1.5", "1", "0.5"]
    document["policy"] = None
    assert output.explain(document, "table").startswith(
        f"Policy: {output.NO_POLICY}\n")


def test_explain_table_nothing_fits_ends_with_histogram():
    text = output.explain(decision(selected=0), "table")
    assert "*" not in text and "alt" not in text
    assert text.endswith("\n\nNo valid host: 0/4 hosts available: ...")


def test_explain_json_is_the_decision():
    document = decision()
    assert json.loads(output.explain(document, "json")) == document
    assert document["selected"] == ["idle", "extra"]


def test_explain_csv_raw_and_normalized_weights():
    rows = list(csv.DictReader(io.StringIO(output.explain(decision(),
                                                           "csv"))))
    assert [(r["sel"], r["host"]) for r in rows] == [
        ("*", "idle"), ("alt", "extra"), ("", "busy"), ("", "off")]
    assert rows[0]["RAMWeigher.raw"] == "8192.0"
    assert rows[0]["RAMWeigher.normalized"] == "1.0"
    assert rows[0]["RAMWeigher.weighted"] == "2.0"
    assert rows[1]["CPUWeigher.raw"] == ""
    assert (rows[2]["filtered_by"], rows[2]["reason"], rows[2]["detail"]) \
        == ("ResourcesThresholdFilter", "network.rx.bps<85M",
            "network.rx.bps is 1M")
    assert rows[3]["weight"] == ""


@pytest.mark.parametrize(("fmt", "expected"), [
    ("json", "[]"),
    ("csv", ",".join(output.HOST_FIELDS)),
    ("table", "host  nodename  cluster  az  vcpus  ram_mb  disk_gb  pending"
              "  instances  metrics  metric_age_s  state"),
])
def test_empty_fleet_renders_header_only(fmt, expected):
    assert output.hosts([], fmt).splitlines()[0] == expected


def test_hosts_show_finds_a_node_by_node_or_single_host_name():
    busy, idle, off = fleet()
    twin = hm.HostState(node_id=5, uuid="u5", host="idle",
                        nodename="idle-2")
    hosts = [busy, idle, off, twin]
    assert host_records.find_host(hosts, "busy.node") is busy
    assert host_records.find_host(hosts, "busy") is busy
    # A node name wins over the host name it shares.
    assert host_records.find_host(hosts, "idle") is idle
    assert host_records.find_host(hosts, "idle-2") is twin
    with pytest.raises(LookupError, match="no compute node 'nope' "
                       r"\(4 known"):
        host_records.find_host(hosts, "nope")
    twin.nodename = "idle-b"
    idle.nodename = "idle-a"
    with pytest.raises(LookupError, match="host 'idle' has 2 nodes; name "
                       "one of idle-a, idle-b"):
        host_records.find_host(hosts, "idle")
