"""Options of the [DEFAULT] group shared by every service of the project."""

import os
import socket

from oslo_config import cfg

default_opts = [
    cfg.StrOpt(
        "host",
        default=socket.gethostname(),
        sample_default="<current hostname>",
        help="Name of this node. The compute monitor registers its node under "
        "this name; the scheduler uses it as its RPC server name.",
    ),
    cfg.StrOpt(
        "state_path",
        default=os.path.join(os.path.expanduser("~"), ".local", "state",
                             "metrics-scheduler"),
        sample_default="$HOME/.local/state/metrics-scheduler",
        help="Directory for local state, such as the default SQLite "
        "database. Created on first use.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(default_opts)


def list_opts() -> dict:
    return {"DEFAULT": default_opts}
