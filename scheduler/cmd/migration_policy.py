"""``scheduler-manage migration-policy list|show``: the migration
policies the balancers' planned moves carry (oVirt's, and those of
``[migration] policies_file``), and what a policy makes the agent do as
a move stalls: its convergence schedule, played.

The policies are imported where they are read: they import jsonschema,
which building the parser (``--help``, ``--version``) never needs."""

import sys
from typing import TYPE_CHECKING

from oslo_config import cfg

from scheduler.cmd import manage_args
from scheduler.cmd import output

if TYPE_CHECKING:
    from scheduler.policies.migration import policies as migration_policies

COLUMNS = ("id", "name", "max_migrations", "auto_convergence",
           "compression", "clusters")
STEP_COLUMNS = ("when", "action")


def _policies(conf: cfg.ConfigOpts
              ) -> "migration_policies.MigrationPolicies":
    from scheduler.policies.migration import policies as migration_policies

    return migration_policies.load_migration_policies(conf)


def migration_policy_list(conf: cfg.ConfigOpts) -> int:
    known = _policies(conf)
    rows = []
    for policy in known.policies.values():
        clusters = sorted(c for c, p in known.cluster_policies.items()
                          if p == policy.id)
        if policy.id == known.default_policy:
            clusters.append("(default)")
        rows.append((policy.id, policy.name, policy.max_migrations,
                     policy.auto_convergence, policy.migration_compression,
                     ", ".join(clusters)))
    print(output.render(COLUMNS, rows, conf.category.format))
    return 0


def played(policy: "migration_policies.MigrationPolicy"
           ) -> list[tuple[str, str]]:
    """(when, action) of each step the agent takes for a move under
    ``policy``: before it starts, then at each stalled iteration that
    fires one, until the schedule is done."""
    from scheduler.policies.migration import convergence

    player = convergence.Convergence(policy)
    steps = [("before start", _action(a)) for a in player.initial_actions()]
    stalled = 0
    while not player.finished:
        stalled += 1
        steps.extend((f"stalled {stalled}", _action(a))
                     for a in player.on_stalled(stalled))
    return steps


def _action(action: "migration_policies.Action") -> str:
    return " ".join([action.action, *map(str, action.params)])


def migration_policy_show(conf: cfg.ConfigOpts) -> int:
    known = _policies(conf)
    policy = known.policies.get(conf.category.id)
    if policy is None:
        print(f"scheduler-manage: error: no migration policy "
              f"{conf.category.id!r}; expected one of "
              f"{', '.join(sorted(known.policies))}", file=sys.stderr)
        return 1
    steps = played(policy)
    if not steps and conf.category.format == "table":
        print(f"{policy.name}: no convergence schedule (the hypervisor's "
              "defaults)")
        return 0
    print(output.render(STEP_COLUMNS, steps, conf.category.format))
    return 0


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "migration-policy", help="Migration policies of planned moves.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="Every usable migration "
                                 "policy and the clusters it is for.")
    manage_args.add_format(listing)
    listing.set_defaults(func=migration_policy_list)
    show = actions.add_parser(
        "show", help="What the agent does under one policy as a move "
        "stalls: its convergence schedule, step by step.")
    show.add_argument("id", metavar="ID", help="policy id (see list)")
    manage_args.add_format(show)
    show.set_defaults(func=migration_policy_show)
