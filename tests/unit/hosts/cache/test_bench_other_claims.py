"""tools/bench_other_claims.py: another writer's claims are read again
by the measured refreshes, their reports not decoded again."""

import pytest

from tests.fakes import load_tool


def test_each_refresh_reads_the_rows_the_other_writer_claimed_on(
        monkeypatch, tmp_path):
    tool = load_tool(monkeypatch, "bench_other_claims")
    found = tool.measure(f"sqlite:///{tmp_path}/fleet.db", hosts=20,
                         claims=3, rounds=5)
    assert found["rows_fetched"] == 3
    assert found["rows_decoded"] == 0
    assert found["refresh_us"] > 0
    assert found["per_row_us"] == pytest.approx(found["refresh_us"] / 3)
