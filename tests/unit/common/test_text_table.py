"""The shared text table: padding, the rule under the header, right
alignment, no trailing blanks."""

from scheduler.common import text_table


def test_columns_padded_to_the_widest_cell_without_trailing_blanks():
    assert text_table.render([["host", "weight", "filtered_by"],
                              ["a-long-host", "1.000", ""],
                              ["b", "-", "RamFilter"]]) == (
        "host         weight  filtered_by\n"
        "a-long-host  1.000\n"
        "b            -       RamFilter")


def test_rule_under_the_header_as_wide_as_each_column():
    assert text_table.render([["sel", "host"], ["*", "node-1"]],
                             rule=True) == (
        "sel  host\n"
        "---  ------\n"
        "*    node-1")


def test_header_and_rule_alone_when_there_are_no_rows():
    assert text_table.render([["a", "bb"]], rule=True) == "a  bb\n-  --"


def test_right_aligned_columns():
    assert text_table.render([["case", "p50 ms", "targets"],
                              ["echo", "0.25", "met"],
                              ["select", "12.50", ""]],
                             right=range(1, 2)) == (
        "case    p50 ms  targets\n"
        "echo      0.25  met\n"
        "select   12.50")
