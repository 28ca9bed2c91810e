"""A refresh's reports read into columns at once give what reading them
one by one gives, and are read at once when they look alike."""

import json

from hypothesis import given
from hypothesis import strategies as st

from scheduler.hosts.cache import report_columns

STAMP = "2026-01-05T12:00:00.5Z"
LATER = "2026-01-05T12:01:00Z"


def _entry(name: str, value, stamp: str = STAMP, **more) -> dict:
    return {"name": name, "value": value, "source": "libvirt",
            "timestamp": stamp, **more}


def _report(cpu: float = 12.5, memory: int = 2**34,
            stamp: str = STAMP) -> list[dict]:
    """A report as one agent writes it, of its own values."""
    return [_entry("cpu.percent", cpu, stamp),
            _entry("memory.free", memory, stamp)]


def _as_read(found) -> tuple | None:
    """What a reader can tell apart in ``columns``' result: the metrics
    (names, values and their types, times, sources, in order), the
    values as doubles, and whether instance entries were held."""
    if found is None:
        return None
    metrics, floats, instances = found
    return ([(name, type(metric.value), metric.value, metric.timestamp,
              metric.source) for name, metric in metrics.items()],
            list(floats), instances)


def _one_by_one(texts: list[str]) -> list[tuple | None]:
    return [_as_read(report_columns.columns(text)) for text in texts]


def _at_once(texts: list[str]) -> list[tuple | None]:
    return [_as_read(found)
            for found in report_columns.refresh_columns(texts)]


_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-2**63, max_value=2**64 - 1),
    st.sampled_from([2**53 + 1, 10**400, True, "7"]))
_entries = st.fixed_dictionaries(
    {"name": st.sampled_from(["cpu.percent", "memory.free", ""]),
     "value": _values,
     "timestamp": st.sampled_from([STAMP, LATER, "yesterday"])},
    optional={"source": st.sampled_from(["libvirt", None, 3]),
              "instance": st.sampled_from(["u1", None])})
_texts = st.one_of(
    st.lists(_entries, max_size=3).map(json.dumps),
    st.sampled_from(["not json", "{}", "[1]", "null"]))


@given(st.lists(_texts, max_size=6))
def test_each_report_read_at_once_is_what_reading_it_alone_gives(texts):
    got = _at_once(texts)
    want = _one_by_one(texts)
    assert len(got) == len(texts)
    for found, alone in zip(got, want, strict=True):
        # None: left to be read alone.
        assert found is None or found == alone


@given(st.lists(st.tuples(
    st.floats(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=2**53),
    st.sampled_from([STAMP, LATER])), min_size=1, max_size=8))
def test_reports_of_one_agent_are_all_read_at_once(values):
    texts = [json.dumps(_report(cpu, memory, stamp))
             for cpu, memory, stamp in values]
    got = _at_once(texts)
    assert None not in got
    assert got == _one_by_one(texts)


def test_reports_of_two_kinds_of_agent_are_each_read_at_once():
    other = [_entry("disk.used", 3.5), _entry("cpu.percent", 1.0)]
    texts = [json.dumps(_report(cpu=1.0)), json.dumps(other),
             json.dumps(_report(cpu=2.0)), json.dumps(other)]
    got = _at_once(texts)
    assert None not in got
    assert got == _one_by_one(texts)


def test_an_irregular_report_among_alike_ones_is_read_alone():
    irregular = {
        "an int without an exact double": _report(memory=2**53 + 1),
        "a time of its own per metric": [
            _entry("cpu.percent", 1.0, STAMP),
            _entry("memory.free", 2**34, LATER)],
        "a value of another type": _report(memory=2.5),
    }
    for what, entries in irregular.items():
        texts = [json.dumps(_report(cpu=1.0)), json.dumps(entries),
                 json.dumps(_report(cpu=2.0))]
        got = _at_once(texts)
        assert None not in got, what
        assert got == _one_by_one(texts), what


def test_reports_left_to_decode_are_the_unreadable_and_older_agents():
    # decode reads them: it words what is wrong, and collects an older
    # agent's instance entries for the instance history.
    left = {
        "an instance entry": _report() + [
            _entry("instance.cpu.percent", 5.0, instance="u1")],
        "not a date": _report(stamp="yesterday"),
        "a name twice": _report() + [_entry("cpu.percent", 3.0)],
    }
    for what, entries in left.items():
        texts = [json.dumps(_report(cpu=1.0)), json.dumps(entries),
                 "[{", json.dumps(_report(cpu=2.0))]
        got = _at_once(texts)
        assert got[1] is None and got[2] is None, what
        assert [got[0], got[3]] == _one_by_one([texts[0], texts[3]]), what


def test_a_large_refresh_is_read_a_chunk_at_a_time(monkeypatch):
    monkeypatch.setattr(report_columns, "_CHUNK", 3)
    held_at_once = []
    read_alike = report_columns._read_alike

    def counting(parsed, positions, found):
        held_at_once.append(len(found))
        return read_alike(parsed, positions, found)

    monkeypatch.setattr(report_columns, "_read_alike", counting)
    texts = [json.dumps(_report(cpu=float(cpu))) for cpu in range(8)]
    texts[4] = json.dumps(_report(memory=2**53 + 1))
    got = _at_once(texts)
    assert None not in got
    assert got == _one_by_one(texts)
    assert held_at_once == [3, 3, 2]


def test_a_refresh_parses_each_report_once(count_json):
    texts = [json.dumps(_report(cpu=float(cpu))) for cpu in range(5)]
    texts += [json.dumps(_report(memory=2.5)), json.dumps(
        [_entry("cpu.percent", 1.0, STAMP),
         _entry("memory.free", 2**34, LATER)])]
    report_columns.refresh_columns(texts)
    assert count_json == texts


def test_ints_past_53_bits_keep_their_values_when_read_at_once():
    """Ints of 53 bits have exact doubles; past them only some do."""
    memories = [2**53, -2**53, 2**53 + 1, 2**60, -2**53 - 1]
    for batch in ([2**53, -2**53], [2**53, 2**53 + 1], [5, -2**53 - 1],
                  memories):
        texts = [json.dumps(_report(memory=memory)) for memory in batch]
        got = _at_once(texts)
        assert got == _one_by_one(texts)
        assert [metrics[1][2] for metrics, _, _ in got] == batch
