"""scheduler-manage balance: a dry run, then for real, and nothing planned
without a balancer."""

import json

import pytest
import sqlalchemy as sa

from scheduler.cmd import output
from scheduler.db import api as db_api
from scheduler.db import models
from tests.functional.processes import run_manage
from tests.unit.placement.fakes import planner
from tests.unit.placement.fakes import record_history
from tests.unit.placement.fakes import standard_fleet

# balance


@pytest.fixture
def overloaded(balancing_conf, write_config, sqlite_url):
    """Ten hosts in cluster c1, two above 80 % cpu.percent for the last
    two minutes (the history the balancer judges by), mapped to the
    evenly_distributed policy."""
    conf = balancing_conf(sqlite_url)
    fleet = standard_fleet(db_api.get_engine(conf), ticks=2)
    history = planner(conf, fleet, "evenly_distributed")
    record_history(fleet, history)
    db_api.dispose_engines()
    return write_config({
        "database": {"connection": sqlite_url},
        "filter_scheduler": {"cpu_allocation_ratio": 1.0},
        "scheduler": {"cluster_policies": "c1:evenly_distributed"}})


def _migrations(url: str) -> int:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        count = connection.execute(sa.select(sa.func.count()).select_from(
            models.Migration.__table__)).scalar()
    engine.dispose()
    return count


def test_balance_dry_run_then_for_real(overloaded, sqlite_url,
                                       run_console_script):
    dry = run_manage(run_console_script, overloaded, "balance", "--dry-run",
                  "--format", "json")
    assert dry.returncode == 0, dry.stderr
    planned, = json.loads(dry.stdout)
    assert planned["source_host"] in ("h0", "h1")
    assert planned["allocation_id"] is None
    assert planned["migration_policy"] == "minimal_downtime"
    assert _migrations(sqlite_url) == 0

    unknown = run_manage(run_console_script, overloaded, "balance",
                      "--migration-policy", "nope")
    assert unknown.returncode == 2
    assert "unknown migration policy 'nope'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1

    real = run_manage(run_console_script, overloaded, "balance", "--cluster",
                   "c1")
    assert real.returncode == 0, real.stderr
    header, _rule, row = real.stdout.splitlines()[:3]
    assert header.split() == list(output.MIGRATION_COLUMNS)
    assert row.split()[:5] == ["c1", "evenly_distributed",
                               planned["instance_uuid"],
                               planned["source_host"], planned["dest_host"]]
    assert _migrations(sqlite_url) == 1

    # No host in c2: said, as explain says it, not an empty plan.
    elsewhere = run_manage(run_console_script, overloaded, "balance",
                           "--cluster", "c2", "--format", "csv")
    assert elsewhere.returncode == 1
    assert elsewhere.stdout == ""
    assert elsewhere.stderr.strip().splitlines() == [
        "scheduler-manage: error: no compute node is in cluster 'c2' "
        "(clusters: c1)"]


def test_balance_without_a_balancer_plans_nothing(fleet, run_console_script):
    result = run_manage(run_console_script, fleet, "balance")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "No migration planned."

    csv_run = run_manage(run_console_script, fleet, "balance", "--format",
                         "csv")
    assert csv_run.returncode == 0, csv_run.stderr
    assert csv_run.stdout.splitlines() == [",".join(output.MIGRATION_COLUMNS)]
