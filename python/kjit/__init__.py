"""kjit from Python: the same library as the kjit command, on the same configs.

    import kjit
    s = kjit.Session()
    print(s.emit("softmax"))                               # a shipped config by name (kjit.shipped_configs())
    print(s.emit("configs/softmax.json"))                 # or a file: the generated CUDA
    r = s.compile("configs/softmax.json", set={"dtype": "bfloat16"})
    r.phases                                              # phase -> ms
    df = s.sweep("configs/sweep_softmax.json", compile_only=True)   # a pandas.DataFrame
    k = s.kernel("configs/hidden_layer.json")             # kjit's kernels, on your arrays
    k(greyscales=a, weights=b, out=c)                     # PyTorch, CuPy, JAX, Numba device arrays

A config is a path, a JSON string or a dict; `set` maps key paths to values as --set does. A
config file's relative input paths mean files beside it; a dict's or JSON string's mean files in
the working folder, or in `base=` where given.
Mistakes in a config or an argument raise ConfigError (the command exits 2 for them); failures
while working (a compile error, no GPU, a failed check) raise Error (exit 1).
"""
import contextlib
import json
import operator
import os
import shutil
import subprocess
import sys
import tempfile

from . import _kjit

__version__ = _kjit.version


class Error(Exception):
    """A failure while working: a compile error, a CUDA error or no GPU, a failed check."""

    def __init__(self, message, kind="error"):
        super().__init__(message)
        self.kind = kind


class ConfigError(Error, ValueError):
    """A mistake in a config, a `set` value or an argument (an array of the wrong dtype or
    shape): the line the command would print."""


_kjit.set_error_types(Error, ConfigError)  # the module raises these itself


def _number(value):
    """JSON's default for what NumPy and PyTorch hand out as numbers: a scalar (np.int64(1000),
    a 0-d array or tensor) as its Python number, an array's shape or a 1-d array as a list."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(type(value).__name__)


def _json(value, where):
    """`value` as JSON text; what JSON cannot hold is a ConfigError naming `where`."""
    try:
        return json.dumps(value, default=_number, allow_nan=True)
    except (TypeError, ValueError, RecursionError) as e:
        what = "nested too deeply" if isinstance(e, RecursionError) else f"a value JSON cannot hold ({e})"
        raise ConfigError(f"{where}: expected numbers, strings, lists and dicts, got {what}", "config") from None


def _inputs_under(config, base):
    """The config (a dict) with its inputs' relative paths joined to the folder `base`."""
    inputs = config.get("inputs")
    if not isinstance(inputs, dict):
        return config
    moved = {name: dict(spec, path=os.path.join(base, spec["path"]))
             if isinstance(spec, dict) and isinstance(spec.get("path"), str) else spec for name, spec in inputs.items()}
    return dict(config, inputs=moved)


#: The configs shipped with kjit (configs/ of the repository), inside the package.
CONFIGS = os.path.join(os.path.dirname(__file__), "configs")


def shipped_configs():
    """The names of the configs shipped in the package, each usable as a config: s.run("softmax")."""
    return sorted(name[:-len(".json")] for name in os.listdir(CONFIGS) if name.endswith(".json"))


def _shipped(config):
    """A bare name ("softmax", no folder, no file of that name here) as the shipped config's path."""
    if os.sep in config or config.lstrip().startswith("{") or os.path.exists(config):
        return config
    path = os.path.join(CONFIGS, config if config.endswith(".json") else config + ".json")
    return path if os.path.isfile(path) else config  # otherwise the module says the file is missing


def _config_text(config, base=None):
    """What the module takes: a config file's path (a bare name is a shipped config's), or JSON
    text, whose relative input paths mean files in `base` (made absolute here) or, without one,
    in the working folder."""
    if isinstance(config, os.PathLike):
        config = os.fspath(config)
    if isinstance(config, str):
        config = _shipped(config)
        if base is None:
            return config
        if not config.lstrip().startswith("{"):
            raise ConfigError("base: for a dict or JSON text config; a config file's inputs are found beside it", "config")
        try:
            config = json.loads(config)
        except (ValueError, RecursionError):
            return config  # the module says where the JSON is wrong
    if not isinstance(config, dict):
        raise ConfigError(f"config: expected a path, a JSON text or a dict, got {type(config).__name__}", "config")
    if base is not None:
        if not isinstance(base, (str, os.PathLike)):
            raise ConfigError(f"base: expected a folder's path, got {type(base).__name__}", "config")
        config = _inputs_under(config, os.path.abspath(os.fspath(base)))
    return _json(config, "config")


