"""Request text on the real databases (issue 18 item 8).

Every string of a request is either stored and read back as it came, on
SQLite, PostgreSQL and MariaDB (also a MariaDB database created with the
latin1 default character set), or refused before the decision with
InvalidRequest naming the field: NUL and lone surrogates, which no
database stores. Hypothesis draws the strings; the request goes through
the real SchedulerManager, its claim and its cluster lock.
"""

import dataclasses
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_config import cfg
from sqlalchemy.engine import Engine

from scheduler import conf as scheduler_conf
from scheduler import exception
from scheduler import manager
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import schema
from tests.functional import conftest

NODES = models.ComputeNode.__table__
ALLOCATIONS = models.Allocation.__table__

#: Host names outside Latin-1, stored in compute_nodes too.
HOSTS = ("nœud-東京-1", "node-🎉-2")

_LATIN1 = dataclasses.replace(
    conftest._MYSQL,
    create_sql="CREATE DATABASE {name} CHARACTER SET latin1 "
    "COLLATE latin1_swedish_ci")

BACKENDS = ["sqlite", "postgresql", "mysql", "mysql_latin1"]


@pytest.fixture
def mysql_latin1_url(mysql_admin_engine: Engine) -> Iterator[str]:
    """A new MariaDB database whose default character set is latin1, as
    on servers that were never told otherwise."""
    yield from conftest._fresh_database(_LATIN1, mysql_admin_engine)


@pytest.fixture(params=[pytest.param(b, marks=getattr(
    pytest.mark, b.partition("_")[0])) for b in BACKENDS])
def any_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(f"{request.param}_url")


def _config(url: str) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    conf.set_override("connection", url, group="database")
    # Only RAM decides: the drawn zone, cluster and names must not
    # remove the hosts.
    conf.set_override("enabled_filters", ["RamFilter"],
                      group="filter_scheduler")
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    # The request's cluster names a database lock.
    conf.set_override("cluster_lock", True, group="scheduler")
    return conf


@pytest.fixture
def scheduler(any_url: str) -> Iterator[manager.SchedulerManager]:
    conf = _config(any_url)
    engine = db_api.get_engine(conf)
    schema.db_sync(engine)
    now = models.utcnow()
    with engine.begin() as connection:
        connection.execute(NODES.insert(), [{
            "uuid": str(uuid.uuid4()), "host": name,
            "hypervisor_hostname": name, "cluster": "ρ-cluster",
            "availability_zone": "nova", "vcpus": 64,
            "memory_mb": 1024 * 1024, "local_gb": 10000,
            "memory_mb_used": 0, "local_gb_used": 0, "cpu_info": "{}",
            "networks": "[]", "metrics": "[]", "disabled": False,
            "generation": 0, "changed_at": now, "created_at": now,
            "updated_at": now} for name in HOSTS])
    yield manager.SchedulerManager(conf)
    db_api.dispose_engines()


#: Text every database stores: anything but NUL and lone surrogates
#: (the utf-8 codec leaves surrogates out).
_STORABLE_CHARACTERS = st.characters(codec="utf-8", exclude_characters="\x00")
storable = st.text(_STORABLE_CHARACTERS, max_size=40)
name = st.text(_STORABLE_CHARACTERS, min_size=1, max_size=40)


def _spec(draw_texts: dict) -> dict:
    return {
        "flavor": {"name": draw_texts["name"], "vcpus": 1, "memory_mb": 64,
                   "root_gb": 1, "extra_specs": {
                       "custom:" + draw_texts["key"]: draw_texts["value"]}},
        "availability_zone": draw_texts["zone"],
        "cluster": draw_texts["cluster"],
        "scheduler_hints": {"group": draw_texts["group"]},
        "ignore_hosts": [draw_texts["ignored"]],
        "requested_networks": [draw_texts["network"]],
        "image": {"properties": {draw_texts["property"]:
                                 draw_texts["value"]}},
    }


texts = st.fixed_dictionaries({
    "name": storable, "key": storable, "value": storable,
    "zone": storable, "cluster": storable, "group": name,
    "ignored": name, "network": name, "property": name})

_SETTINGS = settings(
    max_examples=30, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture,
                           HealthCheck.too_slow])


def _stored_group(mgr: manager.SchedulerManager, instance: str) -> str:
    engine = db_api.get_engine(mgr.conf)
    with engine.connect() as connection:
        return connection.execute(
            sa.select(ALLOCATIONS.c.instance_group).where(
                ALLOCATIONS.c.instance_uuid == instance)).scalar_one()


