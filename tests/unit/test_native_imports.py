"""The embedding's engine and the vector index load together in every order the code reaches them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("first", ["services.briefing.snapshots", "services.briefing.semantic",
                                   "services.briefing.e5_onnx"])
def test_onnxruntime_and_usearch_load_in_one_process(first: str) -> None:
    code = (f"import {first}\nfrom services.briefing.embedding import MultilingualE5Embedder\n"
            "from services.briefing.snapshots import index_for\n"
            "import numpy as np\nv = MultilingualE5Embedder('onnx').embed_query('disk full on db-1')\n"
            "i = index_for(384); i.add(np.arange(1, dtype=np.uint64), v[None, :])\n"
            "print(int(i.search(v, 1).keys[0]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0"
