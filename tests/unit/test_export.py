"""``kafka-consumer-groups --export`` files read as positions (snapshot/export.py)."""

from __future__ import annotations

import io

import pytest
from offset_restore.errors import BadInputError
from offset_restore.snapshot.export import parse_export


def test_both_shapes_and_quoted_names_are_read() -> None:
    many = parse_export(io.StringIO('g1,orders,0,15\n"g,2",orders,1,7\n\n'), group=None, source="e.csv")
    assert [(c.group, c.topic, c.partition, c.offset) for c in many] == [
        ("g1", "orders", 0, 15),
        ("g,2", "orders", 1, 7),
    ]
    one = parse_export(io.StringIO("orders,2,40\n"), group="g9", source="e.csv")
    assert [(c.group, c.topic, c.partition, c.offset) for c in one] == [("g9", "orders", 2, 40)]


@pytest.mark.parametrize(
    ("text", "group", "message"),
    [
        ("orders,0,1\n", None, "e.csv line 1 has 3 columns .* name the group with --export-group"),
        ("g,orders,0,1\n", "g", "e.csv line 1 has 4 columns .* leave out --export-group"),
        (
            "g,orders,0,1\n\nError: Assignments can only be reset if the group 'g' is inactive\n",
            None,
            "e.csv line 3 is not",
        ),
        ("g,orders,x,1\n", None, "e.csv line 1: partition 'x' is not a number"),
        ("g,orders,\u00b2,1\n", None, "e.csv line 1: partition '\u00b2' is not a number"),
        ("g,orders,2147483648,1\n", None, "e.csv line 1: partition '2147483648' is out of range"),
        ("g,orders,0,-1\n", None, "e.csv line 1: offset '-1' is not a number at or above 0"),
        ("g,orders,0,1\ng,orders,0,2\n", None, "e.csv line 2: g orders/0 twice"),
        ("\n", None, "e.csv holds no offsets"),
        (",orders,0,1\n", None, "e.csv line 1 has an empty group or topic"),
    ],
)
def test_anything_else_is_refused_with_the_line_named(text: str, group: str | None, message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        parse_export(io.StringIO(text), group=group, source="e.csv")
