"""RamFilter, CoreFilter and DiskFilter refuse an instance larger than
the node's physical total, whatever the allocation ratio (issue 18): its
own reason, only where overcommit would otherwise have let it in."""

import pytest
from oslo_config import cfg

from scheduler.filters import Rejection
from tests.fakes import make_host
from tests.unit.filters.fakes import check
from tests.unit.filters.fakes import make_spec
from tests.unit.filters.fakes import plain_conf


@pytest.fixture
def conf() -> cfg.ConfigOpts:
    return plain_conf()


@pytest.mark.parametrize(("name", "fields", "flavor", "detail"), [
    ("RamFilter", {"memory_mb": 512, "ram_allocation_ratio": 2.0},
     {"memory_mb": 1024},
     "needs 1024 MB, the node has 512 MB in all (ratio 2 applies to the "
     "sum of instances, not to one)"),
    ("CoreFilter", {"vcpus": 1, "cpu_allocation_ratio": 16.0},
     {"vcpus": 2},
     "needs 2 vCPUs, the node has 1 vCPUs in all (ratio 16 applies to "
     "the sum of instances, not to one)"),
    ("DiskFilter", {"disk_gb": 12, "disk_allocation_ratio": 10.0},
     {"root_gb": 10, "ephemeral_gb": 3},
     "needs 13 GB, the node has 12 GB in all (ratio 10 applies to the sum "
     "of instances, not to one)"),
])
def test_instance_larger_than_node_rejected_despite_ratio(
        conf, name, fields, flavor, detail):
    # Overcommit shares a node between instances, it does not grow it
    # for one: an empty node with room under its ratio still refuses.
    rejection = check(conf, name, make_host(**fields), make_spec(flavor))
    resource = {"RamFilter": "RAM", "CoreFilter": "vCPUs",
                "DiskFilter": "disk"}[name]
    assert rejection == Rejection(
        f"instance larger than the node's {resource}", detail)


@pytest.mark.parametrize(("name", "fields", "flavor"), [
    ("RamFilter", {"memory_mb": 512, "ram_allocation_ratio": 2.0,
                   "memory_mb_claimed": 512}, {"memory_mb": 512}),
    ("CoreFilter", {"vcpus": 1, "cpu_allocation_ratio": 16.0,
                    "vcpus_claimed": 15}, {"vcpus": 1}),
    ("DiskFilter", {"disk_gb": 12, "disk_allocation_ratio": 10.0,
                    "disk_gb_claimed": 100}, {"root_gb": 12}),
])
def test_instance_as_large_as_node_still_overcommits(
        conf, name, fields, flavor):
    assert check(conf, name, make_host(**fields), make_spec(flavor)) is None
