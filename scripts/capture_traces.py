#!/usr/bin/env python3
"""Capture linkable PyTorch traces for chakraflow: one host execution trace (ET) and one device
trace (Kineto) per rank, recorded over the same training step, so that every host op and its
device-trace op carry the same RecordFunction id (rf_id).

    torchrun --nproc-per-node 4 scripts/capture_traces.py --out traces
    build/chakraflow run traces/chakraflow.yaml        # link + convert + simulate every rank

writes, for every rank r (the layout configs/captured.yaml expects):

    traces/rank{r}/host_et.json.gz         torch.profiler.ExecutionTraceObserver
    traces/rank{r}/kineto.json.gz          torch.profiler.profile (CPU + CUDA activities)
    traces/rank{r}/kineto_timing.json.gz   a later step of the same process, Kineto alone (the
                                           fastest of --timing-steps)
    traces/rank{r}/step_time.json          the step timed with no profiler, and what each
                                           profiler costs per op, measured on the spot
    traces/chakraflow.yaml                 a `chakraflow run` configuration for these files

The ET step's timings carry the observers' cost (13-19 us per op): chakraflow takes the timings
from the Kineto-only step and takes out what Kineto still adds, calibrated by step_time.json, to
predict the step as it runs without a profiler (docs/simulation.md).

The workload is a small but real distributed training step: a tiny decoder-style transformer
(or an MLP) wrapped in DistributedDataParallel (or FSDP), AdamW, synthetic data copied from
pinned host memory. Without a GPU it runs on CPU with the gloo backend; the device trace then
has CPU ops only (no kernels, no NCCL), which is enough to try the pipeline but not to study
GPU time or communication.

Why each setting matters: docs/capturing.md. Torch is imported only when capturing, so
`--help`, `--dry-run` (print the plan) and `--check DIR` (verify captured traces) work on any
machine with Python 3.8+.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time
from pathlib import Path

HOST_FILE = "host_et.json"  # + ".gz" unless --no-gzip
DEVICE_FILE = "kineto.json"
TIMING_FILE = "kineto_timing.json"  # a later step under Kineto alone: the timings to trust
STEP_TIME_FILE = "step_time.json"  # the step timed without a profiler, and per-op profiler costs
CONFIG_FILE = "chakraflow.yaml"
PG_INIT_NAME = "## process_group:init ##"


# --------------------------------------------------------------------------------------------
# Command line and plan (no torch)
# --------------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="capture_traces.py",
        description=(
            "Record a host execution trace (ExecutionTraceObserver) and a device trace "
            "(torch.profiler / Kineto) of the same training step on every rank, in the layout "
            "chakraflow's configs expect: OUT/rank{rank}/host_et.json.gz and "
            "OUT/rank{rank}/kineto.json.gz. Launch with torchrun; see docs/capturing.md."
        ),
        epilog=(
            "examples:\n"
            "  torchrun --nproc-per-node 4 scripts/capture_traces.py --out traces\n"
            "  torchrun --nproc-per-node 8 scripts/capture_traces.py --out traces --parallel fsdp\n"
            "  python3 scripts/capture_traces.py --dry-run --nproc 4      # the plan, no torch\n"
            "  python3 scripts/capture_traces.py --check traces          # verify, no torch\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("what to write")
    g.add_argument("--out", default="traces", help="output folder (default: traces)")
    g.add_argument(
        "--no-gzip", action="store_true", help="write .json instead of .json.gz (default: gzip)"
    )

    g = p.add_argument_group("which step to record")
    g.add_argument(
        "--steps", type=int, default=5, help="training steps to run in all (default: 5)"
    )
    g.add_argument(
        "--profile-step",
        type=int,
        default=3,
        help=(
            "0-based index of the one step both traces record (default: 3). The steps before "
            "it absorb one-time work: DDP's bucket rebuild after the first backward, "
            "torch.compile, allocator growth, cuDNN autotuning"
        ),
    )
    g.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="profiler warm-up steps right before the recorded one (default: 1)",
    )
    g.add_argument(
        "--et-mode",
        choices=["auto", "profiler", "manual"],
        default="auto",
        help=(
            "how the ET observer follows the profiler: 'profiler' passes it as "
            "torch.profiler.profile(execution_trace_observer=...) so both start and stop "
            "together (PyTorch 2.3+); 'manual' starts it before the recorded step and stops it "
            "after (older 2.x); 'auto' (default) picks 'profiler' when available"
        ),
    )

    g = p.add_argument_group("timing (the unprofiled step)")
    g.add_argument(
        "--no-timing",
        action="store_true",
        help=f"write only the ET step's pair: no {TIMING_FILE}, no {STEP_TIME_FILE}",
    )
    g.add_argument(
        "--timing-steps",
        type=int,
        default=3,
        help=(
            f"steps recorded under Kineto alone, each after a warm-up step; the fastest is kept "
            f"as {TIMING_FILE} (default 3: a step slowed by the machine is not the one replayed)"
        ),
    )
    g.add_argument(
        "--timed-steps",
        type=int,
        default=20,
        help="steps timed without a profiler for step_time.json (default 20, at least 10)",
    )
    g.add_argument(
        "--calibration-ops",
        type=int,
        default=2000,
        help="ops of the per-op profiler-cost loop, per profiler setting (default 2000)",
    )

    g = p.add_argument_group("workload")
    g.add_argument("--model", choices=["transformer", "mlp"], default="transformer",
                   help="tiny decoder-style transformer LM (default) or residual MLP")
    g.add_argument(
        "--parallel",
        choices=["ddp", "fsdp", "none"],
        default="ddp",
        help="DistributedDataParallel (default), FSDP (GPU only) or no wrapper (no collectives)",
    )
    g.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="auto (default): cuda + nccl when a GPU is visible, else cpu + gloo",
    )
    g.add_argument(
        "--backend",
        choices=["auto", "nccl", "gloo"],
        default="auto",
        help=(
            "process-group backend. auto (default): nccl on GPUs when every local rank has a GPU "
            "of its own, else gloo (with CUDA tensors when there are GPUs: NCCL refuses two ranks "
            "on one GPU)"
        ),
    )
    g.add_argument("--layers", type=int, default=4, help="layers / blocks (default: 4)")
    g.add_argument("--hidden", type=int, default=256, help="model width (default: 256)")
    g.add_argument("--heads", type=int, default=4, help="attention heads (default: 4)")
    g.add_argument("--seq-len", type=int, default=128, help="tokens per sample (default: 128)")
    g.add_argument("--vocab", type=int, default=4096, help="vocabulary / classes (default: 4096)")
    g.add_argument("--batch-size", type=int, default=8, help="samples per rank per step (default: 8)")
    g.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the model (see the caveats in docs/capturing.md)",
    )
    g.add_argument(
        "--no-sync-events",
        action="store_true",
        help=(
            "do not ask Kineto for cuda_sync events (enable_cuda_sync_events); chakraflow uses "
            "them to find which stream a sync or an event wait refers to"
        ),
    )

    g = p.add_argument_group("without torch")
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (ranks, files, settings, next commands) and exit; no torch needed",
    )
    g.add_argument(
        "--nproc",
        type=int,
        default=None,
        help="--dry-run only: ranks to plan for (default: $WORLD_SIZE, else 1)",
    )
    g.add_argument(
        "--check",
        metavar="DIR",
        default=None,
        help=(
            "verify traces already captured in DIR (rank*/host_et.json[.gz] + kineto.json[.gz]): "
            "same process, rf_ids shared, one common step, process groups; exit 1 on an error"
        ),
    )
    args = p.parse_args(argv)

    if args.warmup < 0 or args.profile_step < 1 or args.warmup > args.profile_step:
        p.error("need 0 <= --warmup <= --profile-step and --profile-step >= 1")
    if args.steps <= args.profile_step:
        p.error("--steps must be larger than --profile-step (the recorded step must run)")
    if args.model == "transformer" and args.hidden % args.heads:
        p.error("--hidden must be a multiple of --heads")
    if args.timed_steps < 10:
        p.error("--timed-steps must be at least 10")
    if args.timing_steps < 1:
        p.error("--timing-steps must be at least 1")
    if args.calibration_ops < 100:
        p.error("--calibration-ops must be at least 100")
    return args


def world_from_env(args):
    """(rank, world_size, local_rank) as torchrun sets them; rank 0 of 1 when run directly."""
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    if args.dry_run and args.nproc is not None:
        world = args.nproc
    return rank, world, local


def choose_backend(requested, use_cuda, gpus, local_ranks, parallel):
    """(backend, note) for the process group, or SystemExit with what to do.

    NCCL needs a GPU of its own per rank: with more ranks on this machine than GPUs (torchrun
    --nproc-per-node 2 on a one-GPU machine) it dies inside DDP with "Duplicate GPU detected".
    gloo runs CUDA tensors through host memory, so 'auto' falls back to it and says so; an
    explicit --backend nccl stops here with the numbers. FSDP is tested on NCCL only."""
    if requested == "gloo" or not use_cuda:
        if requested == "nccl":
            raise SystemExit("capture_traces.py: --backend nccl needs GPUs (torch sees none); "
                             "use --backend gloo or --device cpu")
        return "gloo", None
    if local_ranks <= gpus:
        return "nccl", None
    shortage = (f"{local_ranks} ranks on this machine (LOCAL_WORLD_SIZE) but {gpus} GPU(s): "
                "NCCL needs one GPU per rank")
    if requested == "nccl":
        raise SystemExit(f"capture_traces.py: --backend nccl: {shortage}; run at most {gpus} "
                         "rank(s) per machine (torchrun --nproc-per-node), or --backend gloo")
    if parallel == "fsdp":
        raise SystemExit(f"capture_traces.py: --parallel fsdp: {shortage}; run at most {gpus} "
                         "rank(s) per machine, or --parallel ddp with gloo")
    return "gloo", (f"{shortage}: using gloo with CUDA tensors (--backend nccl to refuse; "
                    "the traces hold gloo collectives, docs/capturing.md)")


def schedule_of(args):
    """torch.profiler.schedule arguments: exactly one active step, recorded once."""
    return dict(
        wait=args.profile_step - args.warmup, warmup=args.warmup, active=1, repeat=1
    )


def file_names(args):
    ext = "" if args.no_gzip else ".gz"
    return HOST_FILE + ext, DEVICE_FILE + ext


def timing_file_name(args):
    return TIMING_FILE + ("" if args.no_gzip else ".gz")


def run_config_text(args, world):
    """The `chakraflow run` configuration written next to the traces (configs/README.md)."""
    host, device = file_names(args)
    ranks = "0" if world == 1 else f"0-{world - 1}"
    return (
        "# Written by scripts/capture_traces.py for the traces of this folder (docs/capturing.md).\n"
        "# Paths are relative to this file. Run: build/chakraflow run THIS_FILE\n"
        "inputs:\n"
        f"  host: rank{{rank}}/{host}\n"
        f"  device: rank{{rank}}/{device}\n"
        + ("" if args.no_timing else
           f"  timing: rank{{rank}}/{timing_file_name(args)}   # the timings: Kineto alone\n"
           f"  step_time: rank{{rank}}/{STEP_TIME_FILE}            # calibration, unprofiled step\n")
        + f"  ranks: {ranks}\n"
        "stages: [link, convert, simulate]\n"
        + ("link:\n"
           "  mode: auto                 # rf_id when the device trace has rf_ids, else sequence\n"
           "  annotation: ProfilerStep   # sequence mode only: the recorded ProfilerStep#N\n"
           if args.no_timing else
           "link:                        # the timing trace is matched by operator order\n"
           "  annotation: ProfilerStep   # its one recorded step\n")
        + 
        "outputs:\n"
        "  dir: chakra                # chakra/trace.{rank}.et (+ et_plus/, summary.json)\n"
        "  prefix: trace\n"
        "  keep_et_plus: true\n"
    )


def next_commands(args, world):
    out = args.out.rstrip("/") or "."
    host, device = file_names(args)
    lines = [
        "Next, from the chakraflow repository root (docs/capturing.md):",
        f"  build/chakraflow run {out}/{CONFIG_FILE}      # every rank: link, convert, simulate",
        "or rank by rank (rank 0 shown; the ET+ and .et land in OUT/chakra):",
        f"  mkdir -p {out}/chakra",
        f"  build/chakraflow link --chakra-host-trace {out}/rank0/{host} "
        f"--chakra-device-trace {out}/rank0/{device} "
        f"--output-file {out}/chakra/et_plus.0.json.gz --rank 0",
        f"  build/chakraflow convert --input {out}/chakra/et_plus.0.json.gz "
        f"--output {out}/chakra/trace.0.et",
        f"  build/chakraflow simulate --traces '{out}/chakra/trace.{{rank}}.et' --ranks {world}",
        f"To verify the pairs first: python3 scripts/capture_traces.py --check {out}",
    ]
    return "\n".join(lines)


def print_plan(args):
    rank, world, _ = world_from_env(args)
    host, device = file_names(args)
    s = schedule_of(args)
    out = args.out.rstrip("/") or "."
    print("capture plan (dry run: torch is not imported, nothing is written)")
    print(f"  ranks: {world} ({'0' if world == 1 else f'0-{world - 1}'}); torchrun sets "
          "RANK/WORLD_SIZE/LOCAL_RANK per process")
    print(
        "  device/backend: "
        + {
            "auto": "cuda + nccl if torch sees a GPU, else cpu + gloo (device trace without kernels)",
            "cuda": "cuda + nccl (one GPU per rank: LOCAL_RANK; gloo with CUDA tensors when the "
                    "ranks of a machine outnumber its GPUs, unless --backend nccl)",
            "cpu": "cpu + gloo (device trace without kernels)",
        }[args.device]
    )
    model = (
        f"transformer: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
        f"seq {args.seq_len}, vocab {args.vocab}"
        if args.model == "transformer"
        else f"mlp: {args.layers} blocks, hidden {args.hidden}, {args.vocab} classes"
    )
    print(f"  model: {model}; batch {args.batch_size}/rank; parallel: {args.parallel}"
          + ("; torch.compile" if args.compile else ""))
    print(
        f"  steps: {args.steps}; recorded: step {args.profile_step} = ProfilerStep#{args.profile_step}"
        f" (schedule wait={s['wait']}, warmup={s['warmup']}, active=1, repeat=1)"
    )
    print(
        "  profiler: activities CPU+CUDA (CPU only without GPU), record_shapes=True, "
        + ("no cuda_sync events" if args.no_sync_events else "enable_cuda_sync_events=True if supported")
    )
    print(
        "  ET observer: "
        + {
            "auto": "passed as execution_trace_observer= when torch.profiler.profile accepts it "
            "(PyTorch 2.3+), else started/stopped by hand around the same step",
            "profiler": "passed as execution_trace_observer= (needs PyTorch 2.3+)",
            "manual": "started before ProfilerStep#N begins, stopped after it ends",
        }[args.et_mode]
    )
    print(f"  process groups: '{PG_INIT_NAME}' recorded in the ET when the observer starts")
    if not args.no_timing:
        print(f"  then: {args.timing_steps} more step(s) under Kineto alone (each after a warm-up "
              f"step), the fastest kept -> {TIMING_FILE}; "
              f"{args.timed_steps} steps with no profiler and a {args.calibration_ops}-op loop "
              f"per profiler setting -> {STEP_TIME_FILE}")
    print("  files:")
    shown = list(range(world)) if world <= 4 else [0, 1, world - 1]
    for r in shown:
        if world > 4 and r == world - 1:
            print("    ...")
        extra = "" if args.no_timing else f"   {timing_file_name(args)}   {STEP_TIME_FILE}"
        print(f"    {out}/rank{r}/{host}   {out}/rank{r}/{device}{extra}")
    print(f"    {out}/{CONFIG_FILE} (written by rank 0):")
    for line in run_config_text(args, world).splitlines():
        print(f"      {line}")
    print(next_commands(args, world))


# --------------------------------------------------------------------------------------------
# Checking captured traces (no torch): the failures docs/capturing.md lists, found before linking
# --------------------------------------------------------------------------------------------


def read_json(path):
    """Loads .json or .json.gz (by content). Raises ValueError with the reason."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            return json.load(f)
    except (json.JSONDecodeError, EOFError, OSError) as e:
        raise ValueError(f"not a complete JSON document ({e})") from None


