"""Property tests: the column (NumPy) path of filters, weighers and the
filter scheduler gives exactly what the per-host path gives.

Every filter with ``passes()`` must agree with its own ``reject()``,
every weigher with ``raw_column()`` with its own ``raw_weights()`` (NaN
for None, floats compared with ==), ``normalize_array`` with a plain
reference of each mode, ``HostTable.replaced()`` with a fresh table, and
a FilterScheduler using the columns with one whose plugins have none.
"""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.hosts import change_kinds
from scheduler.hosts import state as hm
from scheduler.hosts.table import HostTable
from scheduler.weights.normalization import normalize
from scheduler.weights.normalization import normalize_array
from tests.unit.hosts.fakes import COLUMN_FILTERS
from tests.unit.hosts.fakes import COLUMN_WEIGHERS
from tests.unit.hosts.fakes import METRICS
from tests.unit.hosts.fakes import OPTIONS
from tests.unit.hosts.fakes import PROPERTY
from tests.unit.hosts.fakes import WORDS
from tests.unit.hosts.fakes import apply_options
from tests.unit.hosts.fakes import as_optional
from tests.unit.hosts.fakes import configured
from tests.unit.hosts.fakes import fleets
from tests.unit.hosts.fakes import host_states
from tests.unit.hosts.fakes import request
from tests.unit.hosts.fakes import spec_dicts

# -- strategies -------------------------------------------------------------


scalars = (st.none() | st.booleans() | st.integers(-2, 64)
           | st.sampled_from((0.0, -0.0, 1.0, 8.0, 2.5))
           | st.sampled_from(WORDS))

json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(("cores", "arch", "x", "8")),
                          children, max_size=3)),
    max_leaves=6)


# Several max/min goals at once: a host missing one of them must not
# count in the scaling of the others.
goal_spec_dicts = st.builds(
    lambda spec, goals: {**spec, "flavor": {
        **spec["flavor"], "extra_specs": goals}},
    spec_dicts,
    st.dictionaries(
        st.sampled_from([f"resources:{m}" for m in METRICS[:3]]),
        st.sampled_from(("max", "min")), min_size=2))


option_sets = st.fixed_dictionaries(OPTIONS)


# -- filters ----------------------------------------------------------------

def test_passes_agrees_with_reject():
    with configured() as conf:
        plugins = [filter_class(conf) for filter_class in COLUMN_FILTERS]

        @PROPERTY
        @given(hosts=fleets(), spec_dict=spec_dicts, options=option_sets)
        def check(hosts, spec_dict, options):
            apply_options(conf, options)
            table = HostTable(hosts)
            for host_filter in plugins:
                name = host_filter.name
                spec = request(spec_dict)
                host_filter.validate_request(spec)
                verdicts = host_filter.passes(table, spec)
                assert verdicts is not None, name
                assert verdicts.dtype == bool, name
                assert verdicts.shape == (len(hosts),), name
                # A fresh request: nothing memoised by passes() is reused.
                spec = request(spec_dict)
                assert verdicts.tolist() == [
                    host_filter.reject(host, spec) is None
                    for host in hosts], name
                assert verdicts.tolist() == [
                    rejection is None for rejection
                    in host_filter.rejections(hosts, spec)], name

        check()


# -- weighers ---------------------------------------------------------------

def test_raw_column_agrees_with_raw_weights():
    with configured() as conf:
        plugins = [weigher_class(conf) for weigher_class in COLUMN_WEIGHERS]

        @PROPERTY
        @given(data=st.data(), hosts=fleets(),
               spec_dict=spec_dicts | goal_spec_dicts,
               options=option_sets)
        def check(data, hosts, spec_dict, options):
            apply_options(conf, options)
            # Any positions, in any order, as the scheduler's candidates.
            rows = data.draw(st.lists(st.sampled_from(range(len(hosts))),
                                      unique=True) if hosts
                             else st.just([]))
            table = HostTable(hosts)
            for weigher in plugins:
                name = weigher.name
                spec = request(spec_dict)
                column = weigher.raw_column(
                    table, np.array(rows, dtype=np.intp), spec)
                assert column is not None, name
                assert column.dtype == float, name
                assert column.shape == (len(rows),), name
                spec = request(spec_dict)
                expected = weigher.raw_weights([hosts[i] for i in rows],
                                               spec)
                # Exact: == on floats, NaN standing for None.
                assert as_optional(column.tolist()) == expected, name

        check()


# -- normalisation ----------------------------------------------------------