def test_the_database_tables_are_utf8mb4(mysql_latin1_url: str):
    engine = db_api.get_engine(_config(mysql_latin1_url))
    schema.db_sync(engine)
    with engine.connect() as connection:
        collations = dict(connection.execute(sa.text(
            "SELECT table_name, table_collation FROM "
            "information_schema.tables WHERE table_schema = DATABASE() "
            "AND table_name <> 'alembic_version'")).all())
    assert set(collations.values()) == {"utf8mb4_bin"}
    # Every table of every revision, later ones (0004 on) included.
    assert set(collations) == set(models.Base.metadata.tables)


@_SETTINGS
@given(texts=texts)
def test_storable_text_is_stored_as_it_came(scheduler, texts):
    instance = str(uuid.uuid4())
    selection, = scheduler.select_destinations(_spec(texts), [instance])
    assert selection[0]["host"] in HOSTS
    assert _stored_group(scheduler, instance) == texts["group"]
    assert scheduler.release(instance)


FIELDS = {
    "request_spec.flavor.name": ("name",),
    "request_spec.availability_zone": ("zone",),
    "request_spec.cluster": ("cluster",),
    "request_spec.scheduler_hints.group": ("group",),
    "request_spec.ignore_hosts[0]": ("ignored",),
    "request_spec.requested_networks[0]": ("network",),
}


@_SETTINGS
@given(field=st.sampled_from(sorted(FIELDS)),
       bad=st.sampled_from(["\x00", "\ud800", "\udfff", "\udc80"]),
       before=storable, after=storable)
def test_unstorable_text_is_an_invalid_request_naming_the_field(
        scheduler, field, bad, before, after):
    drawn = dict.fromkeys(("name", "key", "value", "zone", "cluster",
                           "group", "ignored", "network", "property"), "x")
    drawn[FIELDS[field][0]] = (before + bad + after)[:255]
    instance = str(uuid.uuid4())
    with pytest.raises(exception.InvalidRequest) as error:
        scheduler.select_destinations(_spec(drawn), [instance])
    assert str(error.value).startswith(f"{field}: ")
    assert "no database can store" in str(error.value)
    with pytest.raises(exception.InvalidRequest):
        scheduler.explain(_spec(drawn))
    assert not scheduler.release(instance)


@pytest.mark.parametrize("where", ["key", "value", "property"])
def test_unstorable_keys_and_values_of_maps_are_named(scheduler, where):
    drawn = dict.fromkeys(("name", "key", "value", "zone", "cluster",
                           "group", "ignored", "network", "property"), "x")
    drawn[where] = "a\x00b"
    with pytest.raises(exception.InvalidRequest) as error:
        scheduler.select_destinations(_spec(drawn), [str(uuid.uuid4())])
    assert str(error.value).startswith("request_spec.")
    assert "NUL" in str(error.value)


def test_existing_latin1_tables_are_converted(mysql_latin1_url: str):
    conf = _config(mysql_latin1_url)
    engine = db_api.get_engine(conf)
    schema.db_sync(engine, "0002")
    now = models.utcnow()
    with engine.begin() as connection:
        # What 0001 and 0002 created before they named a character set.
        for table in ("compute_nodes", "allocations", "migrations",
                      "utilization_samples"):
            connection.execute(sa.text(
                f"ALTER TABLE {table} CONVERT TO CHARACTER SET latin1"))
        connection.execute(NODES.insert(), {
            "uuid": str(uuid.uuid4()), "host": "café", "cluster": "Zürich",
            "hypervisor_hostname": "café", "vcpus": 8, "memory_mb": 8192,
            "local_gb": 100, "memory_mb_used": 0, "local_gb_used": 0,
            "cpu_info": "{}", "networks": "[]", "metrics": "[]",
            "disabled": False, "generation": 0, "changed_at": now,
            "created_at": now, "updated_at": now})
    schema.db_sync(engine)
    assert schema.db_version(engine) == schema.head_version()
    mgr = manager.SchedulerManager(conf)
    instance = str(uuid.uuid4())
    selection, = mgr.select_destinations({
        "flavor": {"vcpus": 1, "memory_mb": 64, "root_gb": 1},
        "cluster": "Zürich",
        "scheduler_hints": {"group": "группа-東京-🎉"}}, [instance])
    assert selection[0]["host"] == "café"
    assert _stored_group(mgr, instance) == "группа-東京-🎉"
