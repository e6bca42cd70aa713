"""scripts/capture_traces.py without torch: the backend choice (NCCL needs one GPU per rank) and
the dry-run plan. Registered with ctest as `capture_script` (label scripts)."""

import gzip
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "capture_traces.py"
SUITE = pathlib.Path(os.environ.get("CHAKRAFLOW_SHARED_DATA",
                                    str(SCRIPT.parents[2] / "shared" / "data"))) / "pt211_h200" / "suite"


@pytest.fixture(scope="module")
def capture():
    spec = importlib.util.spec_from_file_location("capture_traces", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_nccl_when_every_rank_has_a_gpu(capture):
    assert capture.choose_backend("auto", True, 8, 8, "ddp") == ("nccl", None)
    assert capture.choose_backend("nccl", True, 2, 1, "fsdp") == ("nccl", None)


def test_two_ranks_on_one_gpu_fall_back_to_gloo_and_say_so(capture):
    backend, note = capture.choose_backend("auto", True, 1, 2, "ddp")
    assert backend == "gloo"
    assert "2 ranks" in note and "1 GPU" in note and "gloo with CUDA tensors" in note


def test_explicit_nccl_or_fsdp_without_enough_gpus_stop_before_nccl_does(capture):
    with pytest.raises(SystemExit, match="--backend nccl: 2 ranks .* 1 GPU.*nproc-per-node"):
        capture.choose_backend("nccl", True, 1, 2, "ddp")
    with pytest.raises(SystemExit, match="--parallel fsdp"):
        capture.choose_backend("auto", True, 1, 4, "fsdp")
    with pytest.raises(SystemExit, match="needs GPUs"):
        capture.choose_backend("nccl", False, 0, 1, "ddp")


def test_cpu_and_explicit_gloo(capture):
    assert capture.choose_backend("auto", False, 0, 4, "ddp") == ("gloo", None)
    assert capture.choose_backend("gloo", True, 8, 2, "ddp") == ("gloo", None)


def test_dry_run_needs_no_torch(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--nproc", "2",
                           "--backend", "gloo", "--out", str(tmp_path / "t")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "ranks: 2" in done.stdout


def test_the_generated_configuration_uses_the_timing_files(capture, tmp_path):
    args = capture.parse_args(["--out", str(tmp_path)])
    text = capture.run_config_text(args, 2)
    assert "timing: rank{rank}/kineto_timing.json.gz" in text
    assert "step_time: rank{rank}/step_time.json" in text
    assert "mode: auto" not in text  # a timing trace is matched by operator order
    without = capture.run_config_text(capture.parse_args(["--no-timing"]), 2)
    assert "timing:" not in without and "mode: auto" in without


def test_step_time_record_has_the_shared_format(capture):
    args = capture.parse_args([])
    record = capture.step_time_record([12.0, 10.0, 11.0, 13.0] * 3,
                                      {"none": 3.9, "kineto": 7.5, "et_kineto": 17.5}, args)
    assert record["unprofiled_step_ms"] == {"median": 11.5, "min": 10.0, "n": 12}
    assert record["profiler_overhead_us_per_op"] == {"none": 3.9, "kineto": 7.5, "et_kineto": 17.5}
    with pytest.raises(SystemExit):
        capture.parse_args(["--timed-steps", "5"])


def chrome_trace(path, step_us, steps=1):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5,
               "dur": 1}]
    for k in range(steps):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{4 + k}",
                       "pid": 1, "tid": 1, "ts": 0, "dur": step_us})
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_the_fastest_timing_step_is_kept_and_the_others_removed(capture, tmp_path):
    paths = [chrome_trace(tmp_path / "t.0.tmp", 30000), chrome_trace(tmp_path / "t.1.tmp", 20000),
             chrome_trace(tmp_path / "t.2.tmp", 25000, steps=2),  # two steps: never kept
             tmp_path / "t.3.tmp"]
    paths[3].write_text('{"traceEvents": [')  # cut short
    target = tmp_path / "kineto_timing.json"
    steps, kept = capture.keep_fastest_timing_trace(paths, target)
    assert (steps, kept) == ([30.0, 20.0, None, None], 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kineto_timing.json"]
    assert json.loads(target.read_text())["traceEvents"][1]["dur"] == 20000
    record = capture.step_time_record([10.0] * 10, {"none": 1, "kineto": 2, "et_kineto": 3},
                                      capture.parse_args([]), (steps, kept))
    assert record["timing_steps_ms"] == [30.0, 20.0, None, None]
    assert record["timing_step_kept"] == 1
    # None usable: an error, and nothing left behind.
    bad = [chrome_trace(tmp_path / "b.0.tmp", 1000, steps=0)]
    with pytest.raises(SystemExit):
        capture.keep_fastest_timing_trace(bad, tmp_path / "other.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kineto_timing.json"]
    with pytest.raises(SystemExit):
        capture.parse_args(["--timing-steps", "0"])
    assert capture.parse_args([]).timing_steps == 3


def suite_rank(tmp_path, timing_workload="mlp_b64", step_time=True):
    if not SUITE.exists():
        pytest.skip(f"SKIPPED: {SUITE} is absent")
    rank = tmp_path / "rank0"
    rank.mkdir()
    for name in ("host_et.json.gz", "kineto.json.gz"):
        (rank / name).symlink_to(SUITE / "mlp_b64" / "et" / name)
    (rank / "kineto_timing.json.gz").symlink_to(SUITE / timing_workload / "kineto_only" / "kineto.json.gz")
    if step_time:
        (rank / "step_time.json").symlink_to(SUITE / "mlp_b64" / "kineto_only" / "step_time.json")
    return tmp_path


def run_check(folder):
    done = subprocess.run([sys.executable, str(SCRIPT), "--check", str(folder)],
                          capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def test_check_verifies_the_timing_files_and_prints_the_ratio(tmp_path):
    rc, out = run_check(suite_rank(tmp_path))
    assert rc == 0, out
    assert "unprofiled step 3.41 ms" in out and "timing step 4.79 ms = 1.40x" in out


def test_check_finds_a_timing_trace_of_other_operators(tmp_path):
    rc, out = run_check(suite_rank(tmp_path, timing_workload="gpt2_b1"))
    assert rc == 1, out
    assert "not the ET step's operators in the same order" in out


def test_check_wants_both_timing_files(tmp_path):
    rc, out = run_check(suite_rank(tmp_path, step_time=False))
    assert rc == 1, out
    assert "go together" in out


def test_check_finds_a_timing_trace_of_two_steps(tmp_path):
    folder = suite_rank(tmp_path)
    timing = folder / "rank0" / "kineto_timing.json.gz"
    with gzip.open(timing.resolve(), "rt") as f:
        doc = json.load(f)
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    doc["traceEvents"].append(dict(steps[0], name="ProfilerStep#9"))
    timing.unlink()
    with gzip.open(timing, "wt") as f:
        json.dump(doc, f)
    rc, out = run_check(folder)
    assert rc == 1, out
    assert "2 recorded steps" in out
