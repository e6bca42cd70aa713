"""Fixtures of the Python module's tests (registered with ctest as `python_module`, label
python): the chakraflow binary to compare with, ../shared/data (tests that need it skip loudly
when it is absent), and a small generated trace set that every machine has."""

import os
import pathlib
import subprocess
import warnings

import pytest

import chakraflow as cf

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def binary():
    path = os.environ.get("CHAKRAFLOW_BINARY")
    if not path or not os.path.exists(path):
        pytest.fail("CHAKRAFLOW_BINARY must name the chakraflow binary (ctest sets it)")
    return path


def run_cli(binary, *args, check=True):
    """Runs `chakraflow ARGS`; returns the CompletedProcess (text)."""
    done = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
    if check and done.returncode != 0:
        pytest.fail(f"chakraflow {' '.join(map(str, args))}: exit {done.returncode}\n"
                    f"{done.stderr}")
    return done


@pytest.fixture(scope="session")
def shared_data():
    path = pathlib.Path(os.environ.get("CHAKRAFLOW_SHARED_DATA", SOURCE_DIR / "../shared/data"))
    if not path.is_dir():
        message = f"SKIPPED: {path} is absent: the tests on real traces do not run"
        warnings.warn(message)
        print(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def synth_set(tmp_path_factory):
    """A 2-rank generated set, linked and converted by the module: rank{r}/host_et.json,
    rank{r}/kineto.json, et_plus.{r}.json, trace.{r}.et."""
    out = tmp_path_factory.mktemp("synth")
    cf.synth(out, ranks=2, iterations=1, scale=0.5, seed=3)
    for r in range(2):
        cf.link(out / f"rank{r}/host_et.json", out / f"rank{r}/kineto.json",
                out / f"et_plus.{r}.json", rank=r)
        cf.convert(out / f"et_plus.{r}.json", out / f"trace.{r}.et")
    return out
