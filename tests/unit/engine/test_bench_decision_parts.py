"""tools/bench_decision_parts.py: the round trips a decision sends are
counted on every engine it uses, and a bare one is timed."""

import pytest
import sqlalchemy as sa

from tests.fakes import load_tool


@pytest.fixture
def tool(monkeypatch):
    return load_tool(monkeypatch, "bench_decision_parts")


def test_round_trips_counts_statements_and_commits_of_each_engine(tool):
    first, second = (sa.create_engine("sqlite://") for _ in range(2))
    with tool.round_trips([first, second, first]) as sent:
        with first.begin() as connection:  # a statement and a commit
            connection.exec_driver_sql("SELECT 1")
        with second.connect() as connection:  # a statement, a rollback
            connection.exec_driver_sql("SELECT 1")
            connection.rollback()
    assert sent == [4]
    # Listening stops with the block.
    with first.connect() as connection:
        connection.exec_driver_sql("SELECT 1")
    assert sent == [4]


def test_a_bare_round_trip_is_timed_on_the_driver_cursor(tool):
    spent = tool.bare_round_trip_ms(sa.create_engine("sqlite://"),
                                    repeat=50)
    assert 0 < spent < 1000
