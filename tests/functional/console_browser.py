"""The web console's functional tests: a headless Chromium from the OS
packages (``/usr/bin/chromium``, or ``SCHEDULER_TEST_CHROMIUM``; .ci/run
installs it) driven by Playwright (never ``playwright install``: no
browser download), a fleet written as the simulator writes its nodes,
and the screenshots for docs/images (``SCHEDULER_TEST_SCREENSHOTS=1``
only, so that a test run does not change the tree)."""

import datetime
import os
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from scheduler.db import models
from scheduler.simulation import fleet as sim_fleet
from tests.functional import api_server

CHROMIUM = os.environ.get("SCHEDULER_TEST_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "images"
#: Memory of the test fleet's node kinds: all differ, so that the RAM
#: weigher never ties and the choice is the same in every process.
KINDS = (("c1", 16384), ("c1", 65536), ("c1", 32768), ("c2", 24576),
         ("c2", 49152), ("c3", 8192))


def require_chromium() -> None:
    """Skip without Chromium; fail in CI (``CI=true``), where .ci/run
    installs it and a silent skip would hide a broken install."""
    if os.access(CHROMIUM, os.X_OK):
        return
    message = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true: {message}", pytrace=False)
    pytest.skip(message)


def launch(playwright):
    """Headless Chromium, the OS's."""
    require_chromium()
    return playwright.chromium.launch(executable_path=CHROMIUM)


def open_console(browser, api: api_server.Api, user: str, where: str = "",
                 fake_clock: bool = False):
    """A page of its own (a context per user: its own credentials),
    logged in as ``user`` with HTTP basic, at ``/ui/#where``; with
    ``fake_clock``, its timers run when ``page.clock`` moves them."""
    context = browser.new_context(
        base_url=f"http://127.0.0.1:{api.port}",
        http_credentials={"username": user,
                          "password": api_server.PASSWORD},
        viewport={"width": 1280, "height": 860})
    context.set_default_timeout(10000)
    page = context.new_page()
    if fake_clock:
        page.clock.install()
    page.goto(f"/ui/#{where}")
    page.wait_for_selector("#whoami:not(:empty)")
    return page


def screenshot(page, name: str) -> None:
    """docs/images/console-NAME.png, when SCHEDULER_TEST_SCREENSHOTS=1."""
    if os.environ.get("SCHEDULER_TEST_SCREENSHOTS") == "1":
        page.screenshot(path=SCREENSHOTS / f"console-{name}.png")


def write_fleet(url: str, kinds=KINDS, seed: int = 7) -> list[str]:
    """The nodes of ``kinds`` (cluster, memory MB) in ``url``, written
    by the simulator's fleet with a cpu.percent and memory report each;
    the last one's metrics made stale (an hour old). Returns the host
    names in order."""
    spec = sim_fleet.FleetSpec.from_kinds([
        sim_fleet.NodeKind(1, 16, memory_mb, cluster=cluster)
        for cluster, memory_mb in kinds])
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        nodes = sim_fleet.SimulatedFleet(engine, spec)
        nodes.create()
        rng = np.random.default_rng(seed)
        used = [int(m * rng.uniform(0.1, 0.6)) for _, m in kinds]
        nodes.report(np.arange(spec.hosts), rng.uniform(0, 100, spec.hosts),
                     np.array(used), list(range(spec.hosts)), lambda _: [])
        names = [sim_fleet.host_name(i) for i in range(spec.hosts)]
        table = models.ComputeNode.__table__
        with engine.begin() as connection:
            connection.execute(table.update().where(
                table.c.host == names[-1]).values(
                    metrics_updated_at=models.utcnow()
                    - datetime.timedelta(hours=1)))
    finally:
        engine.dispose()
    return names
