"""``kafka-consumer-groups`` output saved to a file, read as positions (snapshot/export.py). The samples are
what Apache Kafka 4.1.1's tool printed on a cluster with one group holding a member (``busy``)."""

from __future__ import annotations

import io

import pytest
from offset_restore.errors import BadInputError
from offset_restore.snapshot import export as export_module
from offset_restore.snapshot.export import Export, parse_export


def test_both_shapes_and_quoted_names_are_read() -> None:
    many = parse_export(io.StringIO('g1,orders,0,15\n"g,2",orders,1,7\n\n'), group=None, source="e.csv").commits
    assert [(c.group, c.topic, c.partition, c.offset) for c in many] == [
        ("g1", "orders", 0, 15),
        ("g,2", "orders", 1, 7),
    ]
    one = parse_export(io.StringIO("orders,2,40\n"), group="g9", source="e.csv").commits
    assert [(c.group, c.topic, c.partition, c.offset) for c in one] == [("g9", "orders", 2, 40)]


EXPORTED = (
    "\nError: Assignments can only be reset if the group 'busy' is inactive, but the current state is Stable.\n"
    '"a-very-long-group-name-over-fifteen",orders,1,7\n"idle g",orders,0,12\n"idle g",orders,1,30\n\n'
)
_HEAD = "TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID"
DESCRIBED = (
    f"\nGROUP                               {_HEAD}     HOST            CLIENT-ID\n"
    "a-very-long-group-name-over-fifteen orders          1          7               30              23     "
    "         -               -               -\n\n"
    f"GROUP           {_HEAD}                                              HOST            CLIENT-ID\n"
    "busy            orders          0          5               30              25              kafka-python-3.0.12"
    "-ebcaa31a-36f9-4c14-bc09-5f9d79a435bb /127.0.0.1      kafka-python-3.0.12\n"
    "busy            orders          1          -               30              -               kafka-python-3.0.12"
    "-ebcaa31a-36f9-4c14-bc09-5f9d79a435bb /127.0.0.1      kafka-python-3.0.12\n\n"
    f"GROUP           {_HEAD}     HOST            CLIENT-ID\n"
    "idle g          orders          0          12              30              18              -               -"
    "               -\n"
    "idle g          orders          1          30              30              0               -               -"
    "               -\n"
)
IDLE = [
    ("a-very-long-group-name-over-fifteen", "orders", 1, 7),
    ("idle g", "orders", 0, 12),
    ("idle g", "orders", 1, 30),
]


def positions(export: Export) -> list[tuple[str, str, int, int]]:
    return sorted((c.group, c.topic, c.partition, c.offset) for c in export.commits)


def test_the_export_of_a_busy_cluster_is_read_and_the_groups_it_left_out_named() -> None:
    export = parse_export(io.StringIO(EXPORTED), group=None, source="e.csv")
    assert positions(export) == IDLE and not export.described
    assert export.left_out == ["busy (Stable: it has members)"]


def test_describe_output_holds_the_groups_with_members_too() -> None:
    export = parse_export(io.StringIO(DESCRIBED), group=None, source="d.txt")
    assert positions(export) == sorted([*IDLE, ("busy", "orders", 0, 5)]) and export.described
    assert export.without_offset == 1 and export.left_out == []


def test_describe_output_with_the_tools_stderr_mixed_in_reads_the_same() -> None:
    chatter = "Consumer group 'idle g' has no active members.\n\nWarning: Consumer group 'x' is rebalancing.\n"
    mixed = (
        "\n"
        + chatter
        + DESCRIBED.replace("busy            orders          1", chatter + "busy            orders          1")
    )
    export = parse_export(io.StringIO(mixed), group=None, source="d.txt")
    assert positions(export) == sorted([*IDLE, ("busy", "orders", 0, 5)]) and export.left_out == []


def test_a_group_named_like_the_tools_errors_is_a_group_inside_a_table() -> None:
    named = DESCRIBED.replace("idle g         ", "Error: it's me ")
    export = parse_export(io.StringIO(named), group=None, source="d.txt")
    assert ("Error: it's me", "orders", 1, 30) in positions(export)


@pytest.mark.parametrize(
    ("text", "group", "message"),
    [
        ("orders,0,1\n", None, "e.csv line 1 has 3 columns .* name the group with --export-group"),
        ("g,orders,0,1\n", "g", "e.csv line 1 has 4 columns .* leave out --export-group"),
        ("g,orders,0,1\nWarning: something else\n", None, "e.csv line 2 is not"),
        (
            "\nError: Assignments can only be reset if the group 'busy' is inactive, but the current state is "
            "Stable.\n",
            None,
            r"e.csv holds no offsets \(the tool left out: busy \(Stable: it has members\)\)",
        ),
        (DESCRIBED, "g", "--describe output, which names its groups: leave out --export-group"),
        (DESCRIBED + "busy,orders,0,5\n", None, "line 12 is not a row of its --describe table"),
        (
            DESCRIBED.replace("idle g          orders          0", "idle g          orders          x"),
            None,
            "line 10: partition 'x' is not a number",
        ),
        (
            DESCRIBED.replace("idle g          orders          0          12", "idle g          orders"),
            None,
            "line 10 is not a row of its --describe table",
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


@pytest.mark.parametrize("text", [EXPORTED, DESCRIBED], ids=["csv", "describe"])
def test_either_form_past_the_line_bound_is_refused(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_module, "MAX_LINES", 3)
    with pytest.raises(BadInputError, match="holds more than 3 lines: not an export"):
        parse_export(io.StringIO(text), group=None, source="e.csv")