def find_pair(rank_dir):
    """(host path, device path) of a rank folder, .json.gz preferred; None where absent."""
    def first(name):
        for cand in (rank_dir / (name + ".gz"), rank_dir / name):
            if cand.exists():
                return cand
        return None
    return first(HOST_FILE), first(DEVICE_FILE)


def host_summary(doc):
    nodes = doc.get("nodes", [])
    rf_ids, steps = set(), set()
    comms = pg_init = 0
    for n in nodes:
        name = n.get("name", "")
        rf = n.get("rf_id")  # schema 1.0.1: node-level
        for a in n.get("attrs", []) or []:
            if a.get("name") == "rf_id":
                rf = a.get("value")
        if isinstance(rf, int) and rf > 0:
            rf_ids.add(rf)
        if name.startswith("ProfilerStep#"):
            steps.add(name)
        if name == "record_param_comms":
            comms += 1
        if name == PG_INIT_NAME:
            pg_init += 1
    return dict(
        schema=str(doc.get("schema", "?")),
        pid=doc.get("pid"),
        nodes=len(nodes),
        rf_ids=rf_ids,
        steps=steps,
        comms=comms,
        pg_init=pg_init,
        finished="finish_ts" in doc,
    )


def device_summary(doc):
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    rf_ids, steps, pids = set(), set(), set()
    cpu_ops = gpu_ops = nccl = syncs = 0
    for e in events:
        if not isinstance(e, dict):
            continue
        cat = str(e.get("cat", "")).lower()
        name = str(e.get("name", ""))
        if cat in ("cpu_op", "user_annotation", "operator"):
            if name.startswith("ProfilerStep#"):
                steps.add(name)
                continue
            cpu_ops += 1
            pids.add(e.get("pid"))
            rf = (e.get("args") or {}).get("Record function id")
            if isinstance(rf, int) and rf > 0:
                rf_ids.add(rf)
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"):
            gpu_ops += 1
            if "nccl" in name.lower():
                nccl += 1
        elif cat == "cuda_sync":
            syncs += 1
    info = doc.get("distributedInfo", {}) if isinstance(doc, dict) else {}
    return dict(
        rf_ids=rf_ids,
        steps=steps,
        pids=pids,
        cpu_ops=cpu_ops,
        gpu_ops=gpu_ops,
        nccl=nccl,
        syncs=syncs,
        dist=info if isinstance(info, dict) else {},
    )


