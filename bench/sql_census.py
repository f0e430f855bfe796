"""Where the SQL lives: lines of SQL string literals per module, as JSON.

A string constant counts as SQL when it starts with a statement keyword. Used for the
design issue's before/after comparison: one repository per aggregate should own its SQL.

    python -m bench.sql_census [--out bench/results/sql_census.json]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

_SQL_START = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP|COPY|LOCK|SET|TRUNCATE)\b", re.I)


def sql_lines(source: str) -> int:
    """Lines of SQL in one module's string literals (f-strings included)."""
    total = 0
    for node in ast.walk(ast.parse(source)):
        text = _literal_text(node)
        if text is not None and _SQL_START.match(text):
            total += text.strip().count("\n") + 1
    return total


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        return "{}".join(parts)
    return None


def census(root: Path) -> dict[str, int]:
    """SQL lines per module under services/ (modules with none are left out)."""
    counts: dict[str, int] = {}
    for path in sorted((root / "services").rglob("*.py")):
        n = sql_lines(path.read_text(encoding="utf-8"))
        if n:
            counts[str(path.relative_to(root))] = n
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    counts = census(Path(__file__).resolve().parent.parent)
    report = {"modules": counts, "total": sum(counts.values()), "module_count": len(counts)}
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
