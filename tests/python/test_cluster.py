"""kjit beyond one machine, on one machine: a sweep spread over a local Ray cluster of worker
processes (compile-only: no GPU here), one of them killed mid-sweep; cache keys that are the same
in two processes with different folders and toolkit paths; a cache shipped to a fresh folder.
Ray is installed by scripts/setup.sh --test: a missing Ray is a failure here, not a skip."""
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest
import ray

import kjit

CONFIGS = pathlib.Path(os.environ.get("KJIT_SOURCE_DIR", pathlib.Path(__file__).parents[2])) / "configs"

#: 500 points of 4 distinct sources (the block changes the source; the seed only the inputs).
SWEEP = {"sweep": {"seed": list(range(125)), "launch.block": [128, 256, 512, 1024]}}


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of 3 CPUs: three worker processes for a compile-only sweep."""
    ray.init(address="local", num_cpus=3, include_dashboard=False, log_to_driver=False)  # a new one, whatever runs here
    yield
    ray.shutdown()


def _worker_pids():
    """The processes of kjit's Ray workers (Ray titles them ray::_Worker…)."""
    pids = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::_Worker"):
                pids.append(int(entry.name))
        except OSError:
            continue  # a process that ended while we looked
    return pids


def test_a_killed_worker_loses_no_point_and_no_point_is_recorded_twice(cluster, tmp_path):
    session = kjit.Session(cache_dir=tmp_path / "cache")
    killed = []

    def kill_one_worker_after_100_points(done, total):
        if done >= 100 and not killed:
            pids = _worker_pids()
            assert len(pids) == 3, pids
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    out = tmp_path / "rows.json"
    frame = session.sweep(CONFIGS / "sweep_hidden_layer.json", set=SWEEP, compile_only=True, ray=True, workers=3,
                          progress=kill_one_worker_after_100_points, out=out)
    assert killed, "the sweep ended before a worker could be killed"
    assert len(frame) == 500
    assert sorted(frame["sweep_index"]) == list(range(500))  # each point once
    assert set(frame["status"]) == {"ok"}
    assert set(frame["host"]) == {os.uname().nodename}  # each row names where it ran
    written = json.loads(out.read_text())  # the driver, the one writer, wrote them all
    assert [row["sweep_index"] for row in written] == list(range(500))
    # The same rows as one process makes: the same points, variants and sources.
    local = kjit.Session(cache_dir=tmp_path / "cache").sweep(CONFIGS / "sweep_hidden_layer.json", set=SWEEP,
                                                            compile_only=True, progress=False)
    for column in ("sweep_index", "sweep_point", "variant", "cache_key"):
        assert list(frame[column]) == list(local[column]), column


def test_a_bad_point_on_a_worker_raises_the_config_error_a_local_sweep_raises(cluster, tmp_path):
    session = kjit.Session(cache_dir=tmp_path / "cache")
    with pytest.raises(kjit.ConfigError, match="launch.block: expected a multiple of 32"):
        session.sweep(CONFIGS / "sweep_hidden_layer.json", set={"sweep": {"launch.block": [128, 33]}},
                      compile_only=True, ray=True, workers=2, progress=False)
    with pytest.raises(kjit.ConfigError, match="gpu_models: expected 'same' or 'apart'"):
        session.sweep(CONFIGS / "sweep_hidden_layer.json", ray=True, gpu_models="mixed")
    # A constraint skips it: only the allowed points go to the workers, with their own numbers.
    frame = session.sweep(CONFIGS / "sweep_hidden_layer.json",
                          set={"sweep": {"launch.block": [33, 128, 65, 256], "constraints": ["block >= 100"]}},
                          compile_only=True, ray=True, workers=2, progress=False)
    assert list(frame["sweep_index"]) == [1, 3]


def _cache_key(config, cwd, cache_dir, include=None):
    """A bf16 program's cache key, from a fresh process in `cwd` (toolkit headers at `include`)."""
    env = dict(os.environ, HOME=str(cwd))
    if include:
        env["KJIT_CUDA_INCLUDE"] = str(include)
    code = ("import json, sys, kjit\n"
            "r = kjit.Session(cache_dir=sys.argv[2]).compile(sys.argv[1], set={'dtype': 'bfloat16'})\n"
            "print(json.dumps([r.record['cache_key'], r.record['cache']]))")
    done = subprocess.run([sys.executable, "-c", code, str(config), str(cache_dir)], cwd=cwd, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_one_program_has_one_cache_key_in_two_processes_with_other_paths(tmp_path):
    # The second "machine": another working folder, cache, copy of the config, and toolkit path.
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "softmax.json").write_text((CONFIGS / "softmax.json").read_text())
    toolkit_include = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    assert (toolkit_include / "cuda_bf16.h").exists(), toolkit_include
    elsewhere = second / "toolkit-include"
    elsewhere.symlink_to(toolkit_include)
    key_one, status_one = _cache_key(first / "softmax.json", first, first / "cache")
    key_two, status_two = _cache_key(second / "softmax.json", second, second / "cache", include=elsewhere)
    assert (status_one, status_two) == ("miss", "miss")  # each compiled it, in a cache of its own
    assert key_one == key_two


def test_workers_of_different_gpu_models_are_refused_or_kept_apart():
    from kjit import cluster
    workers, abouts = ["a", "b", "c"], [{"gpu": "NVIDIA H200"}, {"gpu": "NVIDIA A100"}, {"gpu": "NVIDIA H200"}]
    with pytest.raises(kjit.ConfigError, match=r"different models \(2 × NVIDIA H200; 1 × NVIDIA A100\)"):
        cluster._group_by_model(workers, abouts, "same")
    assert cluster._group_by_model(workers, abouts, "apart") == {"NVIDIA H200": ["a", "c"], "NVIDIA A100": ["b"]}
    # Each model runs every point: its own batches, all of them.
    work = cluster._Dispatcher({"H200": ["a"], "A100": ["b", "c"]}, list(range(10)), lambda w, batch: (w, tuple(batch)))
    work.fill()
    held = list(work.in_flight.values())
    # Batches of about a quarter of a worker's share: 5 of 2 points for the H200's one worker, 10 of
    # 1 for the A100's two; each worker holds two.
    assert [len(b) for _, model, b in held if model == "H200"] == [2, 2]
    assert [len(b) for _, model, b in held if model == "A100"] == [1, 1, 1, 1]
    assert work.waiting() == (5 - 2) + (10 - 4)


def test_tune_from_python_says_what_it_lacks_here(cluster, tmp_path):
    with pytest.raises(kjit.ConfigError, match="strategy='best': expected auto, exhaustive"):
        kjit.tune(CONFIGS / "tune_softmax.json", strategy="best")
    with pytest.raises(kjit.ConfigError, match="metrics='dram': expected one of"):
        kjit.tune(CONFIGS / "tune_softmax.json", metrics="dram")
    # With counters asked for, the tune reaches the module (which finds no GPU here).
    with pytest.raises(kjit.Error, match="GPU"):
        kjit.tune(CONFIGS / "tune_softmax.json", cache_dir=tmp_path, metrics=True)
    # This machine has no GPU: the tune says so, on one machine or on a cluster of CPUs only.
    with pytest.raises(kjit.Error, match="GPU"):
        kjit.tune(CONFIGS / "tune_softmax.json", cache_dir=tmp_path)
    with pytest.raises(kjit.Error, match="ray: the cluster has no GPU to tune on"):
        kjit.tune(CONFIGS / "tune_softmax.json", cache_dir=tmp_path, ray=True)
