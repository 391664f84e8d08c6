"""graft from Python: load exported graphs, fuse them with graft's rules, compile
them to Vulkan programs and run them (docs/python.md).

    import graft
    g = graft.load("model.pt2")          # or a .gir
    report = g.fuse()                    # the shipped rules
    print(report.rule_counts)
    summary = graft.compile("model.pt2", "model.vkprog")
    out = graft.Program("model.vkprog").run({"tokens": tokens})

The torch.fx bridge is :mod:`graft.fx`. Everything here is a thin layer over
graft's C++ library (the extension module ``graft._graft``); failures raise
:class:`graft.Error` subclasses carrying graft's diagnostics.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _graft
from .errors import ConversionError, Diagnostic, Error, InternalError, UserError

__version__: str = _graft.__version__

__all__ = [
    "__version__", "Error", "UserError", "InternalError", "ConversionError", "Diagnostic",
    "Graph", "Input", "Output", "Node", "load", "parse", "RuleSet", "check", "FuseReport",
    "Rewrite", "Explanation", "RuleVerification", "explain", "coverage", "verify_rules",
    "compile", "Program", "interpret", "shipped_rule_files",
]

PathLike = Union[str, "os.PathLike[str]"]


def _np():
    # numpy is imported on first use: `import graft` works without it.
    import numpy
    return numpy


def _array(pair, widen: bool = False):
    """A numpy array over a (TensorData, dtype) pair from the extension, without
    a copy. dtypes numpy lacks come as their raw bits (bf16 as uint16, float8 as
    uint8); with ``widen`` a bf16 tensor is widened to float32 instead (exact)."""
    np = _np()
    data, dtype = pair
    arr = np.asarray(data)
    if widen and dtype == "bf16":
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    return arr


def _value(v, widen: bool = True):
    return _array(v, widen) if isinstance(v, tuple) else v


def _paths(paths) -> List[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def _tensor_inputs(inputs: Mapping[str, object]) -> dict:
    np = _np()
    out = {}
    for name, value in inputs.items():
        if isinstance(value, (int, float, bool)) and not isinstance(value, np.ndarray):
            out[name] = value
        else:
            out[name] = np.ascontiguousarray(value)
    return out


@dataclass(frozen=True)
class Input:
    """A graph input: ``kind`` is "input", "param", "buffer" or "const"; ``fqn``
    is the state-dict name of a constant (None for user inputs); ``shape`` holds
    ints and, for symbolic dims, their expression ("s0")."""

    name: str
    kind: str
    fqn: Optional[str]
    dtype: Optional[str]
    shape: Optional[List[Union[int, str]]]
    value_kind: str
    has_data: bool
    persistent: bool


@dataclass(frozen=True)
class Output:
    name: str
    kind: str
    target: str


@dataclass(frozen=True)
class Node:
    """A node: ``target`` ("aten.linear.default"), arguments as Python values
    (graph values as ("%", name) tuples, dtypes as ("dtype", "f32")), and its
    results as dicts (name, value_kind, dtype, shape)."""

    target: str
    args: list
    kwargs: dict
    outputs: List[dict]
    known: bool


class Graph:
    """A graph (graft's IR): read with :func:`load`, printed by ``str()`` as text IR."""

    def __init__(self, handle: "_graft.Graph"):
        self._g = handle

    @property
    def name(self) -> str:
        return self._g.name

    @property
    def path(self) -> str:
        """The file it was loaded from ("" for a graph built in memory)."""
        return self._g.path

    @property
    def inputs(self) -> List[Input]:
        return [Input(**d) for d in self._g.inputs()]

    @property
    def outputs(self) -> List[Output]:
        return [Output(**d) for d in self._g.outputs()]

    @property
    def nodes(self) -> List[Node]:
        return [Node(**d) for d in self._g.nodes()]

    def __len__(self) -> int:
        return self._g.num_nodes()

    def __str__(self) -> str:
        return self._g.text()

    def __repr__(self) -> str:
        return f"<graft.Graph @{self.name}: {len(self)} nodes, {len(self.inputs)} inputs>"

    def save(self, path: PathLike, data_file: Optional[PathLike] = None) -> None:
        """Writes the graph atomically: a .pt2 archive when ``path`` ends in .pt2,
        else text IR, large constants going to ``data_file`` (default: ``path``
        with extension .bin)."""
        self._g.save(os.fspath(path), None if data_file is None else os.fspath(data_file))

    def constant(self, fqn: str):
        """The data of constant ``fqn`` as a read-only numpy array viewing graft's
        storage (memory-mapped from a .pt2: no copy). bf16 and float8 data come as
        their raw bits (uint16 / uint8); ``inputs`` gives each constant's dtype."""
        return _array(self._g.constant(fqn))

    def constants(self) -> Dict[str, object]:
        """Every constant with data, by FQN (see :meth:`constant`)."""
        return {i.fqn: self.constant(i.fqn) for i in self.inputs if i.fqn and i.has_data}

    def verify(self) -> List[Diagnostic]:
        """The verifier's findings (empty when the graph is valid)."""
        return [Diagnostic._from_dict(d) for d in self._g.verify()]

    def fuse(self, rules: Optional["RuleSet"] = None, *, max_iterations: int = 10,
             verify_each: bool = False, only: Sequence[str] = ()) -> "FuseReport":
        """Legalizes, then fuses the graph in place with ``rules`` (default: the
        shipped rules), exactly as ``graft fuse`` / ``graft compile`` do."""
        rs = _rules(rules)
        return FuseReport(_graft.fuse(self._g, rs._r, max_iterations, verify_each, list(only)))

    def interpret(self, inputs: Mapping[str, object], sym: Optional[Mapping[str, int]] = None):
        """Runs the graph on graft's reference interpreter (see :func:`interpret`)."""
        return interpret(self, inputs, sym)


def load(path: PathLike) -> Graph:
    """Reads a torch.export .pt2 archive or a text-IR .gir file."""
    return Graph(_graft.load(os.fspath(path)))


def parse(text: str, name: str = "<text>") -> Graph:
    """Parses text IR held in memory (``name`` is used in diagnostics)."""
    return Graph(_graft.parse(text, name))


class RuleSet:
    """Fusion rules: ``RuleSet()`` / ``RuleSet(None)`` is the shipped library;
    ``RuleSet(paths)`` the .pat files (with their imports) and directories (their
    *.pat files in name order) given, and nothing else. Rules tagged ``lossy``
    (e.g. ``qdq_fold_q_dq``) are loaded but run only with ``allow_lossy=True``,
    as ``graft fuse --allow-lossy``; ``verify_rules`` checks them anyway."""

    def __init__(self, paths: Union[None, PathLike, Iterable[PathLike]] = None, *,
                 allow_lossy: bool = False):
        self._r = _graft.RuleSet(None if paths is None else _paths(paths), bool(allow_lossy))

    @property
    def allow_lossy(self) -> bool:
        return self._r.allow_lossy

    @property
    def held_back(self) -> List[str]:
        """Names of the lossy rules this set does not run."""
        return self._r.held_back()

    def __len__(self) -> int:
        return len(self._r)

    @property
    def names(self) -> List[str]:
        """Rule names, legalize phase first."""
        return [r["name"] for r in self._r.rules()]

    @property
    def rules(self) -> List[dict]:
        """One dict per rule: name and phase ("legalize" or "fuse")."""
        return self._r.rules()

    @property
    def files(self) -> List[str]:
        return self._r.files

    @property
    def warnings(self) -> List[Diagnostic]:
        return [Diagnostic._from_dict(d) for d in self._r.warnings]

    def __repr__(self) -> str:
        if not hasattr(self, "_r"):  # the constructor raised
            return "<graft.RuleSet: not loaded>"
        return f"<graft.RuleSet: {len(self)} rules>"


_SHIPPED: Optional[RuleSet] = None


def _rules(rules) -> RuleSet:
    global _SHIPPED
    if rules is None:
        if _SHIPPED is None:
            _SHIPPED = RuleSet()
        return _SHIPPED
    if isinstance(rules, RuleSet):
        return rules
    return RuleSet(rules)


def shipped_rule_files() -> List[str]:
    """Names of the rule files compiled into graft (patterns/*.pat)."""
    return _graft.shipped_rule_files()


def check(paths: Union[PathLike, Iterable[PathLike]], *, werror: bool = False) -> List[Diagnostic]:
    """Checks .pat files (directories: their *.pat files) as ``graft check`` does and
    returns every diagnostic (errors, warnings, notes); an empty list means clean."""
    return [Diagnostic._from_dict(d) for d in _graft.check(_paths(paths), werror)]


@dataclass(frozen=True)
class Rewrite:
    """One committed rewrite: the rule, its phase, the root node, the nodes it
    created and removed, and the constants it made or reused (FQNs)."""

    rule: str
    phase: str
    root: str
    created: List[str]
    removed: List[str]
    constants: List[str]
    reused: List[str]


class FuseReport:
    """What :meth:`Graph.fuse` did. ``str(report)`` is ``graft fuse``'s report."""

    def __init__(self, d: dict):
        self.converged: bool = d["converged"]
        self.stop_reason: str = d["stop_reason"]
        #: diagnostics about the run (a phase stopped at its rewrite or
        #: iteration limit, at the rule that fired most), as RuleSet.warnings
        self.warnings: List[dict] = d["warnings"]
        self.iterations: int = d["iterations"]
        self.num_rewrites: int = d["rewrites"]
        self.nodes_before: int = d["nodes_before"]
        self.nodes_after: int = d["nodes_after"]
        self.seconds: float = d["seconds"]
        #: every committed rewrite, in order
        self.rewrites: List[Rewrite] = [Rewrite(**r) for r in d["fired"]]
        #: rewrites per rule name, rules that fired only
        self.rule_counts: Dict[str, int] = dict(d["rule_counts"])
        #: per rule (and variant): tried, matched, applied, rejected, failures, rejections
        self.stats: List[dict] = d["stats"]
        #: the constants the rules made: fqn, transform, sources, args, shape, dtype,
        #: rule, loc (the rewrite statement), requests, requested_by
        self.provenance: List[dict] = json.loads(d["provenance_json"])
        self._text: str = d["text"]

    @property
    def near_misses(self) -> Dict[str, List[tuple]]:
        """Per rule that had unmatched candidates: (deepest failing check with its
        .pat location, count), as ``graft fuse`` lists them."""
        out: Dict[str, List[tuple]] = {}
        for s in self.stats:
            if s["failures"]:
                out.setdefault(s["rule"], []).extend(tuple(f) for f in s["failures"])
        return out

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return (f"<graft.FuseReport: {self.num_rewrites} rewrites, "
                f"{self.nodes_before} -> {self.nodes_after} nodes>")


@dataclass(frozen=True)
class Explanation:
    """One candidate (rule, root node) and why it does or does not match."""

    rule: str
    variant: int
    root: str
    matched: bool
    loc: str
    check: str
    message: str
    text: str

    def __str__(self) -> str:
        return self.text


def _graph(g) -> Graph:
    if isinstance(g, Graph):
        return g
    return load(g)


def explain(graph: Union[Graph, PathLike], rules=None, rule: Optional[str] = None,
            node: Optional[str] = None, failures_only: bool = False) -> List[Explanation]:
    """Why each rule does (or does not) match at each candidate node, as ``graft
    explain`` prints it. Fusion rules are explained on the graph as legalization
    leaves it, so a Graph passed in is legalized in place; a path is loaded fresh."""
    g = _graph(graph)
    entries = _graft.explain(g._g, _rules(rules)._r, rule or "", node or "", failures_only)
    return [Explanation(**e) for e in entries]


def coverage(graphs, rules=None, format: str = "json", render_dot: bool = True):
    """A rule-coverage report of fusing ``graphs`` (Graphs, which are fused in
    place, or paths): a dict for format "json", else the report's text ("md",
    "junit", "html"), as ``graft coverage`` writes it."""
    if isinstance(graphs, (Graph, str, os.PathLike)):
        graphs = [graphs]
    gs = [_graph(g) for g in graphs]
    names = [g.path or g.name for g in gs]
    text = _graft.coverage([g._g for g in gs], names, _rules(rules)._r, format, render_dot)
    return json.loads(text) if format == "json" else text


@dataclass(frozen=True)
class RuleVerification:
    """verify-rules' verdict on one rule: instances tested, passed, skipped
    (outside the where clause), the worst difference seen, errors, and the
    first failing instance's graph as text IR."""

    rule: str
    variant: int
    ok: bool
    tested: int
    passed: int
    skipped: int
    worst_diff: float
    errors: List[str]
    text: str
    counterexample: Optional[str]

    def __str__(self) -> str:
        return self.text


def verify_rules(paths=None, instances: int = 8, seed: int = 1,
                 rules: Sequence[str] = ()) -> List[RuleVerification]:
    """Verifies rules (of ``paths``, or the shipped ones) on ``instances`` random
    instances each against the reference interpreter, as ``graft verify-rules``."""
    rs = _rules(paths)
    return [RuleVerification(**v) for v in _graft.verify_rules(rs._r, instances, seed, list(rules))]


def compile(src: PathLike, out: PathLike, target: str = "lavapipe",
            report: Optional[PathLike] = None, *, rules: Sequence[PathLike] = (),
            default_rules: bool = True, embed_reference: bool = False,
            allow_lossy: bool = False) -> dict:
    """Compiles a model (.pt2 or .gir) into a Vulkan program file ``out`` and
    returns the summary ``graft compile --json`` prints (the same keys).
    ``report`` also writes a rule-coverage report (format by extension);
    ``allow_lossy`` also runs the rules tagged lossy (``--allow-lossy``).
    Warnings ``graft compile`` prints (a rule file's, a fusion pass stopped at
    its rewrite limit) are issued as :class:`UserWarning`."""
    text = _graft.compile(os.fspath(src), os.fspath(out), target,
                          None if report is None else os.fspath(report),
                          [os.fspath(r) for r in rules], default_rules, embed_reference,
                          allow_lossy)
    return json.loads(text)


class Program:
    """A compiled program (.vkprog), run on a Vulkan device (the first one, or
    ``device``): lavapipe when there is no GPU."""

    def __init__(self, path: PathLike, device: int = -1):
        self._p = _graft.Program(os.fspath(path), device)

    @property
    def target(self) -> str:
        return self._p.target

    @property
    def source_path(self) -> str:
        return self._p.source_path

    @property
    def summary(self) -> dict:
        return json.loads(self._p.summary_json)

    @property
    def device_name(self) -> str:
        return self._p.device_name()

    def run(self, inputs: Mapping[str, object], sym: Optional[Mapping[str, int]] = None,
            *, allow_cpu_fallback: bool = False) -> Dict[str, object]:
        """Runs the program. ``inputs`` maps user-input names to arrays (converted
        to the declared dtype); ``sym`` gives symbolic scalar inputs. Returns the
        outputs by name (buffer mutations as "buffer:FQN"); bf16 outputs widen to
        float32."""
        outs = self._p.run(_tensor_inputs(inputs), dict(sym or {}), allow_cpu_fallback)
        return {k: _value(v) for k, v in outs.items()}

    def generate(self, prompt: Sequence[int], steps: int, *, warmup: int = 0,
                 check: bool = False, atol: Optional[float] = None,
                 allow_cpu_fallback: bool = False) -> Dict[str, object]:
        """Greedy generation with a KV-cache program (``graft synth llama
        --kv-cache``, ExecuTorch's export_llama form): a prefill of ``prompt``,
        then ``steps`` decode steps, each feeding the token chosen last at the
        next ``input_pos``; the cache stays on the device. Returns ``tokens``
        (steps + 1 ids), ``prefill`` and ``decode`` (``tokens``, ``seconds``,
        ``tokens_per_s``). ``warmup`` untimed prefill + decode rounds go first.
        ``check=True`` runs the embedded reference graph (compile(...,
        embed_reference=True)) on the interpreter with its own cache and adds
        ``check`` (``ok``, ``problem`` naming the first differing step,
        ``max_abs_error``, ``steps_checked``); ``atol`` bounds the logits'
        difference. Same loop as ``graft run --generate`` (graft/Generate.h)."""
        return self._p.generate([int(t) for t in prompt], int(steps), int(warmup), check, atol,
                                allow_cpu_fallback)

    def interpret_reference(self, inputs: Mapping[str, object],
                            sym: Optional[Mapping[str, int]] = None) -> Dict[str, object]:
        """The embedded original graph (compile(..., embed_reference=True)) on the
        reference interpreter, to compare with :meth:`run`."""
        outs = self._p.interpret_reference(_tensor_inputs(inputs), dict(sym or {}))
        return {k: _value(v) for k, v in outs.items()}


def interpret(graph: Union[Graph, PathLike], inputs: Mapping[str, object],
              sym: Optional[Mapping[str, int]] = None) -> Dict[str, object]:
    """Runs a graph on graft's reference interpreter (PyTorch numerics). Same
    inputs and outputs as :meth:`Program.run`."""
    g = _graph(graph)
    outs = _graft.interpret(g._g, _tensor_inputs(inputs), dict(sym or {}))
    return {k: _value(v) for k, v in outs.items()}
