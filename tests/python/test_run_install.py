"""cf.run runs a batch configuration in-process; the installed package imports outside the
build tree."""

import os
import subprocess
import sys

import pytest

import chakraflow as cf


def assert_rows_carry_the_declared_keys(summary):
    """Each rank's dict holds the keys pipeline/run_report.h declares, in its order: the error of a
    failed rank only, nothing but rank and status for a skipped one."""
    fields = cf._chakraflow._run_report_fields()
    assert [f["key"] for f in fields][:2] == ["rank", "status"]
    for row in summary["ranks"]:
        status = row["status"]
        expected = [f["key"] for f in fields
                    if f["presence"] == "always"
                    or (f["presence"] == "if_ran" and status != "skipped")
                    or (f["presence"] == "if_set" and status == "failed")]
        assert list(row) == expected, status


def test_run_returns_the_summary(synth_set, tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(f"""
inputs:
  host: {synth_set}/rank{{rank}}/host_et.json
  device: {synth_set}/rank{{rank}}/kineto.json
stages: [link, convert, simulate]
outputs:
  dir: {tmp_path}/out
""")
    summary = cf.run(config)
    assert summary["ranks_total"] == 2 and summary["ranks_failed"] == 0
    assert [r["status"] for r in summary["ranks"]] == ["ok", "ok"]
    assert_rows_carry_the_declared_keys(summary)
    # The run's .et is what link then convert write.
    assert (tmp_path / "out/trace.0.et").read_bytes() == (synth_set / "trace.0.et").read_bytes()
    again = cf.run(config, resume=True)
    assert again["ranks_skipped"] == 2
    assert_rows_carry_the_declared_keys(again)

    config.write_text(config.read_text().replace("stages:", "stagez:"))
    with pytest.raises(cf.Error, match="run.yaml"):
        cf.run(config)


def test_installed_package_imports_elsewhere(tmp_path):
    build_dir = os.environ.get("CHAKRAFLOW_BUILD_DIR")
    site = os.environ.get("CHAKRAFLOW_PYTHON_INSTALL_DIR")
    cmake = os.environ.get("CMAKE_COMMAND", "cmake")
    if not build_dir or not site:
        pytest.fail("CHAKRAFLOW_BUILD_DIR and CHAKRAFLOW_PYTHON_INSTALL_DIR must be set "
                    "(ctest sets them)")
    prefix = tmp_path / "prefix"
    subprocess.run([cmake, "--install", build_dir, "--component", "python", "--prefix", prefix],
                   check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(prefix / site)
    code = "import chakraflow as cf; print(cf.__file__); print(cf.__version__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    file, version = done.stdout.split()
    assert file.startswith(str(prefix)) and version == cf.__version__
    assert (prefix / site / "chakraflow/__init__.pyi").exists()


def test_run_failures_raise_with_their_reason(synth_set, tmp_path):
    traces = tmp_path / "traces"
    for r in (0, 1):
        (traces / f"rank{r}").mkdir(parents=True)
        for name in ("host_et.json", "kineto.json"):
            text = (synth_set / f"rank{r}" / name).read_bytes()
            if r == 1 and name == "kineto.json":
                text = text[: len(text) // 2]  # rank 1's device trace is cut
            (traces / f"rank{r}" / name).write_bytes(text)
    config = tmp_path / "run.yaml"
    config.write_text(f"""
inputs:
  host: {traces}/rank{{rank}}/host_et.json
  device: {traces}/rank{{rank}}/kineto.json
stages: [link, convert]
outputs:
  dir: {tmp_path}/out
""")
    with pytest.raises(cf.Error, match="rank 1: .*kineto.json") as failed:
        cf.run(config)
    assert failed.value.summary["ranks_failed"] == 1
    assert [r["status"] for r in failed.value.summary["ranks"]] == ["ok", "failed"]
    assert_rows_carry_the_declared_keys(failed.value.summary)

    # A simulator configuration that does not load stops the run before any work: the error
    # names it (not a summary.json left by the run before).
    (tmp_path / "sim.yaml").write_text("mode: sideways\n")
    config.write_text(config.read_text().replace(
        "stages: [link, convert]", "stages: [link, convert, simulate]\nsimulate:\n  config: sim.yaml"))
    with pytest.raises(cf.Error, match="sim.yaml") as unusable:
        cf.run(config)
    assert getattr(unusable.value, "summary", None) is None
