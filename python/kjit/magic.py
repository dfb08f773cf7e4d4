"""The %%kjit cell magic (`%load_ext kjit`): the cell's body is a config, run in one session
that the notebook keeps (its GPU stays open between cells).

    %%kjit [--compile | --emit] [--set KEY=VALUE ...] [--as NAME]
    {"n": 1000000, "stages": [...]}

Without an option the config runs, or sweeps when it has a sweep block; the cell shows the
result (a Result, shown as kjit's report: phases, kernel times, check, warnings; or a sweep's
DataFrame) and keeps it as `_kjit` in the notebook, or as NAME (`_kjit.to_pandas()`: the
record's table). --compile builds only (no GPU); --emit shows the CUDA.
"""
import argparse
import json
import shlex

import kjit

_session = None


def _parser():
    parser = argparse.ArgumentParser(prog="%%kjit", add_help=False)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--compile", action="store_true")
    action.add_argument("--emit", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--as", dest="name", default="_kjit")
    return parser


def _value(text):
    """A --set value: JSON where it parses (numbers, lists, true), else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def cell(line, body, namespace):
    """What %%kjit does, as a function of the line, the body and the notebook's namespace."""
    global _session
    try:
        options = _parser().parse_args(shlex.split(line))
    except SystemExit:
        raise kjit.ConfigError(f"%%kjit {line}: expected [--compile | --emit] [--set KEY=VALUE ...] [--as NAME]",
                               "usage") from None
    sets = {}
    for assignment in options.set:
        key, equals, value = assignment.partition("=")
        if not equals:
            raise kjit.ConfigError(f"--set {assignment}: expected KEY=VALUE", "usage")
        sets[key] = _value(value)
    if _session is None:
        _session = kjit.Session()
    if options.emit:
        source = _session.emit(body, set=sets)
        namespace[options.name] = source
        print(source)
        return None
    if options.compile:
        result = _session.compile(body, set=sets)
    elif "sweep" in json.loads(body):
        result = _session.sweep(body, set=sets)
    else:
        result = _session.run(body, set=sets)
    namespace[options.name] = result
    return result


def register(ipython):
    ipython.register_magic_function(lambda line, body: cell(line, body, ipython.user_ns), "cell", "kjit")
