"""kjit's Python package on this machine's NVRTC, with no GPU needed: emit, compile, a compile-only
sweep as a DataFrame, and the errors. (Runs on the GPU are checked by the gpu tests.)"""
import json
import os
import pathlib

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


def test_a_missing_config_file_is_a_config_error(session):
    with pytest.raises(kjit.ConfigError, match="does_not_exist.json: cannot open"):
        session.compile(CONFIGS / "does_not_exist.json")


def test_version():
    assert kjit.__version__.count(".") == 2
