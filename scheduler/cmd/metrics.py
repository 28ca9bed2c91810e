"""``scheduler-manage metrics list``: the metric names the fleet reports,
to choose ``weight_setting`` and ``resources:`` extra specs from."""

from oslo_config import cfg

from scheduler.cmd import manage_args
from scheduler.cmd import output

COLUMNS = ("metric", "unit", "sources", "hosts")


def metrics_list(conf: cfg.ConfigOpts) -> int:
    # Here: the host cache imports the database, which building the
    # parser (--help, --version) never needs.
    from scheduler.hosts import reported_metrics
    from scheduler.hosts.cache.manager import HostManager

    hosts = HostManager(conf).host_states()
    metrics = reported_metrics.reported_metrics(hosts)
    fmt = conf.category.format
    rows = [(m.name, m.unit or "-", ",".join(m.sources),
             f"{m.hosts}/{len(hosts)}") for m in metrics]
    print(output.render(
        COLUMNS, rows, fmt,
        document={"hosts": len(hosts),
                  "metrics": [m.as_dict() for m in metrics]}))
    return 0


def add_parser(subparsers) -> None:
    metrics = subparsers.add_parser("metrics", help="Metric commands.")
    actions = metrics.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    parser = actions.add_parser(
        "list", help="Every metric name the compute nodes report, with its "
        "unit (built-in monitors), the monitors reporting it and how many "
        "hosts hold it: the names weight_setting and resources: extra "
        "specs can use.")
    manage_args.add_format(parser)
    parser.set_defaults(func=metrics_list)
