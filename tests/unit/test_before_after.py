"""The before -> after table (bench/before_after.py) reads bench.user_shapes' table as it is written."""

from __future__ import annotations

from bench.before_after import compared, parse_table

HEADER = (
    "| shape | phase | wall | client CPU | MB down | Fetch requests | MB client | per position: ms, KB down, batches "
    "| time vs scan | CPU vs scan | bytes vs scan | Fetch bytes vs one pass | notes |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
)


def table(plan: str, scan: str) -> str:
    return HEADER + (
        f"| dense: 200 x 5,000 records, 400 groups | plan | {plan} | 11.89 s | 146.8 | 11 | 146.8 | 0.15 ms | 0.70x | "
        "0.72x | 1.029x | 1.029x | exact |\n"
        f"|  | operator scan (one partition at a time) | {scan} | 16.46 s | 142.7 | 200 | 139.4 | 0.21 ms | 1.00x | "
        "1.00x | 1.000x | 1.000x | |\n"
        "| gzip: 20 x 100,000 records | plan | 7.4 s | 7.0 s | 94.0 | 9 | 94.0 | 0.1 ms | 0.31x | 0.30x | 0.986x | "
        "0.99x | |\n"
    )


def test_each_row_is_read_under_its_shape_and_phase() -> None:
    memory = "\n## Memory\n\n| shape | phase | peak |\n|---|---|---|\n| gzip | plan | 500 MB |\n"
    rows = parse_table("# a title\n\nCommand: x\n\n" + table("12.07 s", "17.16 s") + memory)
    assert list(rows) == [("dense", "plan"), ("dense", "operator scan (one partition at a time)"), ("gzip", "plan")]
    assert rows[("dense", "plan")]["time vs scan"] == "0.70x"
    assert rows[("dense", "plan")]["bytes vs scan"] == "1.029x"
    assert rows[("gzip", "plan")]["wall"] == "7.4 s"


def test_the_comparison_shows_both_sides_of_the_phases_both_measured() -> None:
    before = parse_table(table("12.07 s", "17.16 s"))
    after = {k: v for k, v in parse_table(table("9.00 s", "17.00 s")).items() if k[0] == "dense"}
    lines = compared(before, after)
    assert len(lines) == 4  # header, rule, the two dense rows; gzip was measured on one side only
    assert "| dense | plan | 0.70x -> 0.70x | 0.72x -> 0.72x | 1.029x -> 1.029x | 12.07 s -> 9.00 s |" in lines


def test_a_column_an_older_table_lacks_shows_as_a_dash() -> None:
    """A revision before the CPU column (its rows parse without it): its side of that column is '-'."""
    before = {
        k: {c: v for c, v in row.items() if c != "CPU vs scan"}
        for k, row in parse_table(table("12.07 s", "17.16 s")).items()
    }
    lines = compared(before, parse_table(table("9.00 s", "17.00 s")))
    assert "| dense | plan | 0.70x -> 0.70x | - -> 0.72x | 1.029x -> 1.029x | 12.07 s -> 9.00 s |" in lines
