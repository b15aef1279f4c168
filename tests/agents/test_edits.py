"""SEARCH/REPLACE blocks and whole files: parsed exactly, applied only inside EVOLVE blocks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.agents.edits import Edit, EditError, apply_edits, evolve_regions, parse_answer

PROGRAM = ("import math\n\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"
           "\nprint(f(2))\n")


def block(search: str, replace: str, path: str | None = "prog.py") -> str:
    head = f"{path}\n" if path else ""
    return f"{head}<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def apply(answer: str, texts: dict[str, str] | None = None, fmt: str = "diff") -> dict[str, str]:
    return apply_edits(texts or {"prog.py": PROGRAM}, parse_answer(answer, fmt), fmt)  # type: ignore[arg-type]


def test_a_block_inside_the_evolve_region_is_applied_exactly() -> None:
    answer = "PLAN: square it\n\n" + block("    return x", "    return x * x")
    assert apply(answer) == {"prog.py": PROGRAM.replace("return x\n", "return x * x\n")}


def test_blocks_apply_in_order_and_may_sit_in_fences() -> None:
    answer = ("```python\n" + block("    return x", "    return x + 1") + "```\n\n"
              "```\n" + block("    return x + 1", "    y = x + 1\n    return y") + "```\n")
    out = apply(answer)["prog.py"]
    assert "    y = x + 1\n    return y\n# EVOLVE-BLOCK-END" in out


def test_the_only_file_may_go_unnamed_and_paths_may_be_decorated() -> None:
    assert apply(block("    return x", "    return 2", None))
    assert apply("**`./prog.py`**\n" + block("    return x", "    return 2", None))
    assert apply("File: prog.py\n" + block("    return x", "    return 2", None))


@pytest.mark.parametrize(("answer", "why"), [
    ("I think the code is fine as it is.", "holds no SEARCH/REPLACE block"),
    ("<<<<<<< SEARCH\n    return x\n>>>>>>> REPLACE\n", "has no ======= line"),
    ("<<<<<<< SEARCH\n    return x\n=======\n    return 2\n", "has no >>>>>>> REPLACE"),
    ("=======\n    return 2\n>>>>>>> REPLACE\n", "has no <<<<<<< SEARCH line before it"),
    ("<<<<<<< SEARCH\n=======\n    return 2\n>>>>>>> REPLACE\n", "empty SEARCH part"),
    ("<<<<<<< SEARCH\n    a\n<<<<<<< SEARCH\n    b\n=======\nc\n>>>>>>> REPLACE\n",
     "has no ======= line"),
])
def test_broken_blocks_are_refused_with_the_reason(answer: str, why: str) -> None:
    with pytest.raises(EditError, match=why):
        parse_answer(answer, "diff")


@pytest.mark.parametrize(("answer", "why"), [
    (block("    return y", "    return 2"), "SEARCH text is not in the file"),
    (block("  return x", "    return 2"), "SEARCH text is not in the file"),
    (block("import math", "import os"), "outside the EVOLVE-BLOCK regions"),
    (block("# EVOLVE-BLOCK-END", ""), "outside the EVOLVE-BLOCK regions"),
    (block("    return x\n# EVOLVE-BLOCK-END\n", "    return 1"), "outside the EVOLVE-BLOCK"),
    (block("    return x", "    return x\n# EVOLVE-BLOCK-END"), "holds an EVOLVE-BLOCK marker"),
    (block("    return x", "    return 1", "other.py"), "names other.py, which is not a file"),
])
def test_edits_that_miss_or_leave_the_evolve_region_are_refused(answer: str, why: str) -> None:
    with pytest.raises(EditError, match=why):
        apply(answer)


def test_an_ambiguous_search_is_refused_and_one_match_inside_wins() -> None:
    text = "x = 1\n# EVOLVE-BLOCK-START\nx = 1\nx = 1\n# EVOLVE-BLOCK-END\n"
    with pytest.raises(EditError, match="occurs 2 times"):
        apply(block("x = 1", "x = 2"), {"prog.py": text})
    text = "x = 1\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"
    assert apply(block("x = 1", "x = 2"), {"prog.py": text})["prog.py"] == (
        "x = 1\n# EVOLVE-BLOCK-START\nx = 2\n# EVOLVE-BLOCK-END\n")


def test_a_file_without_markers_may_change_anywhere_and_several_files_need_names() -> None:
    texts = {"a.py": "a = 1\n", "b.py": "b = 1\n"}
    assert apply(block("b = 1", "b = 2", "b.py"), texts) == {"b.py": "b = 2\n"}
    with pytest.raises(EditError, match="names no file"):
        apply(block("a = 1", "a = 2", None), texts)


def test_full_rewrites_keep_everything_outside_the_regions() -> None:
    new = PROGRAM.replace("return x\n", "return abs(x)\n")
    assert apply(f"PLAN: abs\nprog.py\n```python\n{new}```\n", fmt="full") == {"prog.py": new}
    changed = new.replace("import math", "import os")
    with pytest.raises(EditError, match="changes text outside its EVOLVE-BLOCK regions"):
        apply(f"```python\n{changed}```\n", fmt="full")
    with pytest.raises(EditError, match="no code block"):
        apply("nothing here", fmt="full")
    with pytest.raises(EditError, match="never closed"):
        apply("```python\nprint(1)\n", fmt="full")
    plain = {"a.txt": "hello\n"}
    assert apply("```\nbye\n```", plain, "full") == {"a.txt": "bye\n"}


def test_regions_of_a_file() -> None:
    lines = ["a", "# EVOLVE-BLOCK-START", "b", "# EVOLVE-BLOCK-END", "c",
             "# EVOLVE-BLOCK-START", "d"]
    assert evolve_regions(lines) == [(2, 3), (6, 7)]
    assert evolve_regions(["a", "b"]) is None


# -- properties ----------------------------------------------------------------------------

_line = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<=>"),
                max_size=12).filter(lambda s: "EVOLVE" not in s and s.strip() == s)
_lines = st.lists(_line, min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(before=_lines, region=_lines, after=_lines, data=st.data())
def test_a_unique_window_of_the_region_is_replaced_and_nothing_else(
        before: list[str], region: list[str], after: list[str], data: st.DataObject) -> None:
    lines = [*before, "# EVOLVE-BLOCK-START", *region, "# EVOLVE-BLOCK-END", *after]
    text = "\n".join(lines) + "\n"
    start = data.draw(st.integers(0, len(region) - 1))
    end = data.draw(st.integers(start + 1, len(region)))
    search = region[start:end]
    replace = data.draw(_lines)
    answer = block("\n".join(search), "\n".join(replace))
    try:
        out = apply(answer, {"prog.py": text})
    except EditError as exc:
        # refused only when the window is not unique inside the region (or changes nothing)
        occurrences = sum(region[i:i + len(search)] == search
                          for i in range(len(region) - len(search) + 1))
        assert occurrences > 1 or "not in the file" in str(exc), exc
        return
    new = out.get("prog.py", text).split("\n")
    expected = [*before, "# EVOLVE-BLOCK-START", *region[:start], *replace, *region[end:],
                "# EVOLVE-BLOCK-END", *after, ""]
    assert new == expected


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=400), fmt=st.sampled_from(["diff", "full"]))
def test_any_answer_is_edits_or_a_reason_and_never_touches_outside(text: str, fmt: str) -> None:
    try:
        edits = parse_answer(text, fmt)  # type: ignore[arg-type]
    except EditError as exc:
        assert str(exc)
        return
    assert edits and all(isinstance(e, Edit) for e in edits)
    try:
        out = apply_edits({"prog.py": PROGRAM}, edits, fmt)  # type: ignore[arg-type]
    except EditError:
        return
    if "prog.py" in out:
        old, new = PROGRAM.split("\n"), out["prog.py"].split("\n")
        assert new[:3] == old[:3] and new[-4:] == old[-4:]


@settings(max_examples=100, deadline=None)
@given(search=_lines, replace=st.lists(_line, max_size=8), path=st.sampled_from(
    ["prog.py", "src/x.py", None]))
def test_parsing_a_rendered_block_gives_it_back(search: list[str], replace: list[str],
                                                path: str | None) -> None:
    answer = f"{path}\n" if path else ""
    answer += "<<<<<<< SEARCH\n" + "".join(f"{s}\n" for s in search) + "=======\n"
    answer += "".join(f"{r}\n" for r in replace) + ">>>>>>> REPLACE\n"
    (edit,) = parse_answer(answer, "diff")
    assert (edit.path, edit.search, edit.replace) == (path, tuple(search), tuple(replace))