@contextlib.contextmanager
def _arguments(call):
    """nanobind's TypeError for an argument of a type the module does not take, as the
    ConfigError every other mistake in an argument is."""
    try:
        yield
    except TypeError as e:
        lines = str(e).splitlines()
        if "incompatible function arguments" not in str(e) or len(lines) < 2:
            raise
        takes = lines[1].strip().removeprefix("1. ").replace("self, ", "")
        raise ConfigError(f"{call}: an argument of a type it does not take; it takes {takes}", "usage") from None


def _integer(value, name, what):
    try:
        return operator.index(value)
    except TypeError:
        raise ConfigError(f"{name}: expected {what}, got {type(value).__name__}", "usage") from None


def _path(path, name, what="a folder's path"):
    """`path` (a str or os.PathLike) as a str; None stays None; anything else is ConfigError."""
    if path is None or isinstance(path, (str, os.PathLike)):
        return None if path is None else os.fspath(path)
    raise ConfigError(f"{name}: expected {what}, got {type(path).__name__}", "usage")


def _sets(values):
    if values is not None and not isinstance(values, dict):
        raise ConfigError(f"set: expected a dict of key path → value, got {type(values).__name__}", "config")
    return [f"{path}={_json(value, f'set[{path!r}]')}" for path, value in (values or {}).items()]


class Result:
    """One record: what the command writes with --json (`record`, `to_pandas()`), shown as the
    command prints it (`report`): in a notebook, the phases, kernel times, check and warnings."""

    def __init__(self, record, report=""):
        self.record = record
        self.report = report

    @property
    def phases(self):
        """Phase name -> ms, for the phases this command measured."""
        return {name: self.record[f"{name}_ms"] for name in _kjit.phases if self.record.get(f"{name}_ms") is not None}

    @property
    def kernel(self):
        """Cold, batch and graph kernel-time statistics (ms), where measured."""
        return {mode: {stat: self.record[f"kernel_{mode}_{stat}_ms"] for stat in ("median", "min", "max", "mean", "stdev")}
                for mode in ("cold", "batch", "graph") if self.record.get(f"kernel_{mode}_median_ms") is not None}

    @property
    def check(self):
        """The comparison with the float64 reference: status, errors, mismatches, the first bad element."""
        return {key: self.record.get(key) for key in _CHECK_COLUMNS}

    @property
    def metrics(self):
        """Hardware counter -> value, where the run read them (Session.run(metrics=…)): DRAM
        bytes, L2 hit rate, occupancy, pipe use, warp stalls (docs/why.md)."""
        return {key[len("metric_"):]: value for key, value in self.record.items() if key.startswith("metric_")}

    @property
    def roofline(self):
        """Where the variant sits on the GPU's roofline: flops per byte, the bounding roof and the
        percentage of it reached (None where the ceilings were not measured)."""
        return {key: self.record.get(key) for key in ("arithmetic_intensity", "flops_unit", "flops_ceiling_tflops",
                                                     "roof_bound", "percent_of_roof")}

    def to_pandas(self):
        import pandas
        return pandas.DataFrame([self.record])

    def __repr__(self):
        return f"<kjit.Result {self.record.get('name')} {self.record.get('variant')} {self.record.get('status')}>"

    def __str__(self):
        return self.report or repr(self)

    def _repr_pretty_(self, printer, cycle):
        """IPython's terminal: the report."""
        printer.text(str(self))

    def _repr_html_(self):
        """Jupyter: the report as the command prints it, whole, and where the table is."""
        import html
        return (f"<pre style=\"line-height: 1.25\">{html.escape(str(self))}</pre>"
                "<p><small>.to_pandas(): the record as a one-row DataFrame; .phases, .kernel, .check, .metrics: "
                "its parts as dicts</small></p>")


def _result(shown):
    """A Result of the module's (rows JSON, report text)."""
    rows, report = shown
    return Result(json.loads(rows)[0], report)


_CHECK_COLUMNS = ("status", "max_abs_error", "max_rel_error", "max_ulp_error", "nan_count", "inf_count", "mismatches",
                  "rtol", "atol", "first_bad")


