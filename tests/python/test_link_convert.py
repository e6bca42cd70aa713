"""cf.link / cf.convert / cf.synth write what the chakraflow binary writes."""

import pathlib
import threading

import pytest

import chakraflow as cf
from conftest import run_cli

PAIRS = ["simple_add", "dlrm_8rank/rank0"]


def test_version_is_the_binarys(binary):
    printed = run_cli(binary, "--version").stdout.split()
    assert printed[0] == "chakraflow"
    assert cf.__version__ == printed[1]


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("kineto", ["modern", "legacy"])
def test_link_writes_the_binarys_bytes(binary, shared_data, tmp_path, pair, kineto):
    host = shared_data / "pairs" / pair / "host_et.json.gz"
    device = shared_data / "pairs" / pair / f"kineto.{kineto}.json.gz"
    ours = tmp_path / "py.json"
    theirs = tmp_path / "cli.json"
    rep = cf.link(host, device, ours, rank=0)
    done = run_cli(binary, "link", "--chakra-host-trace", host, "--chakra-device-trace", device,
                   "--output-file", theirs, "--rank", 0)
    assert ours.read_bytes() == theirs.read_bytes()
    # The report is the CLI's: its text is what the binary printed, its counts the summary's.
    assert rep["report"] in done.stderr
    assert f"{rep['et_plus_nodes']}" in done.stderr
    assert rep["mode"] == ("rf_id" if kineto == "modern" else "sequence")
    assert rep["host_ops_linked"] > 0
    for kind, entry in rep["problems"].items():
        assert kind in done.stderr and entry["count"] > 0