def reference_normalize(mode: str, raw: list[float | None],
                        maximum: float | None) -> list[float | None]:
    """The modes of scheduler.weights.normalization, spelled out."""
    available = [value for value in raw if value is not None]
    if mode == "none":
        return list(raw)
    if mode == "minmax":
        low = min(available, default=0.0)
        spread = max(available, default=0.0) - low
        return [None if value is None
                else 0.0 if spread == 0 else (value - low) / spread
                for value in raw]
    if mode == "rank":
        count = len(available)
        return [None if value is None else float(
            count - 1 - sum(1 for other in available if other > value))
            for value in raw]
    assert mode == "hardmax"
    if maximum is None:
        maximum = max((abs(value) for value in available), default=0.0)
        if maximum == 0:
            return [None if value is None else 0.0 for value in raw]
    return [None if value is None
            else min(max(value / maximum, -1.0), 1.0) for value in raw]


raw_weight_lists = st.lists(
    st.none()
    | st.sampled_from((0.0, -0.0, 1.0, 1.0, 5.0, -3.0, 8192.0))
    | st.floats(-1e9, 1e9, allow_nan=False),
    max_size=12)


@PROPERTY
@given(mode=st.sampled_from(("minmax", "rank", "hardmax", "none")),
       raw=raw_weight_lists,
       maximum=st.none() | st.sampled_from((1.0, 8192.0, 0.5))
       | st.floats(1e-3, 1e9))
def test_normalize_array_matches_reference(mode, raw, maximum):
    if mode != "hardmax":
        maximum = None
    values = np.array([np.nan if v is None else v for v in raw],
                      dtype=float)
    before = values.copy()
    normalized = normalize_array(mode, values, maximum)
    expected = reference_normalize(mode, raw, maximum)
    assert normalized.shape == values.shape
    assert as_optional(normalized.tolist()) == expected
    assert normalize(mode, raw, maximum) == expected
    # The input is left alone (the scheduler keeps the raw column).
    np.testing.assert_array_equal(values, before)


# -- the table itself -------------------------------------------------------

def _run_plugins(conf, table: HostTable, spec_dict: dict) -> dict:
    """Every column verdict and weight of ``table``: what builds its
    columns."""
    spec = request(spec_dict)
    rows = np.arange(len(table), dtype=np.intp)
    found = {}
    for filter_class in COLUMN_FILTERS:
        found[filter_class.__name__] = filter_class(conf).passes(
            table, spec).tolist()
    for weigher_class in COLUMN_WEIGHERS:
        found[weigher_class.__name__] = as_optional(
            weigher_class(conf).raw_column(table, rows, spec).tolist())
    return found


def _nan_to_none(values: list) -> list:
    return [None if isinstance(item, float) and math.isnan(item) else item
            for item in values]


def _same_column(replaced: HostTable, fresh: HostTable, key,
                 builder) -> None:
    """Column ``key`` of ``replaced`` (carried over) is what ``fresh``
    builds from scratch; code columns compared by the values they
    stand for."""
    dtype, value, _changed_by = builder
    array = replaced.column(key, dtype, value)
    if isinstance(key, tuple) and key[:1] == ("codes",):
        _codes, interned = replaced.codes(key[1], value)
        decoded = [interned[code] for code in array.tolist()]
        # The interner's own column function (white box).
        expected = [value._value(host) for host in fresh.hosts]
        assert [type(v) for v in decoded] == [type(v) for v in expected]
        assert decoded == expected, key
    else:
        assert array.dtype == fresh.column(key, dtype, value).dtype
        assert (_nan_to_none(array.tolist())
                == _nan_to_none(fresh.column(key, dtype, value).tolist())
                ), key


@PROPERTY
@given(data=st.data(), hosts=fleets(), spec_dict=spec_dicts,
       options=option_sets)
def test_replaced_equals_a_fresh_table(data, hosts, spec_dict, options):
    with configured() as conf:
        apply_options(conf, options)
        table = HostTable(hosts)
        before = _run_plugins(conf, table, spec_dict)
        changed = data.draw(st.lists(st.sampled_from(range(len(hosts))),
                                     unique=True) if hosts else st.just([]))
        flavor = spec_dict["flavor"]
        copies = hm.snapshot([hosts[i] for i in changed])
        for number, copy in enumerate(copies):
            copy.consume(flavor["vcpus"], flavor["memory_mb"],
                         flavor["root_gb"] + flavor["ephemeral_gb"],
                         f"new-{number}", "g3")
        new_hosts = list(hosts)
        for index, copy in zip(changed, copies, strict=True):
            new_hosts[index] = copy

        replaced = table.replaced(dict(zip(changed, copies, strict=True)))
        fresh = HostTable(new_hosts)
        assert list(replaced.hosts) == new_hosts
        # The original table is untouched.
        assert _run_plugins(conf, table, spec_dict) == before
        # Column by column (the carried-over ones: white box) ...
        carried = dict(replaced._columns)
        assert carried
        for key, (_array, builder) in carried.items():
            _same_column(replaced, fresh, key, builder)
        # ... and through the plugins.
        assert (_run_plugins(conf, replaced, spec_dict)
                == _run_plugins(conf, fresh, spec_dict))
        assert replaced.name_rank().tolist() == fresh.name_rank().tolist()


