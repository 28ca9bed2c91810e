"""The row as the host cache keeps it: its JSON columns' keys, and the
description texts its decoding holds."""

import json

from hypothesis import given
from hypothesis import strategies as st

from scheduler.db.host_queries import NodeRow
from scheduler.hosts.cache import decode
from scheduler.hosts.cache import report_columns
from scheduler.hosts.cache.build import kept_row
from scheduler.hosts.cache.build import new_entry
from scheduler.hosts.cache.build import reusable_decoding

STAMP = "2026-01-05T12:00:{:02d}Z"
_descriptions = st.sampled_from([("{}", "[]"), ('{"arch": "x86_64"}', "[]"),
                                 ("{}", '["net1"]'), ("[", "[]")])
_instances = st.sampled_from([None, '[{"name": "instance.cpu.percent", '
                              '"instance": "u1", "value": 5.0, '
                              '"timestamp": "2026-01-05T12:00:00Z"}]'])


def _row(second: int, cpu: float, description: tuple[str, str],
         instances: str | None) -> NodeRow:
    fields = dict.fromkeys(NodeRow._fields)
    fields.update(
        id=1, uuid="u", host="h", hypervisor_hostname="h", vcpus=16,
        memory_mb=1024, local_gb=10,
        # Copies, as each read of the database makes (but of one
        # character: Python shares those).
        cpu_info="".join(description[0]), networks="".join(description[1]),
        instance_metrics=instances, metrics=json.dumps([
            {"name": "cpu.percent", "value": cpu,
             "timestamp": STAMP.format(second), "source": "libvirt"}]))
    return NodeRow(**fields)


@given(st.lists(st.tuples(st.floats(0, 100), _descriptions, _instances),
                min_size=1, max_size=5))
def test_a_kept_row_holds_its_decodings_texts_and_keys(reports):
    """A row kept with its decoding (a refresh's changed rows, reports
    read as such included) equals the row kept from the row alone, and
    holds the decoding's own description texts, not the read's copies."""
    previous = None
    for second, (cpu, description, instances) in enumerate(reports):
        row = _row(second, cpu, description, instances)
        decoded = decode.changed(row, previous, 3600.0, 0.0,
                                 report_columns.columns(row.metrics))
        kept = kept_row(row, decoded)
        assert kept == kept_row(row)
        assert kept.cpu_info is decoded.cpu_info_text
        assert kept.networks is decoded.networks_text
        entry = new_entry((None, decoded, kept, (), (1.0, 1.0, 1.0)))
        assert reusable_decoding(entry, kept_row(row)) is decoded
        changed = kept_row(row._replace(networks='["other"]'))
        assert reusable_decoding(entry, changed) is None
        previous = decoded
