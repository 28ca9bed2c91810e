"""``scheduler-manage demo``: the whole product in one process.

An embedded SQLite file, the ``kombu+memory`` transport, this machine's
real compute monitor plus simulated nodes with varied metrics, the
scheduler service and an API-node client. The weighing configuration is
printed, then a handful of requests go over the bus; each decision is
printed with why it was made and the explain table of the same fleet
state.

The weighing places by load, as the README describes: the metrics decide
(``cpu.percent``, and a flavor's ``resources:`` goal above them), free
RAM and vCPUs (x0.01) only tip near-ties. With Nova's weighers at full
weight the biggest node would win every request whatever its load.
"""

import collections
import json
import logging as std_logging
import random
import textwrap
import uuid

import sqlalchemy as sa
from oslo_config import cfg

from compute_monitor import agent
from scheduler import exception
from scheduler import manager
from scheduler.cmd import output
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema
from scheduler.db.tables import ALLOCATIONS
from scheduler.db.tables import NODES
from scheduler.engine import filter_scheduler
from scheduler.hosts.cache.manager import HostManager
from scheduler.request.spec import RequestSpec
from scheduler.rpc import rpcapi
from scheduler.rpc import server

GIB = 2**30
GB = 10**9
#: The demo's database, under [DEFAULT] state_path (``--help`` says so).
DATABASE = "demo.sqlite"

#: (name, cluster, vcpus, memory_mb, rx bytes/s, cpu %, memory free GiB)
SIMULATED_NODES = (
    ("sim-small-1", "edge", 4, 8192, 2e6, 12.0, 6),
    ("sim-busy-1", "core", 32, 131072, 120e6, 91.5, 40),
    ("sim-quiet-1", "core", 32, 131072, 8e6, 7.25, 110),
    ("sim-quiet-2", "core", 32, 131072, 30e6, 22.0, 96),
    ("sim-gpu-1", "core", 64, 262144, 60e6, 48.0, 200),
)

#: (title, request_spec) sent by the demo client, in order.
DEMO_REQUESTS = (
    ("small instance, defaults",
     {"flavor": {"name": "m1.small", "vcpus": 1, "memory_mb": 2048,
                 "root_gb": 20}}),
    ("most free memory, network below 85M",
     {"flavor": {"name": "m1.large", "vcpus": 4, "memory_mb": 8192,
                 "root_gb": 40,
                 "extra_specs": {"resources:memory.free": "max",
                                 "resources:network.rx.bps": "<85M"}}}),
    ("least busy CPU in cluster core, at least 1.5 GiB free",
     {"flavor": {"name": "m1.medium", "vcpus": 2, "memory_mb": 4096,
                 "root_gb": 40,
                 "extra_specs": {"resources:cpu.percent": "min",
                                 "resources:memory.free": ">= 1.5Gi"}},
      "cluster": "core"}),
    # Large enough that a pending claim moves cpu.percent visibly.
    ("a burst: three large instances at once in cluster core",
     {"flavor": {"name": "m1.xlarge", "vcpus": 8, "memory_mb": 16384,
                 "root_gb": 40}, "num_instances": 3, "cluster": "core"}),
    ("cannot fit: 1 TB of RAM",
     {"flavor": {"name": "x1.huge", "vcpus": 8, "memory_mb": 1048576,
                 "root_gb": 40,
                 "extra_specs": {"resources:network.rx.bps": "<1K"}}}),
)


#: (group, option, value) the demo runs with, whatever the config says.
OVERRIDES = (
    ("DEFAULT", "transport_url", "kombu+memory:////"),
    ("filter_scheduler", "weight_classes",
     ["MetricsWeigher", "ResourcesWeigher", "RAMWeigher", "CPUWeigher"]),
    # Tie-breakers, together at most 0.02 against MetricsWeigher's 1:
    # free capacity alone would send everything to the biggest node.
    ("filter_scheduler", "ram_weight_multiplier", 0.01),
    ("filter_scheduler", "cpu_weight_multiplier", 0.01),
    # A flavor's own goal (resources:memory.free=max) outweighs the
    # fleet-wide weight_setting.
    ("filter_scheduler", "resources_weight_multiplier", 3.0),
    ("metrics", "weight_setting", "cpu.percent=-1.0"),
)


def database_url(conf: cfg.ConfigOpts) -> str:
    """The demo's own SQLite file, whatever [database] connection says."""
    return f"sqlite:///{conf.state_path}/{DATABASE}"