class Kernel(_kjit.Kernel):
    """kjit's kernels for one config, built (or taken from the cache) and loaded on the session's
    GPU, to call on your own device arrays: no copy, nothing allocated per call.

        k = s.kernel("configs/hidden_layer.json", set={"n": x.numel()})
        k(greyscales=x, weights=w, out=y)                # enqueued; returns at once
        k.verify(greyscales=x, weights=w, out=y)         # one call, checked in float64: {"status": "PASS", …}

    Arrays are taken through DLPack (PyTorch, CuPy, JAX) or __cuda_array_interface__ (Numba): each
    must have the config's dtype, its size ([rows, cols] for a row pipeline), be contiguous and
    on the session's device, or ConfigError names it. The kernels run on `stream=` (an int, a
    torch.cuda.Stream or a cupy Stream); by default on the current stream of the arrays' library
    where it publishes one (PyTorch's), else on the legacy default stream (CuPy's own default).
    Calls share their temporaries: one stream at a time. The call itself is C++ (the base class):
    it reads the arrays without calling into Python where their library allows.
    """

    def __init__(self, session, config, set=None, base=None):
        with _arguments("Kernel"):
            super().__init__(session._session, _config_text(config, base), _sets(set))
        self.record = json.loads(self._record)[0]
        #: (name, shape, written) per array, in the order the kernels take them: inputs, then out.
        self.parameters = self._parameters

    def verify(self, stream=None, **arrays):
        """One call, then its inputs and output read back and compared with the float64
        reference: the check as Result.check gives it ("status", errors, the first bad element)."""
        with _arguments("Kernel.verify"):
            return Result(json.loads(self._verify(arrays, stream))[0]).check

    def __repr__(self):
        arrays = ", ".join(name for name, _, _ in self.parameters)
        return f"<kjit.Kernel {self.record.get('name')} {self.dtype}: ({arrays})>"


def _command():
    """The kjit command: $KJIT_COMMAND, the one beside this Python (pip install puts it with the
    scripts, on the PATH only while the venv is active), or `kjit` on the PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "kjit")
    command = os.environ.get("KJIT_COMMAND") or (beside if os.access(beside, os.X_OK) else shutil.which("kjit"))
    if not command:
        raise Error("the kjit command is neither beside this Python nor on the PATH (pip install . puts it with the "
                    "scripts)", "usage")
    return command


@contextlib.contextmanager
def trace(path):
    """A timeline of kjit's work inside the block, as `kjit run --trace PATH` writes it: each
    phase a span on the thread that ran it, in Chrome's trace format (open it in Perfetto).

        with kjit.trace("run.json"):
            s.run("configs/softmax.json")
    """
    path = _path(path, "trace", "a file's path")
    if path is None:
        raise ConfigError("trace: expected a file's path, got NoneType", "usage")
    _kjit.start_trace()
    try:
        yield
    finally:
        _kjit.write_trace(path)


def first_call(config, set=None, repeat=5, base=None):
    """`kjit first-call`: what a first call costs, in fresh processes started in each start state
    (empty cache, PTX only, cubin, a second call in one process), `repeat` times each; one row
    per state with each phase's median, as a pandas.DataFrame."""
    import pandas
    repeat = _integer(repeat, "repeat", "a count (an int)")
    with tempfile.TemporaryDirectory(prefix="kjit-first-call-") as scratch:
        path = os.fspath(config) if isinstance(config, os.PathLike) else config
        path = _shipped(path) if isinstance(path, str) else path
        if not isinstance(path, str) or path.lstrip().startswith("{"):
            # Written to a scratch folder, the config's relative input files still mean the working
            # folder's (or base's), as they do for the session's calls: made absolute first.
            text = _config_text(config, os.getcwd() if base is None else base)
            path = os.path.join(scratch, "config.json")
            with open(path, "w") as f:
                f.write(text)
        elif base is not None:
            raise ConfigError("base: for a dict or JSON text config; a config file's inputs are found beside it", "config")
        rows = os.path.join(scratch, "rows.json")
        sets = [arg for assignment in _sets(set) for arg in ("--set", assignment)]
        done = subprocess.run([_command(), "first-call", path, *sets, "--repeat", str(repeat), "--json", rows],
                              capture_output=True, text=True)
        if done.returncode != 0:
            message = (done.stderr.strip().splitlines() or ["first-call failed"])[-1]
            if done.returncode == 130:
                raise KeyboardInterrupt(message)
            raise (ConfigError(message, "config") if done.returncode == 2 else Error(message))
        with open(rows) as f:
            return pandas.DataFrame(json.load(f))


