#!/usr/bin/env python3
"""Benchmark of scheduler-api: p50/p99 of ``GET /v1/schedulingpolicies``
and of a policy ``PUT`` with N stored policies, T client threads.

Starts a real ``scheduler-api`` process (waitress) on a fresh database
(SQLite by default, ``--db-url`` for another), creates the policies
through the API, then times each case from T threads, each over a
keep-alive connection of its own. ``--auth http_basic`` measures with
an htpasswd user (credentials verified once, then remembered) instead
of noauth. Prints one machine-readable line per case, e.g.
``case=get_list policies=100 threads=8 p50_ms=3.10 p99_ms=9.80
per_s=2100``.
"""

import argparse
import base64
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import bcrypt
import sqlalchemy as sa

from scheduler.db import schema

POLICY = {"filters": [{"unit": "RamFilter"}, {"unit": "CoreFilter"}],
          "weights": [{"unit": "RAMWeigher", "factor": -1},
                      {"unit": "CPUWeigher", "factor": 2}],
          "balance": {"unit": "even_distribution"},
          "properties": {"HighUtilization": 75}}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Client:
    def __init__(self, port: int, auth: str | None):
        self.connection = http.client.HTTPConnection("127.0.0.1", port,
                                                     timeout=60)
        self.headers = {"Content-Type": "application/json"}
        if auth:
            self.headers["Authorization"] = "Basic " + base64.b64encode(
                auth.encode()).decode()

    def call(self, method: str, path: str, body=None,
             headers: dict | None = None) -> tuple[int, dict, object]:
        data = None if body is None else json.dumps(body).encode()
        self.connection.request(method, path, body=data,
                                headers={**self.headers, **(headers or {})})
        response = self.connection.getresponse()
        payload = response.read()
        return (response.status, dict(response.getheaders()),
                json.loads(payload) if payload else None)


def _start(workdir: str, url: str, strategy: str) -> tuple:
    port = _free_port()
    htpasswd = os.path.join(workdir, "htpasswd")
    with open(htpasswd, "w") as f:
        f.write("bench:" + bcrypt.hashpw(b"bench", bcrypt.gensalt()).decode()
                + "\n")
    config = os.path.join(workdir, "api.conf")
    with open(config, "w") as f:
        f.write(f"[database]\nconnection = {url}\n[api]\nport = {port}\n"
                f"auth_strategy = {strategy}\n[oslo_middleware]\n"
                f"http_basic_auth_user_file = {htpasswd}\n")
    engine = sa.create_engine(url)
    schema.db_sync(engine)
    if strategy == "http_basic":
        from sqlalchemy.orm import Session

        from scheduler.db import permissions
        with Session(engine) as session, session.begin():
            permissions.add(session, "bench", "admin")
    engine.dispose()
    server = subprocess.Popen(
        [shutil.which("scheduler-api") or "scheduler-api", "--config-file",
         config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"scheduler-api did not start: "
                         f"{server.stderr.read().decode()}")
            time.sleep(0.2)
    return server, port


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _run(name: str, threads: int, per_thread: int, work, args) -> None:
    samples: list[float] = []
    lock = threading.Lock()
    errors: list[str] = []

    def worker(index: int) -> None:
        client = Client(args.port, args.credentials)
        mine = []
        for i in range(per_thread):
            began = time.perf_counter()
            status = work(client, index, i)
            mine.append(time.perf_counter() - began)
            if status >= 400:
                errors.append(f"{name}: HTTP {status}")
        with lock:
            samples.extend(mine)

    began = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(i,))
            for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - began
    print(f"case={name} policies={args.policies} threads={threads} "
          f"p50_ms={statistics.median(samples) * 1000:.2f} "
          f"p99_ms={_percentile(samples, 0.99) * 1000:.2f} "
          f"per_s={len(samples) / wall:.0f} errors={len(errors)}",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", type=int, default=100)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--requests", type=int, default=50,
                        help="requests per thread and case")
    parser.add_argument("--db-url", help="database (default: a new SQLite "
                        "file); it is given the schema")
    parser.add_argument("--auth", choices=("noauth", "http_basic"),
                        default="noauth")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-api-")
    url = args.db_url or f"sqlite:///{workdir}/api.sqlite"
    server, args.port = _start(workdir, url, args.auth)
    args.credentials = "bench:bench" if args.auth == "http_basic" else None
    try:
        setup = Client(args.port, args.credentials)
        ids = []
        for i in range(args.policies):
            status, _, body = setup.call(
                "POST", "/v1/schedulingpolicies",
                dict(POLICY, name=f"bench-{i}"))
            if status != 201:
                sys.exit(f"creating policy {i}: HTTP {status} {body}")
            ids.append(body["id"])

        def get_list(client, _thread, _i) -> int:
            return client.call("GET", "/v1/schedulingpolicies")[0]

        def put(client, thread, i) -> int:
            # Each thread edits policies of its own: no 412s, the cost of
            # an edit and its transaction is what is measured.
            policy = ids[(thread + i * args.threads) % len(ids)]
            path = f"/v1/schedulingpolicies/{policy}"
            status, headers, _ = client.call("GET", path)
            began = time.perf_counter()
            status, _, _ = client.call(
                "PUT", path, {"description": f"edit {thread}.{i}"},
                headers={"If-Match": headers["ETag"]})
            client.put_time = time.perf_counter() - began
            return status

        _run("get_list", args.threads, args.requests, get_list, args)
        _run("get_one_put", args.threads, args.requests, put, args)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