def op_sequences(doc):
    """The recorded step's host ops, per thread (threads by their first op), in start order:
    what two captures of the same step must share. And the ProfilerStep spans (us)."""
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    by_tid, steps = {}, []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        if str(e.get("cat", "")).lower() not in ("cpu_op", "user_annotation"):
            continue
        name = str(e.get("name", ""))
        if name.startswith("ProfilerStep#"):
            steps.append(float(e.get("dur", 0)))
            continue
        by_tid.setdefault(e.get("tid"), []).append((float(e.get("ts", 0)), name))
    threads = sorted(by_tid.values(), key=lambda ops: min(ops)[0])
    return [[name for _, name in sorted(ops, key=lambda x: x[0])] for ops in threads], steps


def check_timing(rank_dir, device_doc, errors, warnings):
    """The timing trace and step_time.json of a rank folder, when there: one step, the same ops
    in the same order as the ET step; the recorded/unprofiled ratios. Returns a line or None."""
    timing = next((c for c in (rank_dir / (TIMING_FILE + ".gz"), rank_dir / TIMING_FILE)
                   if c.exists()), None)
    step_time = rank_dir / STEP_TIME_FILE
    if timing is None and not step_time.exists():
        return None
    if timing is None or not step_time.exists():
        errors.append(f"{rank_dir}: {TIMING_FILE}[.gz] and {STEP_TIME_FILE} go together; "
                      "one of them is missing")
        return None
    try:
        timing_ops, timing_steps = op_sequences(read_json(timing))
    except ValueError as e:
        errors.append(f"{timing}: {e}")
        return None
    et_ops, et_steps = op_sequences(device_doc)
    if len(timing_steps) != 1:
        errors.append(f"{timing}: {len(timing_steps)} recorded steps (ProfilerStep); one is needed")
    if [len(t) for t in timing_ops] != [len(t) for t in et_ops] or timing_ops != et_ops:
        where = "the thread counts differ"
        for k, (a, b) in enumerate(zip(et_ops, timing_ops)):
            if a != b:
                i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                where = (f"thread {k}, op {i}: {a[i] if i < len(a) else '(none)'} in the ET "
                         f"step, {b[i] if i < len(b) else '(none)'} in the timing step")
                break
        errors.append(f"{timing}: not the ET step's operators in the same order ({where})")
    try:
        record = read_json(step_time)
        unprofiled = float(record["unprofiled_step_ms"]["median"])
        costs = record["profiler_overhead_us_per_op"]
        for key in ("none", "kineto", "et_kineto"):
            float(costs[key])
    except (ValueError, KeyError, TypeError) as e:
        errors.append(f"{step_time}: not a step_time.json ({e}; docs/capturing.md)")
        return None
    if unprofiled <= 0:
        errors.append(f"{step_time}: unprofiled_step_ms.median is {unprofiled}")
        return None
    parts = []
    for label, steps in (("ET step", et_steps), ("timing step", timing_steps)):
        if steps:
            parts.append(f"{label} {steps[0] / 1000:.2f} ms = {steps[0] / 1000 / unprofiled:.2f}x")
    return f"unprofiled step {unprofiled:.2f} ms; recorded: " + ", ".join(parts)