def tune(config, set=None, strategy="auto", budget=0, seconds=None, stop_at=None, seed=1, device=0, cache_dir=None,
         base=None, ray=None, workers=None, metrics=None):
    """`kjit tune`: a strategy ("auto", "exhaustive", "random", "anneal", "genetic", "local")
    searching the config's tune space (its "tune" block, or its family's) for the fastest launch,
    every point verified and kept in the tuning database of the cache, within `budget` points (0:
    the strategy's own), `seconds`, or until a point runs at `stop_at` % of its roofline.
    A pandas.DataFrame with a row per point measured (what `kjit tune --json` writes); the
    summary the command prints is in its attrs["summary"].

    `ray`: measure on a Ray cluster's GPUs (True, or a cluster's address; kjit.cluster): the
    search and the database stay in this process, each batch of points is split among the
    workers (`workers`: how many; all GPUs by default), which must hold GPUs of one model.

    `metrics`: each point's hardware counters too (a counter set's name, or True for all), as
    metric_* columns; every point is then measured again, since the tuning database keeps no
    counters."""
    import pandas
    if strategy not in ("auto", "exhaustive", "random", "anneal", "genetic", "local"):
        raise ConfigError(f"strategy={strategy!r}: expected auto, exhaustive, random, anneal, genetic or local", "usage")
    if stop_at is not None and not 0 < stop_at <= 100:
        raise ConfigError(f"stop_at={stop_at!r}: expected a percentage in (0, 100]", "usage")
    options = (strategy, _integer(budget, "budget", "a count (an int)"), seconds, None if stop_at is None else stop_at / 100,
               _integer(seed, "seed", "an int"))
    counter_set = _counter_set(metrics)
    session = Session(device, cache_dir)
    text, sets = _config_text(config, base), _sets(set)
    if ray:
        from . import cluster
        if os.path.isfile(text):
            text = os.path.abspath(text)
        rows, summary = cluster.tune(session, text, sets, options, ray,
                                     None if workers is None else _integer(workers, "workers", "a count (an int)"),
                                     counter_set)
    else:
        rows, summary = session._session.tune(text, sets, *options, None, None, counter_set)
    frame = pandas.DataFrame(json.loads(rows))
    frame.attrs["summary"] = summary
    return frame


class _Bars:
    """tqdm bars (the notebook's where there is one), one stage at a time: a sweep's compiles of
    its distinct sources (`compiled(done, total)`), then its points (called as `(done, total)`)."""

    def __init__(self, tqdm):
        self._tqdm, self._bar, self._stage = tqdm, None, None

    def compiled(self, done, total):
        self._show("kjit compile", "source", done, total)

    def __call__(self, done, total):
        self._show("kjit sweep", "point", done, total)

    def _show(self, stage, unit, done, total):
        if self._stage != stage:
            if self._bar is not None:  # a stage cut short
                self._bar.close()
            self._bar, self._stage = self._tqdm(total=total, unit=unit, desc=stage, leave=False), stage
        if self._bar is None:
            return
        self._bar.update(done - self._bar.n)
        if done == total:
            self._bar.close()
            self._bar = None


def _progress_bar():
    """_Bars where tqdm is installed, else None."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return _Bars(tqdm)


def _counter_set(metrics):
    """`metrics=` as the module takes it: a counter set's name, "" for none."""
    counter_set = "all" if metrics is True else (metrics or "")
    if counter_set and counter_set not in _kjit.counter_sets:
        raise ConfigError(f"metrics={metrics!r}: expected one of {', '.join(_kjit.counter_sets)} or True", "usage")
    return counter_set


