"""``kafka.calls.pipelined``: requests sent with a sliding window, answers kept in order, and each answer read
as it arrives while later requests are still out (a fetch decodes one response while the broker sends the next)."""

from __future__ import annotations

import asyncio
from typing import Any

from offset_restore.kafka.calls import IN_FLIGHT, pipelined


def test_each_answer_is_read_as_it_arrives_in_order_with_the_later_ones_still_out() -> None:
    count = IN_FLIGHT + 5

    async def scenario() -> tuple[list[tuple[Any, Any]], list[tuple[int, int]], int]:
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[str]] = []
        most = [0]

        def send(node: int, request: int) -> asyncio.Future[str]:
            futures.append(loop.create_future())
            most[0] = max(most[0], sum(not f.done() for f in futures))
            return futures[-1]

        async def broker() -> None:  # answers the requests in order, one at a time, as a broker does
            for i in range(count):
                while len(futures) <= i:
                    await asyncio.sleep(0)
                futures[i].set_result(f"response {i}")
                for _ in range(3):
                    await asyncio.sleep(0)

        reads: list[tuple[int, int]] = []  # (request read, requests sent and not answered when it was read)

        def read(tag: int, response: str) -> str:
            reads.append((tag, sum(not f.done() for f in futures)))
            return response.upper()

        answering = asyncio.create_task(broker())
        answers = await pipelined([(i, 0, i) for i in range(count)], send, read=read)
        await answering
        return answers, reads, most[0]

    answers, reads, most = asyncio.run(scenario())
    assert answers == [(i, f"RESPONSE {i}") for i in range(count)]  # in order, as read
    assert [tag for tag, _ in reads] == list(range(count))
    assert most == IN_FLIGHT  # never more out at once
    assert reads[0][1] > 0  # the first answer was read while later requests were still out


def test_without_a_reader_the_responses_are_kept_as_they_came() -> None:
    async def scenario() -> list[tuple[Any, Any]]:
        loop = asyncio.get_running_loop()

        def send(node: int, request: str) -> asyncio.Future[str]:
            future: asyncio.Future[str] = loop.create_future()
            loop.call_soon(future.set_result, request * 2)
            return future

        return await pipelined([("a", 1, "x"), ("b", 2, "y")], send)

    assert asyncio.run(scenario()) == [("a", "xx"), ("b", "yy")]
