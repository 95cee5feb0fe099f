"""Static members in the wait (apply/waiting.py): named with what keeps them, removed only when asked and
then each once. The target here is a fake: what is tested is which members are asked to leave, and when."""

from __future__ import annotations

from collections.abc import Sequence

from offset_restore.apply.waiting import members_text, remove_static_members, static_hint
from offset_restore.errors import ClusterError
from offset_restore.kafka.model import GroupInfo


class Target:
    """Records each removal asked; refuses the instance ids in ``refuse``."""

    def __init__(self, refuse: Sequence[str] = ()) -> None:
        self.asked: list[tuple[str, tuple[str, ...]]] = []
        self.refuse = set(refuse)

    def remove_static_members(self, group: str, ids: Sequence[str], reason: str) -> dict[str, str | None]:
        assert reason == "offset-restore --remove-static-members"
        if group == "kip848":
            raise ClusterError("removing static members failed: UnsupportedVersionError")
        self.asked.append((group, tuple(ids)))
        return {i: ("UnknownMemberIdError" if i in self.refuse else None) for i in ids}


def group(name: str, *static: str, clients: int = 1) -> GroupInfo:
    return GroupInfo(name, "Stable", "consumer", clients, None, ("app from /10.0.0.5",) * clients, static)


def test_static_members_are_named_with_what_keeps_them() -> None:
    text = members_text(group("orders", "pod-1", "pod-2", "pod-3", "pod-4", clients=4))
    assert "static, group.instance.id pod-1, pod-2, pod-3 and 1 more: kept after their consumers stop" in text
    assert "session timeout they joined with ends (45 s by default)" in text
    assert "static" not in members_text(group("plain"))


def test_the_hint_appears_only_where_a_group_has_static_members() -> None:
    assert static_hint({"a": group("a")}) == ""
    assert (
        static_hint({"a": group("a"), "b": group("b", "pod-1")}) == "; --remove-static-members removes static members"
    )


def test_each_static_member_is_removed_once_and_a_refusal_is_said() -> None:
    target = Target(refuse=["pod-2"])
    active = {"orders": group("orders", "pod-1", "pod-2"), "plain": group("plain")}
    first = remove_static_members(target, active, [])  # type: ignore[arg-type]
    assert first == ["orders: pod-1", "orders: pod-2 (refused: UnknownMemberIdError)"]
    assert target.asked == [("orders", ("pod-1", "pod-2"))]
    # pod-1 still runs and joined again, pod-2 was refused and is still there, pod-9 is new: only pod-9 is asked.
    rejoined = {"orders": group("orders", "pod-1", "pod-2", "pod-9")}
    assert remove_static_members(target, rejoined, first) == ["orders: pod-9"]  # type: ignore[arg-type]
    assert target.asked[-1] == ("orders", ("pod-9",))


def test_a_group_that_refuses_the_request_is_said_and_waited_out() -> None:
    said = remove_static_members(Target(), {"kip848": group("kip848", "pod-1")}, [])  # type: ignore[arg-type]
    assert said == ["kip848: pod-1 (refused: removing static members failed: UnsupportedVersionError)"]
