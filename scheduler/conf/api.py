"""Options of the [api] group: the scheduling policies REST API
(``scheduler-api``, docs/api.md)."""

import copy
import importlib.metadata
import ipaddress

from oslo_config import cfg

from scheduler import exception

HTTP_BASIC = "http_basic"
KEYSTONE = "keystone"
NOAUTH = "noauth"
AUTH_STRATEGIES = (HTTP_BASIC, KEYSTONE, NOAUTH)


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "api",
        title="REST API options",
        help="scheduler-api: scheduling policies, policy units, cluster "
        "assignments and permissions over HTTP.",
    )


api_opts = [
    cfg.HostAddressOpt(
        "host",
        default="127.0.0.1",
        help="Address scheduler-api listens on when run directly (not "
        "under uWSGI or gunicorn).",
    ),
    cfg.PortOpt(
        "port",
        default=8795,
        help="TCP port scheduler-api listens on when run directly.",
    ),
    cfg.StrOpt(
        "auth_strategy",
        default=HTTP_BASIC,
        choices=[
            (HTTP_BASIC, "HTTP basic authentication against the bcrypt "
             "htpasswd file of [oslo_middleware] "
             "http_basic_auth_user_file."),
            (KEYSTONE, "Keystone tokens (keystonemiddleware auth_token, "
             "configured in [keystone_authtoken])."),
            (NOAUTH, "No authentication: every caller is an admin. Only "
             "allowed when host is a loopback address."),
        ],
        help="How callers are authenticated. Who may do what is "
        "oslo.policy's (policy.yaml) and the permissions of the database.",
    ),
    cfg.IntOpt(
        "threads",
        default=16,
        min=1,
        help="Worker threads of the HTTP server when run directly. "
        "They run the application only: requests are read whole before "
        "one is handed to a thread, so slow clients hold none.",
    ),
    cfg.IntOpt(
        "request_timeout",
        default=10,
        min=1,
        help="Seconds a client has, from the first byte of a request, to "
        "send its headers and body when scheduler-api is run directly. "
        "A client still sending then is answered 408 and disconnected, "
        "so that clients sending a byte now and then cannot keep "
        "connections open.",
    ),
    cfg.IntOpt(
        "idle_timeout",
        default=30,
        min=1,
        help="Seconds a connection may stay open with nothing sent or "
        "received (before its first request, between keep-alive "
        "requests, or with the client not reading its answer) when "
        "scheduler-api is run directly.",
    ),
    cfg.IntOpt(
        "max_header_size",
        default=16384,
        min=1024,
        help="Largest request line and headers, in bytes, scheduler-api "
        "reads when run directly; larger ones are answered 431 without "
        "reaching the application.",
    ),
    cfg.IntOpt(
        "connection_limit",
        default=1000,
        min=1,
        help="Open connections at most when scheduler-api is run "
        "directly; past it, new connections wait in the listen backlog "
        "until others close. The limit on open files is raised to fit "
        "it where the hard limit allows.",
    ),
]


def validate(conf: cfg.ConfigOpts) -> None:
    """noauth listens on loopback only: anyone reaching it is an admin."""
    opts = conf.api
    if opts.auth_strategy != NOAUTH:
        return
    try:
        loopback = ipaddress.ip_address(opts.host).is_loopback
    except ValueError:
        loopback = opts.host == "localhost"
    if not loopback:
        raise exception.ConfigError(
            "api", "host", opts.host,
            "auth_strategy noauth needs a loopback address (127.0.0.1, "
            "::1): every caller is an admin")


#: keystonemiddleware's token cache, in seconds: a revoked token keeps
#: working this long at most (its default, 300, is five minutes). -1
#: validates every request with Keystone.
TOKEN_CACHE_SECONDS = 30
_KEYSTONE_DEFAULTS = {"token_cache_time": TOKEN_CACHE_SECONDS}


def set_keystone_sample_defaults() -> None:
    """``oslo.config.opts.defaults`` hook: the sample config shows this
    project's [keystone_authtoken] defaults."""
    from keystonemiddleware.auth_token import _opts

    # list_opts() hands out deep copies of these, after this hook runs.
    cfg.set_defaults(_opts._OPTS, **_KEYSTONE_DEFAULTS)


#: oslo.config.opts namespaces of the libraries scheduler-api configures
#: ([oslo_middleware], [oslo_policy], [keystone_authtoken]).
LIBRARY_NAMESPACES = ("oslo.middleware.basic_auth", "oslo.policy",
                      "keystonemiddleware.auth_token")


def register_library_opts(conf: cfg.ConfigOpts,
                          auth_plugin: bool = False) -> None:
    """The options of the libraries the API configures. Imported here,
    when asked (scheduler-api, config check): they cost more than half a
    second, which the other programs need not pay.

    ``auth_plugin`` (config check) adds those of Keystone's password
    plugin, which keystonemiddleware registers itself once it runs, as
    optional: whether they are needed depends on [keystone_authtoken]
    auth_type, which keystonemiddleware checks at start-up.
    """
    for entry_point in importlib.metadata.entry_points(
            group="oslo.config.opts"):
        if entry_point.name in LIBRARY_NAMESPACES:
            for group, opts in entry_point.load()():
                conf.register_opts(opts, group=group)
    for name, value in _KEYSTONE_DEFAULTS.items():
        conf.set_default(name, value, group="keystone_authtoken")
    if auth_plugin:
        from keystoneauth1 import loading
        optional = []
        for opt in loading.get_auth_plugin_conf_options("password"):
            opt = copy.deepcopy(opt)
            opt.required = False
            optional.append(opt)
        conf.register_opts(optional, group="keystone_authtoken")


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(_group())
    conf.register_opts(api_opts, group="api")


def list_opts() -> dict:
    return {_group(): api_opts}
