"""Generate docs/settings.md from the Settings model: `python -m services.common.settings_doc > docs/settings.md`."""

from __future__ import annotations

import json
from typing import Any

from services.common.settings import Settings

HEADER = """# Settings

Generated from `services/common/settings.py` by `python -m services.common.settings_doc`; do not edit.
Every setting is an environment variable, a line of the file named by `OPSLORE_CONFIG`, or a file in
the directory named by `OPSLORE_SECRETS_DIR` (a Kubernetes secret mount; file name = lower-case variable
name, e.g. `opslore_database_url`). Secrets are marked; they never appear in logs or reprs.

| variable | default | meaning |
|---|---|---|
"""


def _default(value: Any, secret: bool) -> str:
    if secret and value:
        return "(set it)"
    if value is None or value == "":
        return "—"
    return f"`{json.dumps(value) if isinstance(value, list) else value}`"


def render() -> str:
    rows = []
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        secret = bool(extra.get("secret"))
        meaning = (field.description or "") + (" **secret**" if secret else "")
        rows.append(f"| `OPSLORE_{name.upper()}` | {_default(field.default, secret)} | {meaning} |")
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render(), end="")
