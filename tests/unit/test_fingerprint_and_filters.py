from __future__ import annotations

import pytest
from offset_restore.errors import BadInputError
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS, NameFilter
from offset_restore.snapshot.fingerprint import fingerprint


def test_published_vector() -> None:
    """docs/cli.md's worked example; any tool that follows the definition gets this value."""
    assert fingerprint(b"order-42", b'{"amount":10}', [("trace", b"abc")]) == "b963a9caeb102ea0c7cc87fb7b919325"


def test_vectors_of_null_and_empty_fields_and_a_header_without_a_value() -> None:
    """Values of the definition as first implemented (one hash update a field): the joined form gives them."""
    headers = [("h", None), ("x-source-offset", b"1"), ("x-source-partition", b"0"), ("é", b"")]
    assert fingerprint(None, b"", headers) == "e6c395cc8c457d7a6a4daffdd3bd5ab6"
    assert fingerprint(b"", None) == "8af5bb32e48fb1b46c61a7328c11ba67"


def test_the_restore_offset_header_is_left_out_and_nothing_else() -> None:
    base = fingerprint(b"k", b"v", [("trace", b"1")])
    assert fingerprint(b"k", b"v", [("trace", b"1"), ("x-source-offset", b"\x00" * 8)]) == base
    assert fingerprint(b"k", b"v", [("x-source-offset", b"9"), ("trace", b"1")]) == base
    assert fingerprint(b"k", b"v", [("trace", b"2")]) != base
    assert fingerprint(b"k", b"v", [("other", b"1")], exclude_header="other") == fingerprint(b"k", b"v")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((b"ab", b"c"), (b"a", b"bc")),  # field boundaries count
        ((None, b"v"), (b"", b"v")),  # null differs from empty
        ((b"k", None), (b"k", b"")),
    ],
)
def test_fields_cannot_be_confused(a: tuple[bytes | None, bytes | None], b: tuple[bytes | None, bytes | None]) -> None:
    assert fingerprint(*a) != fingerprint(*b)


def test_header_order_and_boundaries_count() -> None:
    assert fingerprint(b"k", b"v", [("a", b"1"), ("b", b"2")]) != fingerprint(b"k", b"v", [("b", b"2"), ("a", b"1")])
    assert fingerprint(b"k", b"v", [("ab", b"c")]) != fingerprint(b"k", b"v", [("a", b"bc")])


def test_filters_match_whole_names() -> None:
    f = NameFilter.parse("orders-.*", DEFAULT_EXCLUDE_GROUPS, "groups")
    assert f("orders-eu") and not f("legacy-orders-eu") and not f("orders")
    default = NameFilter.parse(None, DEFAULT_EXCLUDE_GROUPS, "groups")
    assert default("billing") and not default("console-consumer-1234") and not default("__internal")


def test_a_bad_regex_names_the_option_and_the_problem() -> None:
    with pytest.raises(BadInputError, match=r"invalid --exclude-groups regex 'a\(': missing \)"):
        NameFilter.parse(None, "a(", "groups")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bootstrap_servers": "broker"}, "is not host:port"),
        ({"bootstrap_servers": "b:9092", "sasl_mechanism": "AWS_MSK_IAM"}, "needs --security-protocol SASL_SSL"),
        ({"bootstrap_servers": "b:9092", "security_protocol": "SASL_SSL"}, "needs --sasl-mechanism"),
        (
            {"bootstrap_servers": "b:9092", "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512"},
            "needs a username and a password",
        ),
    ],
)
def test_connection_settings_refuse_incomplete_auth(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ConnectionSettings.model_validate(kwargs)


def test_the_password_never_prints() -> None:
    settings = ConnectionSettings(
        bootstrap_servers="b:9096",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="u",
        sasl_password="hunter2-secret",  # type: ignore[arg-type]
    )
    assert "hunter2-secret" not in repr(settings) and "hunter2-secret" not in settings.model_dump_json()


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)+$", r"(.*a){20}", r"(\w+\s?)*$", r"(a*)*b"])
def test_patterns_that_backtrack_catastrophically_match_in_linear_time(pattern: str) -> None:
    """With a backtracking engine each of these takes years on a 250-character name; RE2 answers at
    once (a hang here would show as the test timeout, not as a timing assertion)."""
    f = NameFilter.parse(pattern, None, "groups")
    assert not f("a" * 5000 + "!")


@pytest.mark.parametrize(("pattern", "reason"), [(r"(a)\1", "invalid escape"), (r"(?=a)b", "perl operator")])
def test_patterns_re2_cannot_run_are_refused_with_its_reason(pattern: str, reason: str) -> None:
    with pytest.raises(BadInputError, match=f"invalid --groups regex .*{reason}.*RE2 syntax"):
        NameFilter.parse(pattern, None, "groups")


def test_an_overlong_pattern_is_refused() -> None:
    with pytest.raises(BadInputError, match="at most 4096"):
        NameFilter.parse("a" * 5000, None, "groups")