def check_rank(rank, rank_dir):
    """Returns (summary dict or None, errors, warnings) for one rank folder."""
    errors, warnings = [], []
    host_path, device_path = find_pair(rank_dir)
    if host_path is None or device_path is None:
        missing = [n for n, p in ((HOST_FILE, host_path), (DEVICE_FILE, device_path)) if p is None]
        return None, [f"missing {', '.join(missing)}[.gz] in {rank_dir}"], warnings
    try:
        h = host_summary(read_json(host_path))
    except ValueError as e:
        return None, [f"{host_path}: {e}; an ET is finalized only when the observer is "
                      "unregistered (profiler exit / unregister_callback) before the process ends"], warnings
    try:
        device_doc = read_json(device_path)
        d = device_summary(device_doc)
    except ValueError as e:
        return None, [f"{device_path}: {e}"], warnings

    if not h["finished"]:
        errors.append("host ET has no finish_ts: truncated (observer not unregistered?)")
    if h["pid"] is not None and d["pids"] and h["pid"] not in d["pids"]:
        errors.append(
            f"host ET pid {h['pid']} is not a pid of the device trace {sorted(d['pids'])}: "
            "the two files come from different processes (another rank or another run)"
        )
    drank = d["dist"].get("rank")
    if isinstance(drank, int) and drank != rank:
        errors.append(f"device trace says distributedInfo.rank {drank}, folder is rank{rank}")

    shared = h["rf_ids"] & d["rf_ids"]
    if not d["rf_ids"]:
        warnings.append(
            "device trace has no non-zero 'Record function id': chakraflow links it by operator "
            "order (--mode sequence). Cause: PyTorch older than the rf_id export, or the ET "
            "observer was not running while the profiler recorded"
        )
    elif d["rf_ids"] and len(shared) < 0.9 * len(d["rf_ids"]):
        warnings.append(
            f"only {len(shared)} of {len(d['rf_ids'])} device-trace rf_ids are in the host ET: "
            "the observer and the profiler did not record the same window"
        )
    if len(d["steps"]) != 1:
        warnings.append(
            f"device trace has {len(d['steps'])} ProfilerStep annotations "
            f"({', '.join(sorted(d['steps'])) or 'none'}); record exactly one step"
        )
    if h["steps"] and d["steps"] and not (h["steps"] & d["steps"]):
        errors.append(
            f"host ET step {sorted(h['steps'])} differs from device step {sorted(d['steps'])}"
        )
    world = d["dist"].get("world_size")
    if isinstance(world, int) and world > 1 and not h["pg_init"]:
        warnings.append(
            f"no '{PG_INIT_NAME}' node in the host ET: collectives cannot be assigned to their "
            "process groups (the simulator then takes every group as all ranks)"
        )
    if d["gpu_ops"] == 0:
        warnings.append("no GPU ops in the device trace (CPU run?): the .et will have no "
                        "kernels and no communication nodes")
    timing_line = check_timing(Path(rank_dir), device_doc, errors, warnings)
    summary = dict(rank=rank, host=h, device=d, shared=len(shared),
                   host_path=host_path, device_path=device_path, timing=timing_line)
    return summary, errors, warnings


