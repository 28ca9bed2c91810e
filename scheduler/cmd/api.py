"""``scheduler-api``: the scheduling policies REST API (docs/api.md),
served by waitress (scheduler.api.server) when run directly."""

import sys
from collections.abc import Sequence

from oslo_log import log as logging

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler.api import app as api_app
from scheduler.api import auth
from scheduler.api import hosts as api_hosts
from scheduler.api import server as api_server
from scheduler.cmd import api_checks
from scheduler.cmd import common
from scheduler.conf import api as api_conf
from scheduler.conf import cli
from scheduler.db import schema

CONF = scheduler_conf.CONF
PROG = "scheduler-api"
LOG = logging.getLogger(__name__)
DESCRIPTION = (
    "Serve the scheduling policies REST API: policy units, scheduling "
    "policies, cluster assignments, migration policies and permissions, "
    "on [api] host and port (127.0.0.1:8795). Authentication, [api] "
    "auth_strategy: http_basic (the default; bcrypt users of the htpasswd "
    "file [oslo_middleware] http_basic_auth_user_file, /etc/htpasswd, "
    "written by 'htpasswd -c -B'), keystone ([keystone_authtoken]) or "
    "noauth (every caller an admin; loopback [api] host only). For a "
    "trial without authentication: 'scheduler-manage --config-file "
    "examples/api/noauth.conf db sync', then 'scheduler-api --config-file "
    "examples/api/noauth.conf'. See docs/api.md. A configuration error "
    "exits 2.")


def _check_schema(conf) -> None:
    problem = schema.schema_problem(conf, PROG)
    if problem is not None:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        sys.exit(1)


def build(argv: Sequence[str]):
    """Parse and validate the configuration and build the WSGI app;
    configuration errors exit 2 with one line."""
    api_conf.register_library_opts(CONF)
    cli.parse(PROG, CONF, argv, "scheduler", DESCRIPTION)
    # The same rules as scheduler-service: every value (the libraries'
    # too) read now, a malformed one exits 2 with one line.
    common.validate(PROG, CONF, validators=[
        _validate_auth, api_checks.validate_policy_file])
    if CONF.api.auth_strategy != api_conf.KEYSTONE:
        # Keystone's password plugin options, as optional: a file shared
        # with a keystone deployment is not reported as misspelt.
        api_conf.register_library_opts(CONF, auth_plugin=True)
    common.start_logging(PROG, CONF, "scheduler")
    _check_schema(CONF)
    try:
        application = api_app.make_app(CONF)
    except exception.ConfigError as e:
        cli.config_error_exit(PROG, str(e))
    api_hosts.serve_in_background(CONF)
    return application


def _validate_auth(conf) -> None:
    api_conf.validate(conf)
    if conf.api.auth_strategy == api_conf.HTTP_BASIC:
        auth.wrap(lambda environ, start: [], conf)
    api_checks.load_keystone_auth(conf)


def main(argv: Sequence[str] | None = None) -> int:
    application = build(sys.argv[1:] if argv is None else argv)
    try:
        listening = api_server.make_server(application, CONF)
    except OSError as e:
        print(f"{PROG}: error: cannot listen on {CONF.api.host}:"
              f"{CONF.api.port}: {e.strerror or e}", file=sys.stderr)
        return 1
    LOG.info("scheduler-api listening on http://%s:%s (auth_strategy %s)",
             CONF.api.host, listening.effective_port,
             CONF.api.auth_strategy)
    api_server.serve(listening)
    return 0


if __name__ == "__main__":
    sys.exit(main())
