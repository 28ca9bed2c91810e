#!/usr/bin/env python3
"""Render time of the web console's fleet page in headless Chromium,
for fleets of N hosts (default 0, the baseline, then 1,000 and 10,000).

For each size: a fresh PostgreSQL database holding N nodes in 10
clusters, written as the simulator writes its fleet (a cpu.percent and
memory report each), a real ``scheduler-api`` on it (http_basic, an
admin user: bench_api's), then R page loads of ``/ui/#fleet``, each in a
new browser context. A load's render time is the page's
``fleet-rendered`` performance mark: from navigation start until the
tiles were painted (the console's files, ``GET /v1/hosts``, building
the tiles, layout, one frame). The first load of a size is cold (the
API's host cache loads every row); the median is over all R.

Chromium is the OS's (``--chromium``, default /usr/bin/chromium),
driven by Playwright. Prints one JSON document.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

import numpy as np
import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_api

from scheduler.simulation import fleet as sim_fleet

ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
#: The page's own measure (scheduler/api/console/fleet.js).
RENDERED = "performance.getEntriesByName('fleet-rendered')"


def _write_fleet(url: str, hosts: int) -> None:
    spec = sim_fleet.FleetSpec(hosts=hosts, vcpus=32, memory_mb=131072,
                               clusters=10)
    engine = sa.create_engine(url)
    try:
        nodes = sim_fleet.SimulatedFleet(engine, spec)
        nodes.create()
        rng = np.random.default_rng(1)
        nodes.report(np.arange(hosts), rng.uniform(0, 100, hosts),
                     rng.integers(4096, 131072, hosts), list(range(hosts)),
                     lambda _: [])
    finally:
        engine.dispose()


def _load(browser, port: int) -> dict:
    context = browser.new_context(
        base_url=f"http://127.0.0.1:{port}",
        http_credentials={"username": "bench", "password": "bench"},
        viewport={"width": 1280, "height": 860})
    try:
        page = context.new_page()
        page.goto("/ui/#fleet")
        # Polled from here: the console's CSP refuses the string
        # evaluation wait_for_function would run in the page.
        deadline = time.monotonic() + 120
        while not page.evaluate(f"{RENDERED}.length"):
            if time.monotonic() > deadline:
                sys.exit("the fleet page did not render in 120 s")
            time.sleep(0.02)
        return page.evaluate(f"""() => {{
            const hosts = performance.getEntriesByType('resource')
                .find((e) => e.name.endsWith('/v1/hosts'));
            return {{render_ms: {RENDERED}[0].startTime,
                     hosts_fetch_ms: hosts.responseEnd - hosts.startTime,
                     hosts_json_bytes: hosts.encodedBodySize,
                     tiles: document.querySelectorAll('.tile').length}};
        }}""")
    finally:
        context.close()


def _measure(browser, admin: sa.Engine, hosts: int, runs: int) -> dict:
    name = f"bench_console_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {name}"))
    url = admin.url.set(database=name).render_as_string(hide_password=False)
    workdir = tempfile.mkdtemp(prefix="bench-console-")
    server = None
    try:
        server, port = bench_api._start(workdir, url, "http_basic")
        if hosts:
            _write_fleet(url, hosts)
        loads = [_load(browser, port) for _ in range(runs)]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)
        with admin.connect() as connection:
            connection.execute(sa.text(
                f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    if any(load["tiles"] != hosts for load in loads):
        sys.exit(f"{hosts} hosts: the page showed {loads[0]['tiles']} tiles")
    return {"hosts": hosts,
            "render_ms": [round(load["render_ms"], 1) for load in loads],
            "median_render_ms": round(statistics.median(
                load["render_ms"] for load in loads), 1),
            "median_hosts_fetch_ms": round(statistics.median(
                load["hosts_fetch_ms"] for load in loads), 1),
            "hosts_json_bytes": loads[-1]["hosts_json_bytes"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+",
                        default=[0, 1000, 10000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--admin-url", default=ADMIN_URL,
                        help="PostgreSQL URL allowed to create databases")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    admin = sa.create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=args.chromium)
            results = [_measure(browser, admin, n, args.runs)
                       for n in args.hosts]
            version = browser.version
            browser.close()
    finally:
        admin.dispose()
    print(json.dumps({"chromium": version, "runs": args.runs,
                      "cpus": os.cpu_count(), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