def configure(conf: cfg.ConfigOpts) -> None:
    """Embedded defaults: the demo's database, the in-memory bus and the
    demo's weighing (``OVERRIDES``)."""
    conf.set_override("connection", database_url(conf), group="database")
    for group, name, value in OVERRIDES:
        conf.set_override(name, value,
                          group=None if group == "DEFAULT" else group)


def simulated_metrics(rx_bps: float, cpu_percent: float, free_gib: float,
                      memory_mb: int, rng: random.Random) -> list[dict]:
    """A plausible metrics list for a simulated node."""
    stamp = models.utcnow().isoformat() + "Z"
    total = memory_mb * 2**20
    free = min(free_gib * GIB, total)
    values = {
        "cpu.percent": cpu_percent,
        "cpu.user.percent": cpu_percent * 0.8,
        "cpu.kernel.percent": cpu_percent * 0.2,
        "cpu.idle.percent": 100 - cpu_percent,
        "memory.total": total, "memory.free": free,
        "memory.available": free, "memory.used": total - free,
        "memory.percent": 100 * (total - free) / total,
        "network.rx.bps": rx_bps, "network.tx.bps": rx_bps * 0.6,
        "disk.read.bps": rng.uniform(0, 50e6),
        "disk.write.bps": rng.uniform(0, 50e6),
        "disk.iops": rng.uniform(10, 900),
    }
    return [{"name": name, "value": value, "source": "demo",
             "timestamp": stamp} for name, value in values.items()]


def seed_simulated_nodes(engine: sa.Engine, rng: random.Random) -> None:
    """Insert (or refresh) the simulated nodes' rows; claims of earlier
    demo runs are dropped so every run starts from the same fleet."""
    now = models.utcnow()
    with engine.begin() as connection:
        connection.execute(sa.delete(ALLOCATIONS))
        for name, cluster, vcpus, memory_mb, rx, cpu, free in \
                SIMULATED_NODES:
            values = {
                "cluster": cluster, "availability_zone": "nova",
                "vcpus": vcpus, "memory_mb": memory_mb, "local_gb": 500,
                "memory_mb_used": 0, "local_gb_used": 0,
                "cpu_info": json.dumps({"arch": "x86_64"}),
                "networks": json.dumps(["public"]),
                "metrics": json.dumps(simulated_metrics(
                    rx, cpu, free, memory_mb, rng)),
                "metrics_updated_at": now, "updated_at": now,
                "changed_at": now, "disabled": False,
            }
            updated = connection.execute(NODES.update().where(
                NODES.c.host == name).values(**values)).rowcount
            if not updated:
                connection.execute(NODES.insert().values(
                    uuid=str(uuid.uuid4()), host=name,
                    hypervisor_hostname=name, generation=0, created_at=now,
                    **values))


def quiet_in_memory_bus(conf: cfg.ConfigOpts) -> None:
    """The in-memory bus has neither a host name nor heartbeats; kombu
    and oslo.messaging warn about both on every connection, which would
    bury the demo's output in noise about a broker it does not use."""
    conf.set_override("heartbeat_timeout_threshold", 0,
                      group="oslo_messaging_rabbit")
    # "No hostname was supplied. Reverting to default 'localhost'".
    std_logging.getLogger("kombu.connection").setLevel(std_logging.ERROR)


def weighing(conf: cfg.ConfigOpts) -> str:
    """The weighers with their multipliers, the normalisation and
    weight_setting, as the service will weigh."""
    spec = RequestSpec.from_dict(DEMO_REQUESTS[0][1],
                                 scope=conf.metrics.extra_specs_scope)
    weighers = filter_scheduler.FilterScheduler(conf).weighers
    setting = ", ".join(f"{name}={ratio:g}"
                        for name, ratio in conf.metrics.weight_setting)
    return "\n".join(
        ["Weighing (each weigher's normalised weight x its multiplier, "
         "summed):"]
        + [f"  {w.name} x {w.multiplier(spec):g}" for w in weighers]
        + [f"  [filter_scheduler] weight_normalization = "
           f"{conf.filter_scheduler.weight_normalization}",
           f"  [metrics] weight_setting = {setting or '(empty)'}",
           "  ResourcesWeigher weighs only requests with resources:<metric>"
           " = max or min extra specs.",
           "  RAMWeigher and CPUWeigher only tip near-ties: the demo places"
           " by load."])


