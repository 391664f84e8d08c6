"""Shared fixtures of the graft Python tests. CTest (python/CMakeLists.txt) sets
GRAFT_SOURCE_DIR, GRAFT_BUILD_DIR, GRAFT_CLI and PYTHONPATH=build/python."""

import os
import pathlib
import subprocess

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("GRAFT_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
BUILD_DIR = pathlib.Path(os.environ.get("GRAFT_BUILD_DIR", SOURCE_DIR / "build"))
CLI = os.environ.get("GRAFT_CLI", str(BUILD_DIR / "tools" / "graft"))
PATTERNS = SOURCE_DIR / "patterns"
TINY = SOURCE_DIR / "examples" / "tiny_embedding.gir"

# A rule whose replacement its own pattern matches (neg(x) -> neg(neg(neg(x))),
# meaning-preserving): a fusion pass runs it to its rewrite limit.
SELF_MATCHING_RULE = """rule neg_triple {
  match {
    %out = aten.neg.default($x)
  }
  rewrite {
    %a = aten.neg($x)
    %b = aten.neg(%a)
    %out = aten.neg(%b)
  }
}
"""
NEG_GRAPH = """graph @g {
  input %x : f32[4]
  %n : f32[4] = aten.neg.default(%x)
  output %n
}
"""


def run_cli(*args, check=True):
    return subprocess.run([CLI, *map(str, args)], check=check, capture_output=True, text=True)


@pytest.fixture
def tiny():
    return TINY


@pytest.fixture(scope="session")
def llama_pt2(tmp_path_factory):
    """A small torchao 4w Llama as torch.export writes it (graft synth)."""
    path = tmp_path_factory.mktemp("pt2") / "llama.pt2"
    run_cli("synth", "llama", "--layers", "1", "--dim", "64", "--heads", "2", "--vocab", "64",
            "--quant", "4w", "-o", path)
    return path
