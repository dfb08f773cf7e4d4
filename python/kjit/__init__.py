"""kjit from Python: the same library as the kjit command, on the same configs.

    import kjit
    s = kjit.Session()
    print(s.emit("configs/softmax.json"))                 # the generated CUDA
    r = s.compile("configs/softmax.json", set={"dtype": "bfloat16"})
    r.phases                                              # phase -> ms
    df = s.sweep("configs/sweep_softmax.json", compile_only=True)   # a pandas.DataFrame

A config is a path, a JSON string or a dict; `set` maps key paths to values as --set does.
Mistakes in a config or an argument raise ConfigError (the command exits 2 for them); failures
while working (a compile error, no GPU, a failed check) raise Error (exit 1).
"""
import json

from . import _kjit

__version__ = _kjit.version


class Error(Exception):
    """A failure while working: a compile error, a CUDA error or no GPU, a failed check."""

    def __init__(self, message, kind="error"):
        super().__init__(message)
        self.kind = kind


class ConfigError(Error):
    """A mistake in a config, a `set` value or an argument: the line the command would print."""


def _raised(error):
    kind, message = error.args
    return (ConfigError if kind in ("config", "usage") else KeyboardInterrupt if kind == "interrupted" else Error)(
        *((message,) if kind == "interrupted" else (message, kind)))


def _config_text(config):
    if isinstance(config, dict):
        return json.dumps(config)
    return str(config)


def _sets(values):
    return [f"{path}={json.dumps(value)}" for path, value in (values or {}).items()]


class Result:
    """One record: what the command prints as a table and writes with --json."""

    def __init__(self, record):
        self.record = record

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

    def to_pandas(self):
        import pandas
        return pandas.DataFrame([self.record])

    def __repr__(self):
        return f"<kjit.Result {self.record.get('name')} {self.record.get('variant')} {self.record.get('status')}>"


_CHECK_COLUMNS = ("status", "max_abs_error", "max_rel_error", "max_ulp_error", "nan_count", "inf_count", "mismatches",
                  "rtol", "atol", "first_bad")


class Session:
    """Templates, the bounded compile cache, and a GPU opened when something first runs and kept
    open: a second run pays no CUDA start-up."""

    def __init__(self, device=0, cache_dir=None):
        self._session = _kjit.Session(device, cache_dir)

    def _call(self, method, *args):
        try:
            return getattr(self._session, method)(*args)
        except _kjit.KjitError as e:
            raise _raised(e) from None

    def emit(self, config, set=None):
        """The generated CUDA source."""
        return self._call("emit", _config_text(config), _sets(set))

    def compile(self, config, set=None):
        """Generate and compile (no GPU needed)."""
        return Result(json.loads(self._call("compile", _config_text(config), _sets(set)))[0])

    def run(self, config, set=None):
        """Run on the GPU and verify against the float64 reference."""
        return Result(json.loads(self._call("run", _config_text(config), _sets(set)))[0])

    def sweep(self, config, set=None, compile_only=False):
        """Every point of the config's sweep block as a pandas.DataFrame, one row each."""
        import pandas
        return pandas.DataFrame(json.loads(self._call("sweep", _config_text(config), _sets(set), compile_only)))