def check_dir(out):
    """Checks every OUT/rank*/ pair and the ranks against each other. Returns the exit status."""
    out = Path(out)
    ranks = {}
    for child in sorted(out.glob("rank*")):
        suffix = child.name[len("rank"):]
        if child.is_dir() and suffix.isdigit():
            ranks[int(suffix)] = child
    if not ranks:
        print(f"check: no rank*/ folders in {out}")
        return 1
    n_errors = 0
    summaries = []
    print(f"check: {len(ranks)} rank(s) in {out}")
    print("  rank  ET nodes  schema               rf_ids shared  device cpu ops  GPU ops  NCCL  "
          "cuda_sync  step")
    for rank in sorted(ranks):
        s, errors, warnings = check_rank(rank, ranks[rank])
        if s is not None:
            h, d = s["host"], s["device"]
            step = ",".join(sorted(d["steps"])) or "-"
            print(f"  {rank:4d}  {h['nodes']:8d}  {h['schema']:<19}  "
                  f"{s['shared']:6d}/{len(d['rf_ids']):<6d} {d['cpu_ops']:14d}  "
                  f"{d['gpu_ops']:7d}  {d['nccl']:4d}  {d['syncs']:9d}  {step}")
            summaries.append(s)
            if s.get("timing"):
                print(f"        {s['timing']}")
        else:
            print(f"  {rank:4d}  (unreadable)")
        for e in errors:
            print(f"        error: {e}")
        for w in warnings:
            print(f"        warning: {w}")
        n_errors += len(errors)

    # Across ranks: the simulator needs ranks 0..N-1 that recorded the same step.
    expected = list(range(len(ranks)))
    if sorted(ranks) != expected:
        print(f"  error: ranks {sorted(ranks)} are not 0..{len(ranks) - 1} "
              "(chakraflow simulate needs every rank)")
        n_errors += 1
    steps = {frozenset(s["device"]["steps"]) for s in summaries}
    if len(steps) > 1:
        print("  error: the ranks recorded different steps: "
              + "; ".join(",".join(sorted(x)) or "none" for x in steps))
        n_errors += 1
    worlds = {s["device"]["dist"].get("world_size") for s in summaries} - {None}
    if len(worlds) == 1 and next(iter(worlds)) != len(ranks):
        print(f"  warning: distributedInfo.world_size is {next(iter(worlds))} "
              f"but {len(ranks)} rank folder(s) were found")
    comms = {s["host"]["comms"] for s in summaries}
    if len(comms) > 1:
        print(f"  warning: ranks differ in record_param_comms counts {sorted(comms)}: fine for "
              "pipeline/point-to-point schedules, a window mismatch for data parallelism")
    print(f"check: {'OK' if n_errors == 0 else f'{n_errors} error(s)'}")
    return 0 if n_errors == 0 else 1


