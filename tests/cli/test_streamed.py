"""The streamed JSON writers: the list in an object and the bare list share one item writer."""

from __future__ import annotations

import json

import pytest

from dreamrsi.cli._shared import stream_json, stream_list

ITEMS = [[], [1], [{"a": 1}, "x", None], list(range(2_345))]


@pytest.mark.parametrize("items", ITEMS, ids=len)
def test_a_streamed_list_reads_back_one_item_a_line(
    items: list[object], capsys: pytest.CaptureFixture[str]
) -> None:
    stream_list(iter(items))
    text = capsys.readouterr().out
    assert json.loads(text) == items
    assert text == ("[]\n" if not items else
                    "[\n" + ",\n".join(f"  {json.dumps(i)}" for i in items) + "\n]\n")


@pytest.mark.parametrize("items", ITEMS, ids=len)
@pytest.mark.parametrize("head", [{}, {"run": "r1", "nodes": 2}])
def test_a_streamed_object_reads_back_as_print_json_writes_it(
    head: dict[str, object], items: list[object], capsys: pytest.CaptureFixture[str]
) -> None:
    stream_json(head, "rows", iter(items))
    text = capsys.readouterr().out
    assert json.loads(text) == {**head, "rows": items}
    lines = text.splitlines()
    assert lines[len(head) + 2:len(head) + 2 + len(items)] == [
        f"    {json.dumps(i)}" + ("," if k < len(items) - 1 else "") for k, i in enumerate(items)]