def test_link_and_convert_on_generated_traces(binary, synth_set, tmp_path):
    host, device = synth_set / "rank1/host_et.json", synth_set / "rank1/kineto.json"
    run_cli(binary, "link", "--chakra-host-trace", host, "--chakra-device-trace", device,
            "--output-file", tmp_path / "cli.json", "--rank", 1, "--compat", "chakra")
    rep = cf.link(host, device, tmp_path / "py.json", rank=1, compat="chakra", threads=1)
    assert (tmp_path / "py.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert rep["rank"] == 1 and rep["gpu_ops_linked"] > 0

    done = run_cli(binary, "convert", "--input", synth_set / "et_plus.1.json", "--output",
                   tmp_path / "cli.et")
    conv = cf.convert(synth_set / "et_plus.1.json", tmp_path / "py.et")
    assert (tmp_path / "py.et").read_bytes() == (tmp_path / "cli.et").read_bytes()
    assert f"{conv['input_nodes']} nodes read, {conv['output_nodes']} written" in done.stderr
    for kind, entry in conv["warnings"].items():
        assert f"note: {entry['count']} x {kind}" in done.stderr


def test_convert_writes_the_binarys_bytes(binary, shared_data, tmp_path):
    et_plus = shared_data / "pairs/dlrm_8rank/rank0/reference/et_plus.modern.json.gz"
    for compat in ("default", "chakra"):
        run_cli(binary, "convert", "--input", et_plus, "--output", tmp_path / "cli.et",
                "--compat", compat)
        cf.convert(et_plus, tmp_path / "py.et", compat=compat)
        assert (tmp_path / "py.et").read_bytes() == (tmp_path / "cli.et").read_bytes(), compat


def test_synth_writes_the_binarys_files(binary, tmp_path):
    cf.synth(tmp_path / "py", ranks=2, iterations=1, scale=0.2, seed=5, gzip=True)
    run_cli(binary, "synth", "--out", tmp_path / "cli", "--ranks", 2, "--iterations", 1,
            "--scale", 0.2, "--seed", 5, "--gzip")
    files = sorted(p.relative_to(tmp_path / "cli") for p in (tmp_path / "cli").rglob("*.gz"))
    assert len(files) == 4
    for f in files:
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f


def test_read_et_plus_has_every_node(synth_set):
    rep = cf.link(synth_set / "rank0/host_et.json", synth_set / "rank0/kineto.json",
                  synth_set / "again.json.gz")
    nodes = cf.read_et_plus(synth_set / "again.json.gz")
    assert len(nodes) == rep["et_plus_nodes"]
    assert {"id", "name"} <= set(nodes[0])


def test_two_links_in_two_threads_overlap(synth_set, tmp_path):
    """The GIL is released while linking: two calls from two Python threads run at once. Each
    report says when its work ran (time.monotonic's clock, taken without the GIL); with the GIL
    held the second call could only start after the first ended."""
    reports = [None, None]
    barrier = threading.Barrier(2)

    def work(r):
        barrier.wait()
        rank = synth_set / f"rank{r}"
        reports[r] = cf.link(rank / "host_et.json", rank / "kineto.json",
                             tmp_path / f"et_plus.{r}.json", threads=1)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a, b = reports
    assert a is not None and b is not None
    overlap = min(a["finished"], b["finished"]) - max(a["started"], b["started"])
    print(f"link calls: {a['finished'] - a['started']:.3f} s and "
          f"{b['finished'] - b['started']:.3f} s, overlapping {overlap:.3f} s")
    assert overlap > 0


def test_bad_input_raises_error_naming_the_file(binary, tmp_path):
    bad = tmp_path / "bad_host.json"
    bad.write_text('{"schema": "1.0.2", "nodes": [{"id": 1,')
    device = tmp_path / "kineto.json"
    device.write_text('{"traceEvents": []}')
    with pytest.raises(cf.Error) as caught:
        cf.link(bad, device, tmp_path / "out.json")
    assert str(bad) in str(caught.value)
    done = run_cli(binary, "link", "--chakra-host-trace", bad, "--chakra-device-trace", device,
                   "--output-file", tmp_path / "out.json", check=False)
    assert done.returncode == 1
    assert f"chakraflow link: error: {caught.value}" in done.stderr
    assert not (tmp_path / "out.json").exists()

    with pytest.raises(cf.Error) as caught:
        cf.convert(bad, tmp_path / "out.et")
    assert str(bad) in str(caught.value)
    with pytest.raises(cf.Error, match="missing.json"):
        cf.convert(tmp_path / "missing.json", tmp_path / "out.et")
    assert isinstance(caught.value, Exception)


def test_bad_arguments_raise_value_error(synth_set, tmp_path):
    with pytest.raises(ValueError, match="mode"):
        cf.link(synth_set / "rank0/host_et.json", synth_set / "rank0/kineto.json",
                tmp_path / "o.json", mode="guess")
    with pytest.raises(ValueError):
        cf.convert(synth_set / "et_plus.0.json", synth_set / "et_plus.0.json")
    with pytest.raises(ValueError):
        cf.synth(tmp_path, ranks=0)


def test_link_with_a_timing_trace_writes_the_binarys_bytes(binary, shared_data, tmp_path):
    suite = shared_data / "pt211_h200" / "suite" / "mlp_b64"
    if not suite.exists():
        pytest.skip(f"SKIPPED: {suite} is absent")
    host, timing = suite / "et" / "host_et.json.gz", suite / "kineto_only" / "kineto.json.gz"
    step_time = suite / "kineto_only" / "step_time.json"
    report = cf.link(host, None, tmp_path / "py.json", timing=timing, step_time=step_time)
    run_cli(binary, "link", "--chakra-host-trace", host, "--timing-trace", timing,
            "--step-time", step_time, "--output-file", tmp_path / "cli.json")
    assert (tmp_path / "py.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert report["mode"] == "sequence"
    overhead = report["profiler_overhead"]
    assert overhead["removed"] and overhead["recorded_with"] == "kineto"
    assert overhead["step_us"] < overhead["recorded_step_us"]
    assert overhead["unprofiled_step_us"]["n"] == 20
    with pytest.raises(ValueError):
        cf.link(host, None, tmp_path / "x.json")  # neither a device nor a timing trace
    with pytest.raises(ValueError):
        cf.link(host, None, tmp_path / "x.json", timing=timing, mode="rf_id")