# --------------------------------------------------------------------------------------------
# Capture (torch)
# --------------------------------------------------------------------------------------------


def log(rank, msg):
    print(f"[rank {rank}] {msg}", flush=True)


def gzip_in_place(path):
    """path -> path.gz, streaming; removes path."""
    with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    os.remove(path)


def build_model(torch, args):
    nn = torch.nn

    class TinyTransformerLM(nn.Module):
        """Token + position embeddings, pre-norm causal encoder layers, LM head."""

        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(args.vocab, args.hidden)
            self.pos = nn.Embedding(args.seq_len, args.hidden)
            layer = nn.TransformerEncoderLayer(
                d_model=args.hidden,
                nhead=args.heads,
                dim_feedforward=4 * args.hidden,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            self.blocks = nn.TransformerEncoder(
                layer, num_layers=args.layers, enable_nested_tensor=False
            )
            self.norm = nn.LayerNorm(args.hidden)
            self.head = nn.Linear(args.hidden, args.vocab, bias=False)

        def forward(self, tokens):
            t = tokens.shape[1]
            pos = torch.arange(t, device=tokens.device)
            causal = torch.triu(
                torch.full((t, t), float("-inf"), device=tokens.device), diagonal=1
            )
            x = self.tok(tokens) + self.pos(pos)
            x = self.blocks(x, mask=causal)
            return self.head(self.norm(x))

    class MLP(nn.Module):
        """Residual GELU blocks and a classifier head."""

        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(
                nn.Sequential(
                    nn.LayerNorm(args.hidden),
                    nn.Linear(args.hidden, 4 * args.hidden),
                    nn.GELU(),
                    nn.Linear(4 * args.hidden, args.hidden),
                )
                for _ in range(args.layers)
            )
            self.head = nn.Linear(args.hidden, args.vocab)

        def forward(self, x):
            for block in self.blocks:
                x = x + block(x)
            return self.head(x)

    return TinyTransformerLM() if args.model == "transformer" else MLP()


def make_batches(torch, args, rank, pin):
    """A few synthetic batches per rank, kept in (pinned) host memory: each step copies one to
    the device, as a data loader would."""
    g = torch.Generator().manual_seed(1000 + rank)
    batches = []
    for _ in range(2):
        if args.model == "transformer":
            x = torch.randint(0, args.vocab, (args.batch_size, args.seq_len), generator=g)
            y = torch.randint(0, args.vocab, (args.batch_size, args.seq_len), generator=g)
        else:
            x = torch.randn(args.batch_size, args.hidden, generator=g)
            y = torch.randint(0, args.vocab, (args.batch_size,), generator=g)
        if pin:
            x, y = x.pin_memory(), y.pin_memory()
        batches.append((x, y))
    return batches


def record_process_groups(torch, rank):
    """Writes the '## process_group:init ##' node that newer PyTorch writes itself when the ET
    observer starts (ExecutionTraceObserver._record_pg_config): one String input, the JSON list
    of process groups {pg_name, pg_desc, backend_config, ranks, group_size, ...}. Must run while
    the observer is enabled, so that the node lands in the ET."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return
    world = getattr(dist.distributed_c10d, "_world", None)
    info = getattr(world, "pg_config_info", None)
    if info is None:
        log(rank, f"warning: this PyTorch has no pg_config_info; no '{PG_INIT_NAME}' node")
        return
    text = json.dumps(info, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    handle = torch.autograd._record_function_with_args_enter(PG_INIT_NAME, text)
    torch.autograd._record_function_with_args_exit(handle)


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def keep_fastest_timing_trace(paths, target):
    """Of the Kineto-only traces `paths` (plain JSON, one recorded step each), keeps the one whose
    ProfilerStep is shortest as `target` and removes the others. Interference only slows a step
    down: the fastest is the machine at its usual speed. Returns (every step's length in ms, in
    order; the index kept). SystemExit when none holds exactly one recorded step."""
    steps_ms = []
    for path in paths:
        try:
            _, steps = op_sequences(read_json(path))
        except (OSError, ValueError):
            steps = []
        steps_ms.append(steps[0] / 1000.0 if len(steps) == 1 else None)
    timed = [(ms, k) for k, ms in enumerate(steps_ms) if ms is not None]
    if not timed:
        for path in paths:
            Path(path).unlink(missing_ok=True)
        sys.exit(f"capture_traces.py: none of the Kineto-only traces ({', '.join(map(str, paths))}) "
                 "holds one recorded step")
    kept = min(timed)[1]
    for k, path in enumerate(paths):
        if k == kept:
            os.replace(path, target)
        else:
            Path(path).unlink(missing_ok=True)
    return steps_ms, kept


def step_time_record(times_ms, costs_us, args, timing=None):
    """step_time.json (docs/capturing.md): the unprofiled step and the per-op profiler costs, in
    the format of ../shared/data/pt211_h200/suite/*/et/step_time.json plus what it measured.
    `timing`: keep_fastest_timing_trace's result (the Kineto-only steps, the one kept)."""
    extra = {}
    if timing is not None:
        steps_ms, kept = timing
        extra = {
            "timing_steps_ms": [None if ms is None else round(ms, 4) for ms in steps_ms],
            "timing_step_kept": kept,
        }
    return {
        "unprofiled_step_ms": {
            "median": round(median(times_ms), 4),
            "min": round(min(times_ms), 4),
            "n": len(times_ms),
        },
        "profiler_overhead_us_per_op": {k: round(v, 3) for k, v in costs_us.items()},
        "calibration": {
            "ops": args.calibration_ops,
            "loop": "alternating a one-element add on the device and a view on the CPU "
                    "(1.5 recorded host events per op under Kineto: a cpu_op each, a launch "
                    "every other)",
            "kineto": "record_shapes=True, the ET step's activities",
        },
        "timed_steps_ms": [round(t, 4) for t in times_ms],
        **extra,
    }


def calibrate_profiler_costs(torch, device, sync, args, rank_dir, profiler_kwargs):
    """Mean cost per op (us) of a loop of tiny ops with no profiler, under Kineto alone, and
    under the ET observer plus Kineto: what chakraflow takes out of the recorded timings."""
    from torch.profiler import ExecutionTraceObserver

    a = torch.ones(1, device=device)
    c = torch.ones(4)
    n = args.calibration_ops

    def loop():
        sync()
        t0 = time.perf_counter()
        for i in range(n):
            if i % 2:
                c.view(2, 2)
            else:
                torch.add(a, 1)
        sync()
        return (time.perf_counter() - t0) * 1e6 / n

    loop()  # warm-up: allocations, kernels loaded
    costs = {"none": loop()}
    kwargs = {k: v for k, v in profiler_kwargs.items()
              if k in ("activities", "record_shapes", "experimental_config")}
    with torch.profiler.profile(**kwargs):
        costs["kineto"] = loop()
    scratch = rank_dir / ".calibration_et.json"
    et = ExecutionTraceObserver().register_callback(str(scratch))
    try:
        with torch.profiler.profile(**kwargs):
            et.start()
            costs["et_kineto"] = loop()
            et.stop()
    finally:
        et.unregister_callback()
        if scratch.exists():
            scratch.unlink()  # the calibration's ET is not a trace of the run
    return costs


def capture(args):
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        sys.exit("capture_traces.py: torch is not installed (use --dry-run or --check without it)")
    try:
        from torch.profiler import ExecutionTraceObserver
    except ImportError:
        sys.exit(f"capture_traces.py: torch {torch.__version__} has no "
                 "torch.profiler.ExecutionTraceObserver (PyTorch 2.0 or later is needed)")
    import inspect

    rank, world, local_rank = world_from_env(args)
    started = time.time()

    # Can the profiler drive the observer (execution_trace_observer=, PyTorch 2.3+)?
    accepts_et = "execution_trace_observer" in inspect.signature(torch.profiler.profile).parameters
    et_mode = args.et_mode
    if et_mode == "auto":
        et_mode = "profiler" if accepts_et else "manual"
    if et_mode == "profiler" and not accepts_et:
        sys.exit(f"capture_traces.py: torch {torch.__version__}: torch.profiler.profile has no "
                 "execution_trace_observer argument; use --et-mode manual")

    # --- device and process group --------------------------------------------------------------
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if use_cuda and not torch.cuda.is_available():
        sys.exit("capture_traces.py: --device cuda but torch sees no GPU")
    if use_cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    gpus = torch.cuda.device_count() if use_cuda else 0
    backend, backend_note = choose_backend(args.backend, use_cuda, gpus, local_ranks,
                                           args.parallel)
    if backend_note and rank == 0:
        log(rank, backend_note)
    if args.parallel == "fsdp" and not use_cuda:
        sys.exit("capture_traces.py: --parallel fsdp needs GPUs (use ddp on CPU)")
    if args.parallel != "none" or world > 1:
        # Run directly (not under torchrun): a process group of one, so that the traces still
        # carry the process-group metadata and DDP's collectives. With --parallel none under
        # torchrun the group only serves the final barrier.
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ.setdefault("RANK", str(rank))
        os.environ.setdefault("WORLD_SIZE", str(world))
        # The process group must exist before the profiler starts: Kineto writes its
        # distributedInfo (backend, rank, world_size, pg_config) when the trace starts, and the
        # ET's process-group node lists the groups that exist when the observer starts.
        dist.init_process_group(backend=backend)
        rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        log(rank, f"torch {torch.__version__}, {world} rank(s), {device.type} + "
                  f"{backend if dist.is_initialized() else 'no process group'}")
        if not use_cuda:
            log(rank, "no GPU: the device traces will hold CPU ops only (no kernels, no NCCL)")

    # --- model, optimizer, data ------------------------------------------------------------------
    torch.manual_seed(1234)  # same initial weights on every rank
    model = build_model(torch, args).to(device)
    if args.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[device.index] if use_cuda else None)
    elif args.parallel == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        model = FSDP(model, device_id=device.index, use_orig_params=True)
    if args.compile:
        model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = make_batches(torch, args, rank, pin=use_cuda)

    def train_step(step):
        x, y = batches[step % len(batches)]
        # `## name ##` user annotations are RecordFunctions like any op: they appear in both
        # traces with the same rf_id and make the traces easier to read.
        with torch.profiler.record_function("## data ##"):
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
        with torch.profiler.record_function("## forward ##"):
            logits = model(x)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        with torch.profiler.record_function("## backward ##"):
            loss.backward()  # DDP/FSDP launch their collectives from here
        with torch.profiler.record_function("## optimizer ##"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        if use_cuda:
            # Every GPU op of the step ends before the next step (and before the profiler
            # stops after the recorded step), so no kernel straddles the window.
            torch.cuda.synchronize()
        return loss

    # --- output paths --------------------------------------------------------------------------
    out = Path(args.out)
    rank_dir = out / f"rank{rank}"
    rank_dir.mkdir(parents=True, exist_ok=True)
    et_path = rank_dir / HOST_FILE      # plain JSON while recording; gzip'd at the end
    kineto_path = rank_dir / DEVICE_FILE
    for stale in (et_path, kineto_path, Path(str(et_path) + ".gz"), Path(str(kineto_path) + ".gz")):
        if stale.exists():
            stale.unlink()

    # --- the two observers -----------------------------------------------------------------------
    et = ExecutionTraceObserver().register_callback(str(et_path))
    if not hasattr(ExecutionTraceObserver, "_record_pg_config"):
        # Older observers do not record the process groups themselves: do it right after start.
        original_start = et.start

        def start_and_record_process_groups():
            original_start()
            record_process_groups(torch, rank)

        et.start = start_and_record_process_groups

    activities = [torch.profiler.ProfilerActivity.CPU]
    if use_cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    profiler_kwargs = dict(
        activities=activities,
        schedule=torch.profiler.schedule(**schedule_of(args)),
        on_trace_ready=lambda p: p.export_chrome_trace(str(kineto_path)),
        record_shapes=True,
    )
    if use_cuda and not args.no_sync_events:
        try:
            # cuda_sync records: which stream a cudaStreamSynchronize / cudaStreamWaitEvent
            # refers to (chakraflow's sync dependencies use them). Experimental in PyTorch.
            profiler_kwargs["experimental_config"] = torch._C._profiler._ExperimentalConfig(
                enable_cuda_sync_events=True
            )
        except (AttributeError, TypeError):
            if rank == 0:
                log(rank, "this PyTorch cannot record cuda_sync events; continuing without")
    if et_mode == "profiler":
        # The profiler calls et.start() when it starts recording (the recorded step) and
        # et.stop() when it stops, and finalizes the ET file when the `with` block exits.
        profiler_kwargs["execution_trace_observer"] = et

    K = args.profile_step
    if rank == 0:
        log(rank, f"recording step {K} (ProfilerStep#{K}) of {args.steps}; ET observer: {et_mode}")
    try:
        with torch.profiler.profile(**profiler_kwargs) as prof:
            for step in range(args.steps):
                loss = train_step(step)
                if et_mode == "manual" and step == K - 1:
                    # Start before prof.step() begins ProfilerStep#K and starts Kineto, so the
                    # observer covers the whole recorded step (and every rf_id the profiler sees).
                    et.start()
                prof.step()  # ends ProfilerStep#step; at step K the profiler stops and saves
                if et_mode == "manual" and step == K:
                    et.stop()
    finally:
        # Writes the process root node and finish_ts: an ET whose observer is never
        # unregistered (a crash, os._exit) is truncated JSON.
        et.unregister_callback()

    if not kineto_path.exists():
        sys.exit(f"capture_traces.py: rank {rank}: the profiler wrote no {kineto_path}")
    if not args.no_gzip:
        gzip_in_place(et_path)
        gzip_in_place(kineto_path)
    host_name, device_name = file_names(args)
    log(rank, f"wrote {rank_dir / host_name} and {rank_dir / device_name} "
              f"(last loss {float(loss):.3f}, {time.time() - started:.1f} s)")

    if not args.no_timing:
        step = args.steps
        timing_path = rank_dir / TIMING_FILE
        # The same step under Kineto alone, each after a warm-up step, --timing-steps times: the
        # fastest is kept (the timings to trust), the others removed.
        timing_kwargs = dict(profiler_kwargs)
        timing_kwargs.pop("execution_trace_observer", None)
        timing_kwargs["schedule"] = torch.profiler.schedule(
            wait=0, warmup=1, active=1, repeat=args.timing_steps)
        exported = []

        def export_timing(p):
            path = rank_dir / f"{TIMING_FILE}.{len(exported)}.tmp"
            p.export_chrome_trace(str(path))
            exported.append(path)

        timing_kwargs["on_trace_ready"] = export_timing
        try:
            with torch.profiler.profile(**timing_kwargs) as prof:
                for _ in range(2 * args.timing_steps):
                    train_step(step)
                    step += 1
                    prof.step()
            if not exported:
                sys.exit(f"capture_traces.py: rank {rank}: the profiler wrote no {timing_path}")
            timing = keep_fastest_timing_trace(exported, timing_path)
        finally:
            for path in exported:  # none is left when it went well (kept: renamed)
                path.unlink(missing_ok=True)
        if not args.no_gzip:
            gzip_in_place(timing_path)
        # The same step with no profiler at all, then what each profiler costs per op.
        sync = torch.cuda.synchronize if use_cuda else (lambda: None)
        times_ms = []
        for _ in range(args.timed_steps):
            t0 = time.perf_counter()
            train_step(step)  # ends with torch.cuda.synchronize() on a GPU
            times_ms.append((time.perf_counter() - t0) * 1000.0)
            step += 1
        costs = calibrate_profiler_costs(torch, device, sync, args, rank_dir, profiler_kwargs)
        record = step_time_record(times_ms, costs, args, timing)
        (rank_dir / STEP_TIME_FILE).write_text(json.dumps(record, indent=1) + "\n")
        log(rank, f"wrote {rank_dir / timing_file_name(args)} and {rank_dir / STEP_TIME_FILE} "
                  f"(unprofiled step {record['unprofiled_step_ms']['median']:.2f} ms median)")

    if dist.is_available() and dist.is_initialized():
        dist.barrier()  # every rank's files are complete before rank 0 checks them
    if rank == 0:
        (out / CONFIG_FILE).write_text(run_config_text(args, world))
        print()
        check_dir(out)
        print()
        print(next_commands(args, world))
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def main(argv=None):
    args = parse_args(argv)
    if args.check:
        return check_dir(args.check)
    if args.dry_run:
        print_plan(args)
        return 0
    capture(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
