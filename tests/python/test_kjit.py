"""kjit's Python package on this machine's NVRTC: emit, compile, a compile-only sweep as a
DataFrame, first_call, the %%kjit magic and the errors with no GPU; with one (on the H200), runs
and kernels called on PyTorch tensors. A test that needs what this machine lacks says so as it
skips (pytest -rs shows the reasons)."""
import json
import os
import pathlib
import re
import signal
import subprocess

import pytest

import kjit

CONFIGS = pathlib.Path(os.environ.get("KJIT_SOURCE_DIR", pathlib.Path(__file__).parents[2])) / "configs"


@pytest.fixture
def session(tmp_path):
    return kjit.Session(cache_dir=str(tmp_path / "cache"))


def test_emit_is_the_generated_cuda(session):
    source = session.emit(CONFIGS / "softmax.json")
    assert 'extern "C" __global__' in source
    assert "kjit_block = 256," in source  # 4096 columns: the auto rule's block
    assert "kjit_block = 512," in session.emit(CONFIGS / "softmax.json", set={"shape": [8, 32768], "dtype": "bfloat16"})


def test_a_shipped_config_by_name_from_any_folder(session, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the repository: the package's own configs
    assert {"softmax", "hidden_layer", "tune_softmax"} <= set(kjit.shipped_configs())
    assert session.emit("softmax") == session.emit(CONFIGS / "softmax.json")
    assert session.emit("softmax.json") == session.emit(CONFIGS / "softmax.json")
    with pytest.raises(kjit.ConfigError, match="no_such_config: cannot open"):
        session.emit("no_such_config")


def test_compile_a_path_a_dict_and_json_text(session):
    first = session.compile(CONFIGS / "softmax.json", set={"dtype": "bfloat16"})
    assert first.record["dtype"] == "bfloat16"
    assert first.record["status"] == "ok"
    assert first.record["cache"] == "miss"
    assert first.phases["nvrtc"] > 0 and first.phases["ptx_to_cubin"] > 0
    assert first.kernel == {}  # compiled, not run
    config = json.loads((CONFIGS / "softmax.json").read_text())
    config["dtype"] = "bfloat16"
    again = session.compile(config)
    assert again.record["cache"] == "hit"  # the same kernel, from the session's cache
    assert "nvrtc" not in again.phases
    assert session.compile(json.dumps(config)).record["variant"] == first.record["variant"]
    frame = first.to_pandas()
    assert len(frame) == 1 and frame["dtype"][0] == "bfloat16"
    # Shown as the command prints it (its variant, each phase with its share); the report's "<"
    # (a config given as a dict is "<python config>") is escaped in the notebook's HTML.
    assert first.record["variant"] in first.report and re.search(r"(?i)nvrtc.* %", first.report)
    assert "(<python config>)" in again.report and "(&lt;python config&gt;)" in again._repr_html_()


def test_compile_only_sweep_is_a_dataframe_with_its_axes(session):
    frame = session.sweep(CONFIGS / "sweep_hidden_layer.json", set={"sweep": {"dtype": ["float32", "float64"]}},
                          compile_only=True)
    assert len(frame) == 2
    assert list(frame["sweep_dtype"]) == ["float32", "float64"]
    assert set(frame["status"]) == {"ok"}


def test_config_mistakes_raise_config_error_with_the_commands_line(session):
    with pytest.raises(kjit.ConfigError) as caught:
        session.compile(CONFIGS / "softmax.json", set={"launch.block": 33})
    assert "launch.block: expected a multiple of 32" in str(caught.value)
    assert isinstance(caught.value, kjit.Error)
    with pytest.raises(kjit.ConfigError, match="<python config>:1:4: invalid JSON"):
        session.emit("{ not json")
    with pytest.raises(kjit.ConfigError, match="launch"):
        session.emit(CONFIGS / "softmax.json", set={"launch": "tuned"})


def test_a_run_passes_on_a_gpu_and_raises_error_without_one(session):
    try:
        result = session.run(CONFIGS / "softmax.json", set={"shape": [64, 1024]})
    except kjit.ConfigError as e:
        pytest.fail(f"a run without a GPU is not a config mistake: {e}")
    except kjit.Error as e:
        assert e.kind == "driver"
        assert str(e).startswith("no GPU to run on (")
    else:
        assert result.record["status"] == "PASS"
        assert result.kernel["cold"]["median"] > 0
        assert result.check["mismatches"] == 0


def test_sass_is_the_commands_text_and_compares_two_variants(session):
    listing = session.sass(CONFIGS / "hidden_layer.json")
    assert listing.startswith("// hidden_layer_fused: ")
    assert " | extern \"C\" __global__ void hidden_layer_fused(" in listing
    mix = session.sass(CONFIGS / "mlp_layer.json", set={"launch.rung": "mma"}, mix=True, kernel="matmul")
    assert "tensor-core products" in mix
    diff = session.sass(CONFIGS / "hidden_layer.json", diff_set={"stages[2].formula": "exp"})
    assert "opcodes that changed (A → B):" in diff and "  MUFU.EX2 " in diff
    with pytest.raises(kjit.ConfigError, match="--kernel nothing: no kernel of hidden_layer"):
        session.sass(CONFIGS / "hidden_layer.json", kernel="nothing")


def test_metrics_and_the_roofline_of_a_result(session):
    with pytest.raises(kjit.ConfigError, match=r"metrics='dram': expected one of memory, compute, stalls, all or True"):
        session.run(CONFIGS / "softmax.json", metrics="dram")
    with pytest.raises(kjit.ConfigError, match=r"metrics='dram': expected one of"):
        session.sweep(CONFIGS / "sweep_softmax.json", metrics="dram")  # a sweep reads them per point
    result = kjit.Result({"metric_dram_read_bytes": 64.0, "metric_l2_hit_rate_pct": 50.5, "arithmetic_intensity": 0.25,
                          "roof_bound": "memory", "percent_of_roof": 94.0, "max_abs_error": 0.0})
    assert result.metrics == {"dram_read_bytes": 64.0, "l2_hit_rate_pct": 50.5}
    assert result.roofline["roof_bound"] == "memory"
    assert result.roofline["percent_of_roof"] == 94.0
    assert result.roofline["flops_ceiling_tflops"] is None


def test_a_missing_config_file_is_a_config_error(session):
    with pytest.raises(kjit.ConfigError, match="does_not_exist.json: cannot open"):
        session.compile(CONFIGS / "does_not_exist.json")


def test_trace_writes_the_spans_of_its_block_only(session, tmp_path):
    with kjit.trace(tmp_path / "first.json"):
        session.compile(CONFIGS / "softmax.json")
    with kjit.trace(tmp_path / "second.json"):
        session.emit(CONFIGS / "softmax.json")
    spans = [{e["name"] for e in json.loads((tmp_path / name).read_text())["traceEvents"] if e["ph"] == "X"}
             for name in ("first.json", "second.json")]
    assert {"codegen", "cache_lookup"} <= spans[0]
    assert "codegen" not in spans[1]  # emit plans without timing it, and the first block's spans are gone


def test_trace_never_replaces_a_config_it_read(session, tmp_path):
    config = tmp_path / "softmax.json"
    config.write_text((CONFIGS / "softmax.json").read_text())
    before = config.read_text()
    with pytest.raises(kjit.ConfigError, match="which kjit reads"):
        with kjit.trace(config):
            session.emit(config)
    assert config.read_text() == before


def test_set_takes_numpy_numbers_and_refuses_the_rest_as_config_errors(session):
    np = pytest.importorskip("numpy")
    source = session.emit(CONFIGS / "hidden_layer.json", set={"n": np.int64(1000), "launch.block": np.array(128)})
    assert "hidden_layer" in source
    assert session.emit(CONFIGS / "softmax.json", set={"shape": np.zeros((8, 64)).shape}) == \
        session.emit(CONFIGS / "softmax.json", set={"shape": [8, 64]})
    for bad in ({"n": object()}, {"n": {1, 2}}, ["n=1000"]):
        with pytest.raises(kjit.ConfigError):
            session.emit(CONFIGS / "hidden_layer.json", set=bad)


def test_arguments_of_the_wrong_type_are_config_errors_naming_the_argument(session, tmp_path):
    cases = [
        (lambda: kjit.Session(device=1.5), "device: expected a GPU's index (an int), got float"),
        (lambda: kjit.Session(cache_dir=5), "cache_dir: expected a folder's path, got int"),
        (lambda: session.emit(5), "config: expected a path, a JSON text or a dict, got int"),
        (lambda: session.emit(None), "got NoneType"),
        (lambda: session.emit(b"{}"), "got bytes"),
        (lambda: session.sweep(CONFIGS / "sweep_hidden_layer.json", compile_only=True, progress=5),
         "progress: expected True, False or a callable(done, total), got int"),
        (lambda: session.emit({"name": "x"}, base=5), "base: expected a folder's path, got int"),
        (lambda: session.emit(CONFIGS / "softmax.json", base=tmp_path), "base: for a dict or JSON text config"),
        (lambda: kjit.first_call(CONFIGS / "softmax.json", repeat="5"), "repeat: expected a count (an int), got str"),
        (lambda: kjit.trace(5).__enter__(), "trace: expected a file's path, got int"),
        (lambda: kjit.trace(None).__enter__(), "trace: expected a file's path, got NoneType"),
    ]
    for call, says in cases:
        with pytest.raises(kjit.ConfigError, match=re.escape(says)):
            call()
    assert kjit.Session(device=0, cache_dir=tmp_path / "cache") is not None  # a Path is a path


def test_a_dict_configs_input_files_are_found_in_base_or_the_working_folder(session, tmp_path, monkeypatch):
    np = pytest.importorskip("numpy")
    np.save(tmp_path / "g.npy", np.arange(12, dtype=np.float32))
    config = {"name": "b", "inputs": {"a": {"fill": "file", "path": "g.npy"}}, "stages": [{"op": "map", "input": "a", "expr": "x * 2"}]}
    assert "b_fused" in session.emit(config, base=tmp_path)
    assert "b_fused" in session.emit(json.dumps(config), base=str(tmp_path))
    with pytest.raises(kjit.ConfigError, match="g.npy: no such file"):
        session.emit(config)  # the working folder's: not there
    monkeypatch.chdir(tmp_path)
    assert "b_fused" in session.emit(config)


def test_version():
    assert kjit.__version__.count(".") == 2


def test_a_compile_only_sweep_reports_progress_and_keeps_its_rows(session):
    seen, compiles = [], []
    frame = session._session.sweep(str(CONFIGS / "sweep_hidden_layer.json"), ['sweep={"dtype":["float32","float64"]}'],
                                   True, lambda done, total: seen.append((done, total)),
                                   compiled=lambda done, total: compiles.append((done, total)))
    assert compiles == [(0, 2), (1, 2), (2, 2)]  # its two distinct sources, before the points
    assert seen == [(1, 2), (2, 2)]
    assert frame[1] is False  # not interrupted
    # The bars the notebook shows: one stage at a time, each closed when it is done.
    shown = []

    class Bar:
        def __init__(self, total, unit, desc, leave):
            self.n, self.total = 0, total
            shown.append([desc, unit, total])

        def update(self, k):
            self.n += k

        def close(self):
            shown[-1].append(self.n)
    bars = kjit._Bars(Bar)
    bars.compiled(0, 2), bars.compiled(1, 2), bars.compiled(2, 2), bars(1, 3), bars(3, 3)
    assert shown == [["kjit compile", "source", 2, 2], ["kjit sweep", "point", 3, 3]]
    rows = session.sweep(CONFIGS / "sweep_hidden_layer.json", set={"sweep": {"dtype": ["float32"]}},
                         compile_only=True, progress=False)
    assert session.last_sweep is rows


def test_ctrl_c_stops_a_sweep_after_the_points_in_flight_and_keeps_their_rows(session):
    def press_ctrl_c(done, total):
        if done == 1:
            os.kill(os.getpid(), signal.SIGINT)
    axes = {"sweep": {"dtype": ["float32", "float64"], "fusion": ["fused", "separate"]}}
    with pytest.raises(KeyboardInterrupt, match="interrupted after 1 points"):
        session.sweep(CONFIGS / "sweep_hidden_layer.json", set=axes, compile_only=True, progress=press_ctrl_c)
    assert len(session.last_sweep) == 1
    # Python's own handler is back: the next sweep runs to the end.
    assert len(session.sweep(CONFIGS / "sweep_hidden_layer.json", set=axes, compile_only=True, progress=False)) == 4


def test_first_call_is_a_dataframe_per_start_state(tmp_path):
    frame = kjit.first_call(CONFIGS / "hidden_layer.json", set={"n": 4096}, repeat=1)
    assert len(frame) >= 2
    assert frame["first_call_state"].is_unique
    # Every state is a fresh process but the second call in one, which has no process of its own.
    walls = frame.set_index("first_call_state")["process_wall_ms"]
    assert (walls.dropna() > 0).all() and walls.isna().sum() <= 1
    with pytest.raises(kjit.ConfigError, match="launch.block"):
        kjit.first_call(CONFIGS / "hidden_layer.json", set={"launch.block": 33}, repeat=1)


def test_the_cell_magic_compiles_emits_and_names_its_result():
    from kjit import magic
    namespace = {}
    body = (CONFIGS / "softmax.json").read_text()
    shown = magic.cell("--compile --set dtype=bfloat16 --as r", body, namespace)
    assert shown is namespace["r"] and shown.record["status"] == "ok"
    assert list(shown.to_pandas()["dtype"]) == ["bfloat16"]
    # The cell shows kjit's own report, whole: its phases with their share, not 139 columns cut off.
    page = shown._repr_html_()
    assert page.startswith("<pre") and "share" in page and "to_pandas()" in page
    assert str(shown) == shown.report and "compile" in shown.report
    assert magic.cell("--emit", body, namespace) is None
    assert 'extern "C" __global__' in namespace["_kjit"]
    with pytest.raises(kjit.ConfigError, match="expected KEY=VALUE"):
        magic.cell("--compile --set dtype", body, namespace)
    with pytest.raises(kjit.ConfigError, match="%%kjit --bogus"):
        magic.cell("--bogus", body, namespace)


def test_a_kernel_needs_a_gpu_and_says_so_without_one(session):
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        pytest.skip("a GPU is here: test_kernels_on_pytorch_tensors covers kernels")
    with pytest.raises(kjit.Error, match="no GPU to run on"):
        session.kernel(CONFIGS / "hidden_layer.json")


def _torch_on_gpu():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed here")
    if not torch.cuda.is_available():
        pytest.skip("no GPU here")
    return torch


class _DLPackOnly:
    """A tensor seen only through the DLPack protocol, as a CuPy or JAX array is: kjit reads a
    torch.Tensor through DLPack's C exchange table (or its methods), and every other array this way."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def _without_exchange_table(torch):
    """Tensors of a subclass that hides DLPack's C exchange table, as a torch older than the
    table is seen: kjit reads them through their methods."""
    class Plain(torch.Tensor):
        __dlpack_c_exchange_api__ = None
        __c_dlpack_exchange_api__ = None
    return lambda tensor: tensor.as_subclass(Plain)


@pytest.mark.parametrize("seen_as", ["torch.Tensor", "torch.Tensor through its methods", "DLPack"])
def test_kernels_on_pytorch_tensors_match_kjit_run_bit_for_bit(session, tmp_path, seen_as):
    torch = _torch_on_gpu()
    wrap = {"DLPack": _DLPackOnly, "torch.Tensor": lambda tensor: tensor,
            "torch.Tensor through its methods": _without_exchange_table(torch)}[seen_as]
    import numpy
    # The same inputs for both: .npy files that kjit run reads and that become the tensors.
    n = 1 << 20
    rng = numpy.random.default_rng(3)
    numpy.save(tmp_path / "greyscales.npy", numpy.floor(rng.uniform(0, 255, n)).astype(numpy.float32))
    numpy.save(tmp_path / "weights.npy", rng.normal(0.5, 0.1, n).astype(numpy.float32))
    config = json.loads((CONFIGS / "hidden_layer.json").read_text())
    config["n"] = n
    config["inputs"] = {name: {"fill": "file", "path": str(tmp_path / f"{name}.npy")} for name in ("greyscales", "weights")}
    (tmp_path / "config.json").write_text(json.dumps(config))
    done = subprocess.run([os.environ.get("KJIT_COMMAND", "kjit"), "run", str(tmp_path / "config.json"), "--save",
                           str(tmp_path / "saved"), "--skip-ceiling"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = numpy.load(next((tmp_path / "saved").glob("*.npy")))

    k = session.kernel(config)
    assert [name for name, _, _ in k.parameters] == ["greyscales", "weights", "out"]
    greyscales = torch.from_numpy(numpy.load(tmp_path / "greyscales.npy")).cuda()
    weights = torch.from_numpy(numpy.load(tmp_path / "weights.npy")).cuda()
    out = torch.full((n,), float("nan"), device="cuda")
    k(greyscales=wrap(greyscales), weights=wrap(weights), out=wrap(out))
    torch.cuda.synchronize()
    assert numpy.array_equal(out.cpu().numpy().view(numpy.uint32), expected.view(numpy.uint32))
    assert k.verify(greyscales=wrap(greyscales), weights=wrap(weights), out=wrap(out))["status"] == "PASS"
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        out.fill_(float("nan"))
        k(greyscales=wrap(greyscales), weights=wrap(weights), out=wrap(out), stream=side)
    side.synchronize()
    assert numpy.array_equal(out.cpu().numpy().view(numpy.uint32), expected.view(numpy.uint32))
    if seen_as != "DLPack":
        # No stream given (None): PyTorch's current one. Were the kernels on another, they would run
        # during the sleep, before the fill, and the NaNs would stay.
        with torch.cuda.stream(side):
            torch.cuda._sleep(100_000_000)
            out.fill_(float("nan"))
            k(greyscales=wrap(greyscales), weights=wrap(weights), out=wrap(out), stream=None)
        side.synchronize()
        assert numpy.array_equal(out.cpu().numpy().view(numpy.uint32), expected.view(numpy.uint32))

    with pytest.raises(kjit.ConfigError, match="weights: expected a contiguous float32 array of 1048576 elements on "
                                                "CUDA device 0, got float64"):
        k(greyscales=wrap(greyscales), weights=wrap(weights.double()), out=wrap(out))
    with pytest.raises(kjit.ConfigError, match="not in CUDA device memory"):
        k(greyscales=wrap(greyscales), weights=wrap(weights.cpu()), out=wrap(out))
    with pytest.raises(kjit.ConfigError, match="got shape \\[1048575\\]"):
        k(greyscales=wrap(greyscales), weights=wrap(weights[1:]), out=wrap(out))
    with pytest.raises(kjit.ConfigError, match="strided view"):
        k(greyscales=wrap(greyscales), weights=wrap(torch.stack([weights, weights], 1)[:, 0]), out=wrap(out))
    with pytest.raises(kjit.ConfigError, match="missing out: the kernels take greyscales, weights, out"):
        k(greyscales=wrap(greyscales), weights=wrap(weights))
    with pytest.raises(kjit.ConfigError, match="unknown array bias"):
        k(greyscales=wrap(greyscales), weights=wrap(weights), out=wrap(out), bias=wrap(out))
    with pytest.raises(kjit.ConfigError, match="stream: expected an int"):
        k(greyscales=wrap(greyscales), weights=wrap(weights), out=wrap(out), stream="side")
    with pytest.raises(ValueError):  # ConfigError is a ValueError, as Python's own argument errors are
        k(greyscales=wrap(greyscales), weights=wrap(weights), out=wrap(out[:10]))


def test_a_row_kernel_takes_2d_tensors(session):
    torch = _torch_on_gpu()
    k = session.kernel(CONFIGS / "softmax.json", set={"shape": [1000, 4097], "dtype": "bfloat16"})
    scores = torch.randn(1000, 4097, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(scores)
    assert k.verify(logits=scores, out=out)["status"] == "PASS"
    assert torch.allclose(out.float(), torch.softmax(scores.float(), 1), atol=1e-2)
    with pytest.raises(kjit.ConfigError, match=r"array of \[1000, 4097\] .* got shape \[4097000\]"):
        k(logits=scores.flatten(), out=out)


def test_a_run_in_a_session_pays_no_start_up_the_second_time(session):
    _torch_on_gpu()
    first = session.run(CONFIGS / "softmax.json", set={"shape": [64, 1024]})
    second = session.run(CONFIGS / "softmax.json", set={"shape": [64, 1024]})
    assert "context" in first.phases and "context" not in second.phases
    assert second.record["status"] == "PASS"
