"""chakraflow from Python: link PyTorch host and Kineto device traces into Chakra ET+, convert
them to Chakra protobuf (.et), read, feed and simulate them, in-process (the C++ library through
the _chakraflow extension; the GIL is released while traces are read and written).

Errors in the input raise chakraflow.Error, whose str() is the located message the CLI prints
(the file, the place, the stage). Bad argument values raise ValueError. docs/python.md walks
through it.
"""

import gzip as _gzip
import json as _json
import os as _os

from . import _chakraflow
from ._chakraflow import Error, Node, Trace

__version__ = _chakraflow.__version__

__all__ = [
    "Error",
    "Feeder",
    "Node",
    "Trace",
    "__version__",
    "convert",
    "link",
    "read_et",
    "read_et_plus",
    "run",
    "simulate",
    "synth",
]


def _trace_to_pandas(self):
    """One row per node: id, name, type, duration_micros, start_time_micros, num_data_deps,
    num_ctrl_deps, and the attributes comm_type, comm_size, pg_name, is_cpu_op (None where a
    node has none). Imports pandas (python3-pandas) when called."""
    import pandas

    return pandas.DataFrame(self._columns())


Trace.to_pandas = _trace_to_pandas


# Paths may be str or os.PathLike (pathlib.Path): the wrappers below pass os.fspath() on.


def link(host, device, output, **options):
    """Links a host execution trace with its Kineto device trace into an ET+ file
    (`chakraflow link`). Options (keyword-only): rank=None, mode="auto" (rf_id, sequence),
    compat="default" (chakra), gap_threshold_us=1000.0, threads=0 (all cores), format="chakra"
    (legacy), annotation="", min_match_rate=None (percent), timing=None (a Kineto-only trace of
    the same step: the timings come from it, matched by operator order; `device` may then be
    None), step_time=None (the capture's step_time.json), profiler_overhead="auto" (off,
    default). Returns the link report: the counts of the summary, "problems" (every counted data
    problem by its kind: count and examples), "profiler_overhead" (what was taken out, or None)
    and "report" (the text the CLI prints)."""
    for key in ("timing", "step_time"):
        if options.get(key) is not None:
            options[key] = _os.fspath(options[key])
    return _chakraflow.link(_os.fspath(host), None if device is None else _os.fspath(device),
                            _os.fspath(output), **options)


def convert(input, output, **options):
    """Converts an ET+ (or host execution trace) to a Chakra .et (`chakraflow convert`).
    Options: compat="default" (chakra), keep_optimizer_step_duration=False,
    metadata_node="keep" (compute), renumber_groups=False. Returns the nodes read, written and
    removed, the edges added, and "warnings" (counted data problems by kind)."""
    return _chakraflow.convert(_os.fspath(input), _os.fspath(output), **options)


def synth(out_dir, **options):
    """Writes a generated trace set (`chakraflow synth`): OUT/rank{r}/host_et.json and
    kineto.json per rank. Options: ranks=1, iterations=1, scale=1.0, seed=0, legacy=False,
    gzip=False."""
    return _chakraflow.synth(_os.fspath(out_dir), **options)


def read_et(path):
    """Reads a Chakra .et (or .et.gz): a Trace (len, indexing, iteration over Nodes, metadata,
    to_pandas())."""
    return _chakraflow.read_et(_os.fspath(path))


class Feeder(_chakraflow.Feeder):
    """Issues a .et trace's nodes in dependency order, as `chakraflow feed` does. Iterating
    yields every node once, each completed when the next is asked for; or drive it by hand with
    issue() / issuable() and complete(node_id). `state`: "running", "done", "stalled" (see
    `stall` for the waiting ids) or "error"; `checksum`: the issue-order checksum the CLI
    prints. One thread at a time per Feeder (the GIL is released while it reads)."""

    def __init__(self, path, *, window=None, ctrl_deps=False):
        super().__init__(_os.fspath(path), window=window, ctrl_deps=ctrl_deps)


def simulate(traces, ranks, *, config=None, window=None, threads=0):
    """Simulates every rank's .et together (`chakraflow simulate`). `traces` has "{rank}"
    ("out/trace.{rank}.et") or is a prefix ("out/trace" for out/trace.{rank}.et). Returns what
    `chakraflow simulate --report-json` writes: per rank predicted_us / measured_us / state, the
    critical path, the stall report."""
    return _json.loads(
        _chakraflow._simulate_json(
            _os.fspath(traces), ranks, config=None if config is None else _os.fspath(config),
            window=window, threads=threads))


def run(config_path, *, resume=False, quiet=True):
    """Runs a batch configuration (`chakraflow run CONFIG.yaml`) in-process and returns what its
    summary.json holds. Raises Error when the configuration, an output or the simulation fails
    (the message says which), or when a rank fails (the summary is the exception's `summary`
    attribute)."""
    rc, summary_path, ranks_failed = _chakraflow._run(_os.fspath(config_path), resume=resume,
                                                      quiet=quiet)
    summary = None
    if summary_path:
        with open(summary_path, encoding="utf-8") as f:
            summary = _json.load(f)
    if rc != 0:
        failures = [f"rank {r['rank']}: {r.get('error', 'failed')}"
                    for r in (summary or {}).get("ranks", []) if r.get("status") == "failed"]
        why = "; ".join(failures) or f"{ranks_failed} rank(s) failed"
        error = Error(f"{config_path}: chakraflow run failed: {why}")
        error.summary = summary
        raise error
    return summary


def read_et_plus(path, *, as_pandas=False):
    """The nodes of an ET+ (or host execution trace) JSON file (.json or .json.gz), as a list of
    dicts, or a pandas DataFrame with `as_pandas` (one row per node, one column per key)."""
    path = _os.fspath(path)
    opener = _gzip.open if _is_gzip(path) else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            nodes = _json.load(f)["nodes"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Error(f"{path}: not an ET+ or host execution trace: {e}") from e
    if as_pandas:
        import pandas

        return pandas.DataFrame(nodes)
    return nodes


def _is_gzip(path):
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError as e:
        raise Error(f"{path}: cannot open: {e.strerror}") from e
