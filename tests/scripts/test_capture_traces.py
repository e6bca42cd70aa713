"""scripts/capture_traces.py without torch: the backend choice (NCCL needs one GPU per rank) and
the dry-run plan. Registered with ctest as `capture_script` (label scripts)."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "capture_traces.py"


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
