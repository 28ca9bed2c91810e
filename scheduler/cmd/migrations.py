"""``scheduler-manage migrations list|show|cancel``: the moves the
balancers planned and what the nodes' migration agents made of them
(state, progress, the reason of a failure), and cancelling one: a
planned move ends cancelled with its destination claim released; a
running one is aborted by its agent, which then records it cancelled.

The database is imported where the commands run: building the parser
(``--help``, ``--version``) never needs it."""

import sys
from typing import TYPE_CHECKING

from oslo_config import cfg

from scheduler.cmd import manage_args
from scheduler.cmd import output

if TYPE_CHECKING:
    from scheduler.placement import migrations as migrations_mod

PROG = "scheduler-manage"
STATES = ("planned", "running", "completed", "failed", "cancelled")
COLUMNS = ("uuid", "instance_uuid", "source_host", "dest_host", "state",
           "progress", "migration_policy", "updated_at")
FIELD_COLUMNS = ("field", "value")


def _store(conf: cfg.ConfigOpts) -> "migrations_mod.MigrationStore":
    from scheduler.placement import migrations as migrations_mod

    return migrations_mod.MigrationStore(conf)


def _shown(row: dict) -> dict:
    return {key: value.isoformat() if hasattr(value, "isoformat") else value
            for key, value in row.items()}


def migrations_list(conf: cfg.ConfigOpts) -> int:
    rows = [_shown(row) for row in _store(conf).rows(conf.category.state)]
    print(output.render(COLUMNS, [tuple(r[c] for c in COLUMNS)
                                  for r in rows], conf.category.format,
                        document={"migrations": rows}))
    return 0


def _one(conf: cfg.ConfigOpts) -> dict | None:
    found = _store(conf).rows(migration_uuid=conf.category.uuid)
    if not found:
        print(f"{PROG}: error: no migration {conf.category.uuid} (see "
              "migrations list)", file=sys.stderr)
        return None
    return _shown(found[0])


def migrations_show(conf: cfg.ConfigOpts) -> int:
    row = _one(conf)
    if row is None:
        return 1
    row.pop("id")
    print(output.render(FIELD_COLUMNS, list(row.items()),
                        conf.category.format, document=row))
    return 0


def migrations_cancel(conf: cfg.ConfigOpts) -> int:
    row = _one(conf)
    if row is None:
        return 1
    was = _store(conf).cancel(row["uuid"], "cancelled by an operator")
    if was == "planned":
        print(f"cancelled {row['uuid']}: its destination claim on "
              f"{row['dest_host']} is released")
    elif was == "running":
        print(f"asked the agent of {row['uuid']} to abort it: see "
              "migrations show")
    else:
        print(f"{PROG}: error: migration {row['uuid']} is {row['state']}; "
              "only a planned or running one can be cancelled",
              file=sys.stderr)
        return 1
    return 0


#: The commands that read the migrations table (schema checked first).
COMMANDS = (migrations_list, migrations_show, migrations_cancel)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "migrations", help="Moves planned by the balancers and carried out "
        "by the nodes' migration agents.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="Every move, newest first.")
    listing.add_argument("--state", choices=STATES,
                         help="only the moves in this state")
    manage_args.add_format(listing)
    listing.set_defaults(func=migrations_list)
    show = actions.add_parser("show", help="One move in full: progress, "
                              "the agent holding it, why it failed.")
    show.add_argument("uuid", metavar="UUID", help="the move's uuid")
    manage_args.add_format(show)
    show.set_defaults(func=migrations_show)
    cancel = actions.add_parser(
        "cancel", help="Cancel a planned move (its destination claim is "
        "released) or have its agent abort a running one.")
    cancel.add_argument("uuid", metavar="UUID", help="the move's uuid")
    cancel.set_defaults(func=migrations_cancel)
