"""The histories of a refresh's nodes whose batch of held-back reports is
full are added to in one pass for all (``history.settle_together``,
``history_block.appended_rows_together``), and left as each one's own
pass, or report by report, would leave them: to the last bit."""

from array import array
from unittest import mock

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.hosts import history
from scheduler.hosts import history_block
from tests.unit.hosts.test_history_block import NAMES
from tests.unit.hosts.test_history_block import T0
from tests.unit.hosts.test_history_block import _values
from tests.unit.hosts.test_history_block import assert_indistinguishable

# Mostly the minute every node reports at; now and then not advancing,
# a gap of a window, or a report stamped per plugin.
_steps = st.sampled_from([60.0] * 20 + [0.0, -5.0, 30.0, 600.0, 3600.0])
_skews = st.sampled_from([None] * 6 + [(0.0, 0.5, -1.0)])
_node = st.fixed_dictionaries({
    "offset": st.sampled_from([0.0, 0.0, 0.5, 7.0]),
    "steps": st.lists(_steps, min_size=1, max_size=14),
    "skews": st.lists(_skews, min_size=14, max_size=14),
    "values": st.lists(_values, min_size=42, max_size=42),
    # A node of other metrics, now and then.
    "metrics": st.sampled_from([3] * 5 + [2]),
})


def _rounds(nodes: list[dict], window: float, together: bool) -> list:
    """Every version of each node's history, a refresh a round: each
    node reports once a round, through ``settle_together`` when
    ``together``, else report by report (``_appended_now``)."""
    histories = [[history.EMPTY] for _ in nodes]
    times = [T0 + node["offset"] for node in nodes]
    values = [iter(node["values"]) for node in nodes]
    for step in range(max(len(node["steps"]) for node in nodes)):
        unsettled: list = []
        for index, node in enumerate(nodes):
            if step >= len(node["steps"]):
                continue
            times[index] += node["steps"][step]
            names = NAMES[:node["metrics"]]
            skews = node["skews"][step] or (0.0,) * 3
            when = [times[index] + skew for skew in skews[:len(names)]]
            row = array("d", [float(next(values[index]))
                              for _ in names])
            held = histories[index][-1]
            histories[index].append(
                held.appended_report(names, when, row, window, unsettled)
                if together else held._appended_now(names, when, row,
                                                    window))
        history.settle_together(unsettled)
    return histories


@settings(max_examples=200, deadline=None)
@given(st.lists(_node, min_size=1, max_size=5),
       st.sampled_from([90.0, 180.0, 600.0, 3600.0, float("inf")]))
def test_histories_settled_together_are_the_reports_one_by_one(nodes,
                                                               window):
    # A short batch and a small cap: runs past both within a few rounds.
    with mock.patch.object(history_block, "MAX_REPORTS", 9), \
            mock.patch.object(history, "MAX_REPORTS", 9), \
            mock.patch.object(history, "DEFERRED_REPORTS", 3):
        got = _rounds(nodes, window, together=True)
        want = _rounds(nodes, window, together=False)
        for mine, theirs in zip(got, want, strict=True):
            for version, expected in zip(mine, theirs, strict=True):
                assert_indistinguishable(version, expected)


def _blocks(count: int, rows: int, metrics: int, step: float = 60.0
            ) -> list[array]:
    """``count`` blocks of ``rows`` reports of ``metrics`` each, one time a
    row, a report a minute."""
    blocks = []
    for node in range(count):
        block = history_block.first_row([T0 + node] * metrics,
                                        [float(node)] * metrics)
        for row in range(1, rows):
            block = history_block.appended_row(
                block, 4 * metrics, [T0 + node + step * row] * metrics,
                [float(node + row)] * metrics, 3600.0)
        blocks.append(block)
    return blocks


def test_a_pass_for_all_is_each_ones_pass():
    blocks = _blocks(4, rows=50, metrics=3)
    # Node 2's held reports are per metric: left to its own pass.
    blocks[2] = history_block.appended_row(
        blocks[2][12:], 12, [T0 + 2 + 2950.0, T0 + 2950.5, T0 + 2951.0],
        [1.0, 2.0, 3.0], 3600.0)
    times = [tuple(T0 + node + 60.0 * (50 + report) for report in range(16))
             for node in range(4)]
    # Node 3's reports stop advancing: neither pass takes them.
    times[3] = (*times[3][:8], times[3][7], *times[3][9:])
    rows = [tuple(array("d", [node * 0.5 + report] * 3)
                  for report in range(16)) for node in range(4)]
    got = history_block.appended_rows_together(blocks, 12, times, rows,
                                               3600.0)
    for node in (0, 1):
        want = history_block.appended_rows(blocks[node], 12, times[node],
                                           rows[node], 3600.0)
        assert got[node].tobytes() == want.tobytes()
        # Rows within the newest report's hour: 60 of 66.
        assert len(got[node]) == 60 * 12
    assert got[2] is None
    assert history_block.appended_rows(blocks[2], 12, times[2], rows[2],
                                       3600.0) is not None
    assert got[3] is None
    assert history_block.appended_rows(blocks[3], 12, times[3], rows[3],
                                       3600.0) is None


