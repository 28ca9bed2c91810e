"""``scheduler-manage permission add|list|remove``: who may do what
through scheduler-api (roles admin, cluster_admin, reader on a cluster
or on all, ``*``). The same table as ``/v1/permissions``.

The commands import the database where they run: building the parser
(``--help``, ``--version``) must not import SQLAlchemy."""

import sys
from typing import TYPE_CHECKING

from oslo_config import cfg

from scheduler.cmd import manage_args
from scheduler.cmd import output
from scheduler.db import roles

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

COLUMNS = ("id", "user", "domain", "role", "cluster")


def _session(conf: cfg.ConfigOpts) -> "Session":
    from sqlalchemy.orm import Session

    from scheduler.db import api as db_api

    return Session(db_api.get_engine(conf), expire_on_commit=False)


def permission_add(conf: cfg.ConfigOpts) -> int:
    from scheduler.db import permissions as store

    args = conf.category
    cluster = args.cluster or roles.ALL_CLUSTERS
    try:
        with _session(conf) as session, session.begin():
            row = store.add(session, args.user, args.role, cluster,
                            args.domain)
            shown = store.as_dict(row)
    except store.InvalidPermission as e:
        print(f"scheduler-manage: error: --{e.field}: {e.problem}",
              file=sys.stderr)
        return 2
    except LookupError as e:
        print(f"scheduler-manage: error: {args.user} is {args.role} on "
              f"{cluster} already (permission {e})", file=sys.stderr)
        return 1
    print(shown["id"])
    return 0


def permission_list(conf: cfg.ConfigOpts) -> int:
    from scheduler.db import permissions as store

    with _session(conf) as session:
        rows = [store.as_dict(row) for row in store.list_all(session)]
    print(output.render(COLUMNS, [tuple(r[c] for c in COLUMNS)
                                  for r in rows], conf.category.format,
                        document={"permissions": rows}))
    return 0


def permission_remove(conf: cfg.ConfigOpts) -> int:
    from scheduler.db import permissions as store

    permission_id = conf.category.id
    with _session(conf) as session, session.begin():
        removed = store.remove(session, permission_id)
    if not removed:
        print(f"scheduler-manage: error: no permission {permission_id} "
              "(see permission list)", file=sys.stderr)
        return 1
    print(f"removed {permission_id}")
    return 0


#: The commands that read the permissions table (schema checked first).
COMMANDS = (permission_add, permission_list, permission_remove)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "permission", help="Permissions of scheduler-api users.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    add = actions.add_parser(
        "add", help="Give a user a role on a cluster (without --cluster: "
        "on every cluster, *). Prints the permission's id.")
    add.add_argument("--user", required=True, help="user name, as "
                     "authenticated (htpasswd or Keystone)")
    add.add_argument("--domain", help="the id of the user's Keystone "
                     "domain (default: none: an htpasswd user, or a "
                     "Keystone user of the 'default' domain)")
    add.add_argument("--role", required=True, choices=roles.ROLES)
    add.add_argument("--cluster", help="cluster name (default: *, all; "
                     "admin is always *)")
    add.set_defaults(func=permission_add)
    listing = actions.add_parser("list", help="Every permission.")
    manage_args.add_format(listing)
    listing.set_defaults(func=permission_list)
    remove = actions.add_parser("remove", help="Take a permission back.")
    remove.add_argument("id", help="the permission's id (permission list)")
    remove.set_defaults(func=permission_remove)