def why(explained: dict) -> str:
    """Why the first instance went where it went: the chosen host's
    weight, each weigher's part of it (largest first), and the next
    best host's weight. The later instances of a burst are weighed with
    the claims of the earlier ones, which the explain before it cannot
    show."""
    weighed = [h for h in explained["hosts"] if h["weight"] is not None]
    if not weighed:
        return ""
    chosen = next(h for h in weighed if h["host"] == explained["selected"][0])
    parts = sorted(chosen["weights"].items(),
                   key=lambda item: -abs(item[1]["weighted"]))
    text = (f"  why (instance 1): {chosen['host']} weighs "
            f"{chosen['weight']:.3f} = "
            + " ".join(f"{name} {term['weighted']:+.3f}"
                       for name, term in parts))
    others = [h for h in weighed if h is not chosen]
    if others:
        text += f"; next best {others[0]['host']} {others[0]['weight']:.3f}"
    return text


def pending_claims(conf: cfg.ConfigOpts,
                   selections: list[list[dict]]) -> str:
    """The burst's claims per host, with all the claims not yet in a
    report and the cpu.percent the weighers see for them: why a burst
    spreads."""
    burst = collections.Counter(hosts[0]["host"] for hosts in selections)
    parts = []
    for host in HostManager(conf).host_states():
        reported = host.metrics.get("cpu.percent")
        if host.host in burst and reported is not None:
            parts.append(
                f"{host.host} {burst[host.host]} of {host.claims_pending} "
                f"(cpu.percent {reported.value:g} -> "
                f"{host.metric_since('cpu.percent', None):.4g})")
    return textwrap.fill(
        "pending claims (this burst's of all), counted in cpu.percent "
        "until the node's next report: " + ", ".join(sorted(parts)), width=78,
        initial_indent="  ", subsequent_indent="    ",
        break_on_hyphens=False)


def _print_selection(selections: list[list[dict]]) -> None:
    for number, hosts in enumerate(selections, 1):
        chosen, alternates = hosts[0], hosts[1:]
        others = ", ".join(h["host"] for h in alternates) or "none"
        print(f"  instance {number}: {chosen['host']} (weight "
              f"{chosen['weight']:.3f}, allocation "
              f"{chosen['allocation_id'][:8]}), alternates: {others}")


def run(conf: cfg.ConfigOpts) -> int:
    """Seed the embedded database, serve over kombu+memory, send the demo
    requests through the API-node client and print what happened."""
    quiet_in_memory_bus(conf)
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    rng = random.Random(42)
    monitors = agent.load_monitors(conf)
    local = agent.MonitorAgent(conf, monitors)
    local.run_cycle()
    seed_simulated_nodes(engine, rng)
    row = local.node_row()
    print(f"Fleet: this machine ({local.hostname}, "
          f"{len(row['metrics'])} real metrics) and "
          f"{len(SIMULATED_NODES)} simulated nodes, in "
          f"{db_api.safe_url(conf.database.connection)}")
    print(f"This machine's row: vcpus={row['vcpus']} "
          f"memory_mb={row['memory_mb']} local_gb={row['local_gb']} "
          f"az={row['availability_zone']}")
    print(textwrap.fill(", ".join(
        f"{m['name']}={m['value']:.6g}" for m in row["metrics"]),
        width=78, initial_indent="  ", subsequent_indent="  ") + "\n")

    print(weighing(conf) + "\n")
    service = server.SchedulerRPCService(conf, manager.SchedulerManager(conf))
    service.start()
    client = rpcapi.SchedulerAPI(conf, transport=service.transport,
                                 timeout=30, retry=1)
    try:
        for title, request_spec in DEMO_REQUESTS:
            print(f"== {title}")
            print(f"   request: {json.dumps(request_spec['flavor'])}"
                  + (f" cluster={request_spec['cluster']}"
                     if "cluster" in request_spec else ""))
            # Explained first: after the claim the fleet has changed and
            # the table would show other weights than the decision's.
            explained = client.explain(request_spec)
            try:
                selections = client.select_destinations(
                    request_spec, return_alternates=True)
                _print_selection(selections)
                print(why(explained))
                if len(selections) > 1:
                    print(pending_claims(conf, selections))
            except exception.NoValidHost as e:
                print(f"  NoValidHost: {e}")
            # The NoValidHost line above already gives the summary.
            print(textwrap.indent(output.explain(
                {**explained, "summary": None}, "table"), "  "))
            for warning in explained.get("warnings") or ():
                print(f"  Warning: {warning}")
            print()
    finally:
        client.close()
        service.stop()
    return 0