def test_full_batches_of_one_refresh_are_added_in_one_pass():
    names, window = NAMES[:2], 3600.0
    nodes = [history.EMPTY.appended_report(names, [T0 + node] * 2,
                                           [1.0, 2.0], window)
             for node in range(5)]
    with mock.patch.object(history_block, "appended_rows_together",
                           wraps=history_block.appended_rows_together
                           ) as together, \
            mock.patch.object(history_block, "appended_rows",
                              wraps=history_block.appended_rows) as alone:
        for step in range(1, history.DEFERRED_REPORTS + 2):
            unsettled: list = []
            nodes = [held.appended_report(
                names, [T0 + node + 60.0 * step] * 2,
                array("d", [float(step)] * 2), window, unsettled)
                for node, held in enumerate(nodes)]
            history.settle_together(unsettled)
        # The 17th report of each found its batch full: one pass for the
        # five, none of their own.
        assert together.call_count == 1
        assert len(together.call_args.args[0]) == 5
        assert alone.call_count == 0
        # Each node's newest report still held back, the 16 before added.
        for node, held in enumerate(nodes):
            base = held._deferred[0]
            assert base._deferred is None
            assert base.reports("cpu.percent") == 17
            assert held.reports("cpu.percent") == 18
            assert held.statistic("memory.used", "max", window) == 17.0
            assert held.series("cpu.percent")[0][-1] == T0 + node + 1020.0


def test_a_pass_for_all_stops_at_the_cap_as_each_ones_does():
    with mock.patch.object(history_block, "MAX_REPORTS", 9):
        for rows, fits in ((5, True), (6, False)):
            blocks = _blocks(2, rows=rows, metrics=2)
            times = [tuple(T0 + node + 60.0 * (rows + report)
                           for report in range(4)) for node in range(2)]
            added = [tuple(array("d", [float(report)] * 2)
                           for report in range(4))] * 2
            got = history_block.appended_rows_together(blocks, 8, times,
                                                       added, 3600.0)
            for node in range(2):
                want = history_block.appended_rows(
                    blocks[node], 8, times[node], added[node], 3600.0)
                assert (want is not None) is fits
                assert (got[node] is None if want is None
                        else got[node].tobytes() == want.tobytes())


def _full_batches(count: int, unsettled: list) -> list:
    """``count`` nodes' histories, each with a full batch held back and
    one report more on top of it (the full ones in ``unsettled``)."""
    names, window = NAMES[:2], 3600.0
    nodes = [history.EMPTY.appended_report(names, [T0 + node] * 2,
                                           [1.0, 2.0], window)
             for node in range(count)]
    for step in range(1, history.DEFERRED_REPORTS + 2):
        nodes = [held.appended_report(
            names, [T0 + node + 60.0 * step] * 2,
            array("d", [float(step)] * 2), window,
            unsettled if step > history.DEFERRED_REPORTS else None)
            for node, held in enumerate(nodes)]
    return nodes


def test_a_history_a_reader_settles_meanwhile_is_left_as_it_set_it():
    unsettled: list = []
    nodes = _full_batches(3, unsettled)

    def read_between():
        # Another thread reads the first one after settle_together has
        # grouped it.
        yield from unsettled
        assert unsettled[0].reports("cpu.percent") == 17

    history.settle_together(read_between())
    for node, held in enumerate(nodes):
        assert held.reports("cpu.percent") == 18
        assert held.series("memory.used")[1][-1] == 17.0
        assert held.series("cpu.percent")[0][-2] == T0 + node + 960.0


def test_a_pass_for_all_takes_at_most_its_share_of_histories():
    unsettled: list = []
    nodes = _full_batches(5, unsettled)
    with mock.patch.object(history, "_TOGETHER", 2), \
            mock.patch.object(history_block, "appended_rows_together",
                              wraps=history_block.appended_rows_together
                              ) as together, \
            mock.patch.object(history_block, "appended_rows",
                              wraps=history_block.appended_rows) as alone:
        history.settle_together(unsettled)
    # Two passes of two, and the fifth on its own.
    assert [len(call.args[0]) for call in together.call_args_list] == [2, 2]
    assert alone.call_count == 1
    for held in nodes:
        assert held.reports("cpu.percent") == 18