class Session:
    """Templates, the bounded compile cache, and a GPU opened when something first runs and kept
    open: a second run pays no CUDA start-up."""

    def __init__(self, device=0, cache_dir=None):
        self._cache_dir = _path(cache_dir, "cache_dir")
        self._session = _kjit.Session(_integer(device, "device", "a GPU's index (an int)"), self._cache_dir)
        self.last_sweep = None  #: the last sweep's rows, also when Ctrl-C stopped it

    def emit(self, config, set=None, base=None):
        """The generated CUDA source."""
        return self._session.emit(_config_text(config, base), _sets(set))

    def sass(self, config, set=None, base=None, diff_set=None, mix=False, kernel=""):
        """The machine code of each kernel under the generated CUDA line it came from, and its
        instruction mix, as `kjit sass` prints them (no GPU needed; nvdisasm from the toolkit, or
        $KJIT_NVDISASM). `diff_set`: compare with the config under these overrides too, by
        instruction kind and by opcode; `mix`: the mixes alone; `kernel`: only kernels whose name has it."""
        return self._session.sass(_config_text(config, base), _sets(set), _sets(diff_set), bool(mix), kernel)

    def compile(self, config, set=None, base=None):
        """Generate and compile (no GPU needed)."""
        return _result(self._session.compile(_config_text(config, base), _sets(set)))

    def run(self, config, set=None, base=None, metrics=None):
        """Run on the GPU and verify against the float64 reference. `metrics`: also read the
        kernels' hardware counters after the timed loops ("memory", "compute", "stalls" or "all";
        True for all), in Result.metrics."""
        return _result(self._session.run(_config_text(config, base), _sets(set), _counter_set(metrics)))

    def sweep(self, config, set=None, compile_only=False, progress=True, base=None, ray=None, gpu_models="same",
              workers=None, out=None, metrics=None):
        """Every point of the config's sweep block as a pandas.DataFrame, one row each, with
        progress bars (tqdm) where tqdm is installed and `progress` is true: the compiles of its
        distinct sources, then its points; a callable `progress(done, total)` is called after
        each point (each batch, on a cluster) instead.

        `ray`: spread the points over a Ray cluster (kjit.cluster): True joins the one RAY_ADDRESS
        names or starts a local one, a string is a cluster's address. One worker per GPU (per
        CPU when compile_only; `workers` to say how many); `gpu_models` "same" refuses GPUs of
        different models, "apart" sweeps on each. `out`: a file this process writes the rows to
        while the sweep runs (as --json writes them), whoever ran them. `metrics`: each point's
        hardware counters too, as Session.run reads them (metric_* columns).

        Ctrl-C stops the sweep after the points in flight and raises KeyboardInterrupt; the
        rows of the points that finished stay readable in `last_sweep`."""
        import pandas
        if not (isinstance(progress, bool) or progress is None or callable(progress)):
            raise ConfigError(f"progress: expected True, False or a callable(done, total), got {type(progress).__name__}", "usage")
        if gpu_models not in ("same", "apart"):
            raise ConfigError(f"gpu_models: expected 'same' or 'apart', got {gpu_models!r}", "usage")
        text, sets, counter_set = _config_text(config, base), _sets(set), _counter_set(metrics)
        bar = _progress_bar() if progress is True else progress or None
        if ray:
            from . import cluster
            if not isinstance(ray, (bool, str)):
                raise ConfigError(f"ray: expected True or a cluster's address, got {type(ray).__name__}", "usage")
            if workers is not None:
                workers = _integer(workers, "workers", "a count (an int)")
            if os.path.isfile(text):  # each worker reads the file: at the same path on every node
                text = os.path.abspath(text)
            interrupted = cluster.sweep(self, text, sets, bool(compile_only), bar, ray, gpu_models, workers,
                                        _path(out, "out", "a file's path"), counter_set)
        else:
            if workers is not None or out is not None:
                raise ConfigError("workers, out: for a sweep on a Ray cluster (ray=True)", "usage")
            rows, interrupted = self._session.sweep(text, sets, bool(compile_only), bar, None, 0, counter_set,
                                                    getattr(bar, "compiled", None))
            self.last_sweep = pandas.DataFrame(json.loads(rows))
        if interrupted:
            raise KeyboardInterrupt(f"kjit sweep: interrupted after {len(self.last_sweep)} points; "
                                    "their rows are in Session.last_sweep")
        return self.last_sweep

    def kernel(self, config, set=None, base=None):
        """The config's kernels, built (or taken from the cache) and loaded on this session's GPU,
        as a Kernel to call on your own device arrays."""
        return Kernel(self, config, set, base)


def load_ipython_extension(ipython):
    """`%load_ext kjit`: the %%kjit cell magic (kjit.magic)."""
    from .magic import register
    register(ipython)
