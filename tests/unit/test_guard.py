"""schemas.guard finds the first unsafe part of a value and names where it is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schemas.guard import CONTROL, MAX_DEPTH, MAX_KEY, NUL, SURROGATE, Problem, shown_key, unsafe


def test_names_the_path_of_each_kind_of_problem() -> None:
    assert unsafe({"a": [1, {"b": "x\x00y"}]}) == Problem("a[1].b", NUL)
    assert unsafe({"n": 2**64}) == Problem("n", "integer outside the 64-bit range")
    assert unsafe({"s": "\ud800"}) == Problem("s", SURROGATE)
    assert unsafe({"k\x01": 1}) == Problem("k\\u0001", f"key: {CONTROL}")
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


def test_a_value_is_evidence_every_character_but_nul_and_lone_surrogates() -> None:
    log_line = "\x1b[31mERROR\x1b[0m pool exhausted\x0cpage\x08\x07\u2028next\x7f\x85\u202e"
    assert unsafe({"summary": log_line, "values": {"raw": [log_line]}}) is None


def test_keys_are_walked_like_values_and_shown_printable_and_short() -> None:
    assert unsafe({"te\ud800xt": "abc"}) == Problem("te\\ud800xt", f"key: {SURROGATE}")
    assert unsafe({"a": {"b\x00": 1}}) == Problem("a.b\\u0000", f"key: {CONTROL}")
    assert unsafe({"a": {"\x1b[31m": 1}}) == Problem("a.\\u001b[31m", f"key: {CONTROL}")
    long = unsafe({"a": [{"k" * 10_000: 1}]})
    assert long == Problem("a[0]." + "k" * 40 + "…", f"key: longer than {MAX_KEY} characters")
    assert unsafe({"k" * MAX_KEY: 1}) is None
    assert unsafe({str(i): 1 for i in range(10_001)}) == Problem("", "more than 10000 items")
    for key in ("te\ud800xt", "k" * 10_000, "\x00\x1b\u2028\ud83d"):
        shown = shown_key(key)
        assert len(shown) <= 41 * 6 and shown.encode("utf-8")  # encodable whatever the key was
