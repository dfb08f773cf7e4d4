"""A sweep or a tune spread over a Ray cluster (`Session.sweep(..., ray=True)`,
`kjit.tune(..., ray=True)`). A sweep: one worker per GPU of every node (or, compile-only, one per
CPU), each a kjit session of its own that takes batches of points and sends back their rows. This
process is the one writer: it keeps each point's row once, writes `out` as `kjit sweep --json`
writes its file, and draws the progress bar.

A worker lost mid-sweep (its node gone, its process killed) loses none of the points it finished:
their rows had come back; the batches it held go to the other workers. Workers whose GPUs are of
different models are refused (gpu_models="same"), or each model runs the whole sweep
(gpu_models="apart"); every row names its host and its GPU.

A tune searches in this process, which keeps the tuning database (its one writer); each batch a
strategy asks for (a population: random, genetic) is split among the workers and measured at once.

A config file is read by each worker at its absolute path, so it (and its input files) must be at
the same path on every node, as a cluster's shared file system has it; a dict is sent whole.
"""
import collections
import contextlib
import json
import os
import tempfile
import time

from . import _kjit

#: Rows are written to `out` at most this often while the sweep runs, and once at its end.
_WRITE_EVERY_S = 5.0


class _Worker:
    """One kjit session in a Ray worker process, on the GPU Ray gave it (device 0 of those it sees)."""

    def __init__(self, cache_dir, on_gpu):
        import socket

        import ray
        self._session = _kjit.Session(0, cache_dir)
        self._device = self._session.device_json() if on_gpu else None
        self._about = {"host": socket.gethostname(), "pid": os.getpid(),
                       "gpu": json.loads(self._device)["name"] if on_gpu else None}
        # Compile threads: a compile-only worker holds one CPU; a GPU worker shares its node's
        # CPUs with the node's other GPU workers, compiling its batch ahead of its GPU.
        node_id = ray.get_runtime_context().get_node_id()
        node = next(n["Resources"] for n in ray.nodes() if n["NodeID"] == node_id)
        self._jobs = max(1, int(node.get("CPU", 1) // max(1, node.get("GPU", 1)))) if on_gpu else 1

    def about(self):
        return self._about

    def points(self, config, sets, compile_only, indices, metrics):
        rows, _ = self._session.sweep(config, sets, compile_only, None, indices, self._jobs, metrics)
        return rows

    def device(self):
        return self._device

    def measure(self, config, sets, points, metrics):
        return self._session.measure_points(config, sets, points, metrics)


def _connect(ray_module, address):
    """Ray as the caller asked: the cluster already joined, the one at `address`, or (True) the
    one RAY_ADDRESS names, else a new local one."""
    if not ray_module.is_initialized():
        ray_module.init(address=None if address is True else address, log_to_driver=False)


def _batches(points, workers):
    """Runs of consecutive points of the list `points` (they share inputs and compiled sources most
    often), about four per worker so that a slow or lost worker holds back little, at most 64 each."""
    size = max(1, min(64, len(points) // max(1, 4 * workers)))
    return [list(points[start:start + size]) for start in range(0, len(points), size)]


class _Writer:
    """The rows kept so far, by (GPU model, point): each once, written to `out` now and then."""

    def __init__(self, out):
        self.rows = {}
        self._out = out
        self._written_at = time.monotonic()

    def add(self, rows, model):
        for row in rows:
            self.rows.setdefault((model or "", row["sweep_index"]), row)
        if self._out and time.monotonic() - self._written_at > _WRITE_EVERY_S:
            self.write()

    def ordered(self):
        return [self.rows[key] for key in sorted(self.rows)]

    def write(self, partial=False):
        if not self._out:
            return
        rows = [dict(row, partial=True) for row in self.ordered()] if partial else self.ordered()
        # A file of its own beside `out`, renamed over it: readers see the last whole file, never a torn one.
        handle, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(self._out)), prefix=".kjit-rows-")
        with os.fdopen(handle, "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(temp, self._out)
        self._written_at = time.monotonic()


@contextlib.contextmanager
def _workers(session, address, workers, on_gpu, purpose):
    """Ray, the workers (`workers` of them, else one per GPU, or per CPU where not `on_gpu`) and
    what each says of itself; the workers are ended when the block is left."""
    import ray
    from . import Error
    _connect(ray, address)
    unit = "GPU" if on_gpu else "CPU"
    count = workers or int(ray.cluster_resources().get(unit, 0))
    if count < 1:
        raise Error(f"ray: the cluster has no {unit} to {purpose} on", "driver")
    actor = ray.remote(num_cpus=0 if on_gpu else 1, num_gpus=1 if on_gpu else 0, max_restarts=0)(_Worker)
    actors = [actor.remote(session._cache_dir, on_gpu) for _ in range(count)]
    try:
        yield ray, actors, ray.get([w.about.remote() for w in actors])
    finally:
        for w in actors:
            ray.kill(w)


def _group_by_model(workers, abouts, gpu_models):
    """{GPU model: [workers]}: one group for a compile-only sweep or a cluster of one model."""
    groups = collections.defaultdict(list)
    for worker, about in zip(workers, abouts):
        groups[about["gpu"] or ""].append(worker)
    if len(groups) > 1 and gpu_models == "same":
        from . import ConfigError
        seen = "; ".join(f"{len(ws)} × {model}" for model, ws in groups.items())
        raise ConfigError(f"ray: the cluster's GPUs are of different models ({seen}); gpu_models='apart' "
                          "sweeps on each model, or start workers of one model", "usage")
    return dict(groups)


class _Dispatcher:
    """Hands each model's batches to its workers, two at a time per worker (one running, one
    waiting), and takes back the batches of a worker that was lost."""

    def __init__(self, groups, points, run_batch):
        self._queues = {model: collections.deque(_batches(points, len(ws))) for model, ws in groups.items()}
        self._groups = groups
        self._run = run_batch
        self.in_flight = {}  # ref → (worker, model, batch)
        self._held = collections.Counter()
        self._lost = set()

    def fill(self):
        for model, ws in self._groups.items():
            for w in ws:
                while w not in self._lost and self._held[w] < 2 and self._queues[model]:
                    batch = self._queues[model].popleft()
                    self.in_flight[self._run(w, batch)] = (w, model, batch)
                    self._held[w] += 1

    def finished(self, ref):
        w, model, batch = self.in_flight.pop(ref)
        self._held[w] -= 1
        return w, model, batch

    def lost(self, w, model, batch):
        self._lost.add(w)
        self._queues[model].appendleft(batch)

    def waiting(self):
        return sum(len(q) for q in self._queues.values())


def sweep(session, config, sets, compile_only, progress, address, gpu_models="same", workers=None, out=None, metrics=""):
    """Session.sweep(ray=...): the rows of every point (per GPU model with gpu_models="apart"), in
    point order, and whether Ctrl-C stopped it. The rows that finished are in session.last_sweep
    whatever happens."""
    import pandas
    from . import Error
    points = session._session.sweep_points(config, sets)  # those its constraints allow
    writer = _Writer(out)
    with _workers(session, address, workers, not compile_only, "sweep") as (ray, actors, abouts):
        try:
            groups = _group_by_model(actors, abouts, gpu_models)
            work = _Dispatcher(groups, points, lambda w, batch: w.points.remote(config, sets, compile_only, batch, metrics))
            todo = len(points) * len(groups)
            while True:
                work.fill()
                if not work.in_flight:
                    break
                done, _ = ray.wait(list(work.in_flight), num_returns=1)
                w, model, batch = work.finished(done[0])
                try:
                    writer.add(json.loads(ray.get(done[0])), model)
                except ray.exceptions.RayActorError:
                    work.lost(w, model, batch)  # its finished batches came back already; this one goes to another
                    continue
                except ray.exceptions.RayTaskError as e:  # a bad point: the error a local sweep raises
                    raise (e.cause if isinstance(e.cause, Error) else e) from None
                if progress:
                    progress(len(writer.rows), todo)
            if work.waiting():
                raise Error(f"ray: no worker is left for {work.waiting()} batches; {len(writer.rows)} of {todo} "
                            "points finished (their rows are in Session.last_sweep)", "driver")
        except KeyboardInterrupt:
            writer.write(partial=True)
            return True
        finally:
            session.last_sweep = pandas.DataFrame(writer.ordered())
    writer.write()
    return False


def _split(points, parts):
    """`points` in `parts` runs of nearly equal length (none empty)."""
    size, extra = divmod(len(points), parts)
    runs, start = [], 0
    for k in range(parts):
        end = start + size + (k < extra)
        if end > start:
            runs.append(points[start:end])
        start = end
    return runs


def tune(session, config, sets, options, address, workers=None, metrics=""):
    """kjit.tune(ray=...): (rows JSON, summary). The search and the database stay here; every batch
    of points is split among the GPU workers, and a lost worker's share goes to the others."""
    from . import Error
    with _workers(session, address, workers, True, "tune") as (ray, actors, abouts):
        _group_by_model(actors, abouts, "same")  # a tune's best is one GPU model's
        device = ray.get(actors[0].device.remote())
        alive = list(actors)

        def measure(points_json):
            rows, waiting = [], _split(json.loads(points_json), len(alive))
            while waiting:
                if not alive:
                    raise Error("ray: every worker was lost during the tune", "driver")
                calls = {w.measure.remote(config, sets, json.dumps(share), metrics): (w, share) for w, share in zip(alive, waiting)}
                waiting = waiting[len(calls):]
                for ref, (w, share) in calls.items():
                    try:
                        rows += json.loads(ray.get(ref))
                    except ray.exceptions.RayActorError:
                        alive.remove(w)
                        waiting.append(share)  # measured by a worker still alive, in the next round
                    except ray.exceptions.RayTaskError as e:
                        raise (e.cause if isinstance(e.cause, Error) else e) from None
            return json.dumps(rows)

        return session._session.tune(config, sets, *options, device, measure, metrics)