@PROPERTY
@given(data=st.data(), hosts=fleets(), spec_dict=spec_dicts,
       options=option_sets)
def test_replaced_by_kind_equals_a_fresh_table(data, hosts, spec_dict,
                                               options):
    """Rows replaced with a kind of change keep the columns that kind
    cannot move (``change_kinds``), and the table is still what a fresh
    one builds: a claim moves the claims, a report the metrics, the
    heartbeat and the pending claims, both the generation."""
    with configured() as conf:
        apply_options(conf, options)
        table = HostTable(hosts)
        _run_plugins(conf, table, spec_dict)
        changed = data.draw(st.lists(st.sampled_from(range(len(hosts))),
                                     unique=True) if hosts else st.just([]))
        kind = data.draw(st.sampled_from((change_kinds.REPORT,
                                          change_kinds.CLAIM)))
        flavor = spec_dict["flavor"]
        copies = hm.snapshot([hosts[i] for i in changed])
        for number, copy in enumerate(copies):
            copy.generation += 1
            if kind == change_kinds.CLAIM:
                copy.consume(flavor["vcpus"], flavor["memory_mb"],
                             flavor["root_gb"], f"new-{number}", "g3")
                continue
            report = data.draw(host_states)
            for name in ("metrics", "updated_at", "vcpus_pending",
                         "memory_mb_pending"):
                setattr(copy, name, getattr(report, name))
            # Every metric's word turned: a column of them must move.
            copy.bad_metrics = frozenset(METRICS) - copy.bad_metrics
        new_hosts = list(hosts)
        for index, copy in zip(changed, copies, strict=True):
            new_hosts[index] = copy

        replaced = table.replaced(dict(zip(changed, copies, strict=True)),
                                  hand_over=data.draw(st.booleans()),
                                  kinds=dict.fromkeys(changed, kind))
        fresh = HostTable(new_hosts)
        for key, (_array, builder) in dict(replaced._columns).items():
            _same_column(replaced, fresh, key, builder)
        assert (_run_plugins(conf, replaced, spec_dict)
                == _run_plugins(conf, fresh, spec_dict))


# Values equal across types (1 == 1.0 == True) that a capability matches
# differently ("1", "1.0", "True"), and unhashable look-alikes.
LOOK_ALIKES = (1, 1.0, True, "1", 0, 0.0, -0.0, False, None, "", 8, 8.0,
               [1], [1.0], [True], ["1"], {"a": 1}, {"a": True},
               {"a": 1.0}, frozenset({1}), frozenset({1.0}))

code_values = st.sampled_from(LOOK_ALIKES) | json_values


@PROPERTY
@given(values=st.lists(code_values, max_size=8),
       replacements=st.dictionaries(st.integers(0, 7), code_values))
def test_codes_map_equal_values_consistently(values, replacements):
    hosts = [hm.HostState(node_id=i, uuid=str(i), host=f"h{i:02d}",
                          nodename=f"h{i:02d}", cpu_info={"v": value})
             for i, value in enumerate(values)]

    def value_of(host):
        return host.cpu_info["v"]

    def check(table):
        codes, interned = table.codes("v", value_of)
        assert codes.dtype == np.intp and codes.shape == (len(table),)
        seen = [value_of(host) for host in table.hosts]
        for i, value in enumerate(seen):
            # The code stands for an equal value of the same type ...
            assert type(interned[codes[i]]) is type(value)
            assert interned[codes[i]] == value
            for j, other in enumerate(seen):
                # ... and one value (by type and repr), one code.
                if (type(value), repr(value)) == (type(other),
                                                  repr(other)):
                    assert codes[i] == codes[j]
                if codes[i] == codes[j]:
                    assert value == other

    table = HostTable(hosts)
    check(table)
    rows = {}
    for index, value in replacements.items():
        if index < len(hosts):
            copy, = hm.snapshot([hosts[index]])
            copy.cpu_info = {"v": value}
            rows[index] = copy
    replaced = table.replaced(rows)
    check(replaced)
    # Numbers already given keep their meaning in the next table.
    old_codes, _values = table.codes("v", value_of)
    new_codes, _values = replaced.codes("v", value_of)
    for index in range(len(hosts)):
        if index not in rows:
            assert new_codes[index] == old_codes[index]
