"""cf.read_et agrees with `chakraflow jsonize`, Feeder with `chakraflow feed`, cf.simulate with
`chakraflow simulate --report-json`."""

import base64
import json
import math
import re

import pytest

import chakraflow as cf
from conftest import SOURCE_DIR, run_cli

BAD_ET = SOURCE_DIR / "tests/bad_inputs/et"


def json_attr_value(attr):
    """A jsonized AttributeProto's value (protobuf's JSON mapping) as read_et gives it."""
    (key, value), = [(k, v) for k, v in attr.items() if k not in ("name", "docString")]

    def scalar(kind, v):
        if kind.startswith("bytes"):
            return base64.b64decode(v)
        if kind.startswith(("double", "float")):
            return float(v)
        if kind.startswith("bool") or kind.startswith("string"):
            return v
        return int(v)

    if key.endswith("List"):
        return [scalar(key, v) for v in value.get("values", [])]
    return scalar(key, value)


def same_value(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


def check_against_jsonize(binary, et, tmp_path):
    run_cli(binary, "jsonize", "--input", et, "--output", tmp_path / "et.json", "--quiet")
    doc = json.loads((tmp_path / "et.json").read_text())
    tr = cf.read_et(et)
    assert len(tr) == len(doc["nodes"]) > 0
    meta = doc["globalMetadata"]
    assert tr.metadata["version"] == meta.get("version", "")
    for attr in meta.get("attr", []):
        assert same_value(tr.metadata[attr["name"]], json_attr_value(attr)), attr["name"]
    for node, j in zip(tr, doc["nodes"]):
        assert node.id == int(j.get("id", 0))
        assert node.name == j.get("name", "")
        assert node.type == j.get("type", "INVALID_NODE")
        assert node.duration_micros == int(j.get("durationMicros", 0))
        assert node.start_time_micros == int(j.get("startTimeMicros", 0))
        assert node.data_deps == [int(d) for d in j.get("dataDeps", [])]
        assert node.ctrl_deps == [int(d) for d in j.get("ctrlDeps", [])]
        assert len(node.attrs) == len({a["name"] for a in j.get("attr", [])})
        for attr in j.get("attr", []):
            assert same_value(node.attrs[attr["name"]], json_attr_value(attr)), (node.id, attr)
    return tr


def test_read_et_agrees_with_jsonize(binary, synth_set, tmp_path):
    tr = check_against_jsonize(binary, synth_set / "trace.0.et", tmp_path)
    assert tr[-1].id == tr[len(tr) - 1].id
    assert [n.id for n in tr][:3] == [tr[0].id, tr[1].id, tr[2].id]
    with pytest.raises(IndexError):
        tr[len(tr)]
    with pytest.raises(IndexError):
        tr[-len(tr) - 1]
    assert any(n.type == "COMM_COLL_NODE" for n in tr)
    assert "step_time_us" in tr.metadata


def test_read_et_agrees_with_jsonize_on_chakras_trace(binary, shared_data, tmp_path):
    check_against_jsonize(binary, shared_data / "chakra_et/resnet_ddp_rank0/chakra.0.et", tmp_path)


def test_to_pandas_has_one_row_per_node(synth_set):
    pandas = pytest.importorskip("pandas", reason="python3-pandas is not installed")
    tr = cf.read_et(synth_set / "trace.0.et")
    df = tr.to_pandas()
    assert len(df) == len(tr)
    for column in ("id", "name", "type", "duration_micros", "start_time_micros", "num_data_deps",
                   "num_ctrl_deps", "comm_type", "comm_size", "pg_name", "is_cpu_op"):
        assert column in df.columns
    assert list(df["id"]) == [n.id for n in tr]
    assert list(df["num_data_deps"]) == [len(n.data_deps) for n in tr]
    colls = df[df["type"] == "COMM_COLL_NODE"]
    assert len(colls) > 0 and colls["comm_size"].notna().all()
    assert isinstance(df, pandas.DataFrame)


def cli_feed(binary, et, *flags):
    out = run_cli(binary, "feed", et, *flags, check=False).stdout
    issued = int(re.search(r"nodes issued:\s+(\d+)", out).group(1))
    checksum = re.search(r"checksum ([0-9a-f]{16})", out).group(1)
    state = re.search(r"end state:\s+(\w+)", out).group(1)
    return issued, checksum, state


@pytest.mark.parametrize("ctrl_deps", [False, True])
def test_feeder_issues_like_chakraflow_feed(binary, synth_set, ctrl_deps):
    et = synth_set / "trace.1.et"
    feeder = cf.Feeder(et, window=256, ctrl_deps=ctrl_deps)
    ids = [node.id for node in feeder]
    flags = ["--window", 256] + (["--ctrl-deps"] if ctrl_deps else [])
    issued, checksum, state = cli_feed(binary, et, *flags)
    assert len(ids) == issued == len(cf.read_et(et))
    assert len(set(ids)) == len(ids)
    assert feeder.checksum == checksum
    assert feeder.state == state == "done"


def test_feeder_on_chakras_trace(binary, shared_data):
    et = shared_data / "chakra_et/resnet_ddp_rank0/chakra.0.et"
    feeder = cf.Feeder(et)
    n = sum(1 for _ in feeder)
    assert (n, feeder.checksum, feeder.state) == cli_feed(binary, et)


def test_feeder_by_hand(synth_set):
    et = synth_set / "trace.0.et"
    feeder = cf.Feeder(et)
    seen = []
    while True:
        ready = feeder.issuable()
        if not ready:
            break
        for node in ready:
            seen.append(node.id)
            feeder.complete(node.id)
    assert feeder.state == "done"
    assert sorted(seen) == sorted(n.id for n in cf.read_et(et))
    with pytest.raises(cf.Error):
        feeder.complete(seen[0])  # not in flight


def test_feeder_stalls_with_the_waiting_ids(binary):
    et = BAD_ET / "missing_dep.et"
    feeder = cf.Feeder(et)
    ids = [n.id for n in feeder]
    issued, checksum, state = cli_feed(binary, et)
    assert (len(ids), feeder.checksum, feeder.state) == (issued, checksum, state)
    assert feeder.state == "stalled"
    stall = feeder.stall
    assert stall["waiting_nodes"] > 0 and stall["missing"]
    stderr = run_cli(binary, "feed", et, check=False).stderr
    assert stall["report"] in stderr


def test_bad_et_raises_error_naming_the_file(binary, tmp_path):
    for name in ("truncated.et", "garbage.bin", "node_type_999.et"):
        et = BAD_ET / name
        with pytest.raises(cf.Error) as caught:
            cf.read_et(et)
        assert str(et) in str(caught.value)
    with pytest.raises(cf.Error) as caught:
        list(cf.Feeder(BAD_ET / "truncated.et"))
    assert "truncated.et" in str(caught.value)
    done = run_cli(binary, "feed", BAD_ET / "truncated.et", check=False)
    assert str(caught.value) in done.stderr
    with pytest.raises(cf.Error, match="nothing_here.et"):
        cf.read_et(tmp_path / "nothing_here.et")


def test_simulate_gives_the_binarys_report(binary, synth_set, tmp_path):
    pattern = str(synth_set / "trace.{rank}.et")
    res = cf.simulate(pattern, 2)
    run_cli(binary, "simulate", "--traces", pattern, "--ranks", 2, "--report-json",
            tmp_path / "report.json", "--quiet")
    assert res == json.loads((tmp_path / "report.json").read_text())
    assert [r["state"] for r in res["ranks"]] == ["done", "done"]
    assert all(r["predicted_us"] > 0 and r["measured_us"] > 0 for r in res["ranks"])

    config = SOURCE_DIR / "configs/sim.yaml"
    res = cf.simulate(synth_set / "trace", 2, config=config, threads=1)
    run_cli(binary, "simulate", "--traces", synth_set / "trace", "--ranks", 2, "--config", config,
            "--report-json", tmp_path / "report.json", "--quiet")
    assert res == json.loads((tmp_path / "report.json").read_text())
    with pytest.raises(cf.Error, match="trace.2.et"):
        cf.simulate(pattern, 3)
