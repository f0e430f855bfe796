"""schemas.guard finds the first unsafe part of a value and names where it is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schemas.guard import MAX_DEPTH, Problem, unsafe


def test_names_the_path_of_each_kind_of_problem() -> None:
    nul = "text must not contain NUL or other control characters"
    assert unsafe({"a": [1, {"b": "x\x00y"}]}) == Problem("a[1].b", nul)
    assert unsafe({"n": 2**64}) == Problem("n", "integer outside the 64-bit range")
    assert unsafe({"s": "\ud800"}) is not None and unsafe({"s": "\ud800"}).path == "s"  # type: ignore[union-attr]
    assert unsafe({"k\x01": 1}) == Problem("k\x01", f"key: {nul}")
    deep: object = "leaf"
    for _ in range(MAX_DEPTH + 1):
        deep = {"d": deep}
    problem = unsafe(deep)
    assert problem is not None and "nested deeper" in problem.reason
    assert unsafe({"labels": {str(i): "v" for i in range(10_001)}}) == Problem("labels", "more than 10000 items")


def test_ordinary_text_passes() -> None:
    value = {"summary": "数据库连接池耗尽\n\tline two", "n": -(2**63), "f": 1.5, "ok": True, "none": None}
    assert unsafe(value) is None


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs"))), lambda kids: st.lists(kids, max_size=4)
    | st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=8), kids,
                      max_size=4), max_leaves=20))
def test_json_without_control_characters_is_safe(value: object) -> None:
    assert unsafe(value) is None
