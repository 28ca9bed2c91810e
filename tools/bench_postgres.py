"""The benchmarks' PostgreSQL: a scratch database, dropped on exit, and
the CPU time of the backends serving it; and the CPU time of the
benchmark's own processes, read the same way (user + system, from /proc
through psutil, so only for processes on this machine)."""

import argparse
import contextlib
import os
import urllib.parse
import uuid
from collections.abc import Iterable
from collections.abc import Iterator

import psutil
import sqlalchemy as sa

from scheduler.db import api as db_api

#: The PostgreSQL the benchmarks create their scratch databases in, unless
#: ``$SCHEDULER_TEST_PG_URL`` or ``--db-admin-url`` says otherwise.
DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"

#: Hosts of a URL whose server runs on this machine ("": none given, the
#: driver's default socket).
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "")


def add_admin_url_option(parser: argparse.ArgumentParser) -> None:
    """``--db-admin-url``: where the scratch databases are made."""
    parser.add_argument(
        "--db-admin-url",
        default=os.environ.get("SCHEDULER_TEST_PG_URL") or DEFAULT_ADMIN_URL,
        help="PostgreSQL URL allowed to create and drop databases "
        f"(default: $SCHEDULER_TEST_PG_URL, else {DEFAULT_ADMIN_URL})")


@contextlib.contextmanager
def scratch_database(admin_url: str, prefix: str) -> Iterator[str]:
    """URL of a new PostgreSQL database named ``prefix`` and a random
    suffix, dropped on exit."""
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT",
                             poolclass=sa.pool.NullPool,
                             connect_args={"connect_timeout": 5})
    name = f"{prefix}_{uuid.uuid4().hex}"
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f"CREATE DATABASE {name}"))
        try:
            yield admin.url.set(database=name).render_as_string(
                hide_password=False)
        finally:
            # This process's pooled connections close rather than being
            # cut by the drop.
            db_api.dispose_engines()
            with admin.connect() as connection:
                # FORCE: a process killed mid-transaction may leave
                # sessions behind.
                connection.execute(sa.text(
                    f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    finally:
        admin.dispose()


def is_local(url: str) -> bool:
    """Whether the server of ``url`` runs on this machine (a loopback
    address or a Unix socket), where its processes can be read."""
    host = sa.engine.make_url(url).host or ""
    return urllib.parse.unquote(host) in LOCAL_HOSTS or host.startswith("/")


def backend_cpu(admin_url: str, database: str) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend connected to ``database``,
    by pid."""
    admin = sa.create_engine(admin_url, poolclass=sa.pool.NullPool)
    try:
        with admin.connect() as connection:
            pids = connection.execute(sa.text(
                "SELECT pid FROM pg_stat_activity WHERE datname = :name"),
                {"name": database}).scalars().all()
    finally:
        admin.dispose()
    seconds = {}
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            seconds[pid] = times.user + times.system
    return seconds


def backend_cpu_used(before: dict[int, float],
                     after: dict[int, float]) -> float:
    """CPU seconds the backends used between two ``backend_cpu``
    readings."""
    # A backend that connected in between counts from zero.
    return sum(seconds - before.get(pid, 0.0)
               for pid, seconds in after.items())


def process_cpu(processes: Iterable[psutil.Process]) -> float:
    """CPU seconds of ``processes`` (all their threads); one that ended
    counts for nothing."""
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system
    return total
