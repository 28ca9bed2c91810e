"""``scheduler.cmd.wsgi:application`` for uWSGI and gunicorn.

The configuration is read from ``SCHEDULER_API_CONFIG`` (a path, or
several separated by commas) or else the usual places
(/etc/scheduler/scheduler.conf). A configuration error is logged and
raised: the server then refuses to start, as it should.
"""

import os

from scheduler.cmd import api as api_cmd


def _config_files() -> list[str]:
    value = os.environ.get("SCHEDULER_API_CONFIG", "")
    return [path for path in value.split(",") if path]


def _application():
    files = _config_files()
    args = [arg for path in files for arg in ("--config-file", path)]
    return api_cmd.build(args)


application = _application()
