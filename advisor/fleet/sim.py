"""Provides simulate(): one seeded discrete-event run (SimPy) of a portfolio's jobs on a cluster.

The guide's four queues: urgent training pre-empts every lower class; regular training runs first come,
first served (its head waits rather than being overtaken by later regular jobs, and pre-empts batch work);
batch inference uses idle GPUs; development is capped at a share of the GPUs. Always-on serving replicas are
autoscaled each hour against the request rate and pre-empt training when they need GPUs. Multi-node jobs are
gang-scheduled on whole servers. GPU failures arrive at the sourced rate; an interrupted job loses its work
since the last checkpoint and pays the restart time; a pre-empted one likewise. The night power cap slows
running jobs by the measured power-performance curve."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Generator
from dataclasses import dataclass, field

import simpy

from advisor.fleet.cluster import Pool
from advisor.fleet.power import NightCap

Process = Generator[simpy.Event, object, None]
"""A SimPy process: it yields the events it waits on."""

HOURS_PER_WEEK = 168
SERVING = -1


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One kind of job as the simulation needs it (from the per-job model's Shape and the portfolio)."""

    name: str
    owner: str
    cls: int
    """0 urgent, 1 regular, 2 batch, 3 development, -1 serving."""
    pool: str
    gpus: int
    work_h: float
    """Useful hours at full power (0 for serving)."""
    per_hour: float = 0.0
    """Arrivals per hour (Poisson); serving: unused."""
    deadline_h: float | None = None
    interval_h: float = math.inf
    """Useful work between checkpoints; inf: nothing kept (a restart starts over)."""
    checkpoint_h: float = 0.0
    restart_h: float = 0.0
    keep_progress: bool = False
    """Batch inference keeps what it answered: an interruption loses nothing but the restart."""
    tflop_per_hour: float = 0.0
    capacity_rps: float = 0.0
    rate_by_hour: tuple[float, ...] = ()
    """Serving: mean requests per second for each hour of the day."""
    exponential: bool = False
    """Work drawn from an exponential distribution of mean work_h (the queueing checks)."""

    @property
    def speed(self) -> float:
        """Share of running time that is useful work (checkpoint writes take the rest)."""
        if math.isinf(self.interval_h) or self.checkpoint_h <= 0:
            return 1.0
        return self.interval_h / (self.interval_h + self.checkpoint_h)


@dataclass(eq=False)
class Job:
    """One arrival of a JobSpec."""

    spec: JobSpec
    arrival: float
    work: float
    done: float = 0.0
    first_start: float | None = None
    start: float = 0.0
    pay_restart: float = 0.0
    alloc: list[tuple[int, int]] = field(default_factory=list)
    gen: int = 0


@dataclass(slots=True)
class Tally:
    """What one run measured."""

    hours: float
    gpus: dict[str, int]
    busy_by_hour: dict[str, list[float]]
    """Busy GPU-hours of each pool by hour of the week."""
    capped_busy: dict[str, float]
    """Busy GPU-hours of each pool under the night cap."""
    waits: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    sojourns: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    with_deadline: int = 0
    missed: int = 0
    failures: int = 0
    preemptions: int = 0
    gpu_hours: dict[tuple[str, int], float] = field(default_factory=lambda: defaultdict(float))
    """Allocated GPU-hours by (owner, class)."""
    tflop: float = 0.0
    serving_short_h: float = 0.0
    serving_need_h: float = 0.0
    completed: int = 0
    arrived: int = 0


class Simulation:
    """The cluster, its queues and the processes that drive them."""

    def __init__(
        self,
        pools: list[Pool],
        specs: list[JobSpec],
        *,
        seed: int,
        hours: float,
        cap: NightCap,
        failures_per_gpu_hour: float = 0.0,
        dev_cap_fraction: float = 1.0,
        redundancy: int = 1,
        arrivals: list[tuple[float, JobSpec, float]] | None = None,
    ) -> None:
        self.env = simpy.Environment()
        self.rng = random.Random(seed)
        self.pools = {p.name: p for p in pools}
        self.pool_list = pools
        self.specs, self.cap, self.hours = specs, cap, hours
        self.fail_rate = failures_per_gpu_hour
        self.dev_cap = {p.name: max(1, int(p.total * dev_cap_fraction)) for p in pools}
        self.dev_used = dict.fromkeys(self.pools, 0)
        self.redundancy = redundancy
        self.replay = sorted(arrivals or [], key=lambda a: a[0])
        self.queues: dict[int, list[Job]] = {c: [] for c in (0, 1, 2, 3)}
        self.running: dict[str, list[Job]] = {p: [] for p in self.pools}
        self.replicas: dict[str, list[Job]] = defaultdict(list)
        self.targets: dict[str, list[int]] = {}
        self.last = 0.0
        self.tally = Tally(
            hours=hours,
            gpus={p.name: p.total for p in pools},
            busy_by_hour={p.name: [0.0] * HOURS_PER_WEEK for p in pools},
            capped_busy=dict.fromkeys(self.pools, 0.0),
        )

    # Accounting ------------------------------------------------------------------------------------

    def _account(self) -> None:
        """Add busy GPU-hours since the last change, hour by hour of the week (for the chart and energy)."""
        now = min(self.env.now, self.hours)
        t = self.last
        if now <= t:
            return
        pools = self.pool_list
        while t < now:
            edge = min(now, math.floor(t) + 1.0)
            slot = int(t) % HOURS_PER_WEEK
            capped = self.cap.capped(t)
            dt = edge - t
            for pool in pools:
                used = pool.busy * dt
                self.tally.busy_by_hour[pool.name][slot] += used
                if capped:
                    self.tally.capped_busy[pool.name] += used
            t = edge
        self.last = now

    def _run_cost(self, job: Job, end: float) -> None:
        """Charge the GPUs a job held to its owner and class."""
        held = max(0.0, min(end, self.hours) - min(job.start, self.hours))
        self.tally.gpu_hours[(job.spec.owner, job.spec.cls)] += held * job.spec.gpus

    # Jobs --------------------------------------------------------------------------------------------

    def _arrivals(self, spec: JobSpec) -> Process:
        while True:
            yield self.env.timeout(self.rng.expovariate(spec.per_hour))
            if self.env.now >= self.hours:
                return
            work = self.rng.expovariate(1.0 / spec.work_h) if spec.exponential else spec.work_h
            self.queues[spec.cls].append(Job(spec, self.env.now, work))
            self.tally.arrived += 1
            if spec.deadline_h is not None:
                self.tally.with_deadline += 1
            self.dispatch()

    def _replay(self) -> Process:
        """Arrivals at given times with given work (a recorded trace)."""
        for at, spec, work in self.replay:
            if at > self.env.now:
                yield self.env.timeout(at - self.env.now)
            self.queues[spec.cls].append(Job(spec, self.env.now, work))
            self.tally.arrived += 1
            self.dispatch()

    def _start(self, job: Job, pool: Pool, alloc: list[tuple[int, int]]) -> None:
        self._account()
        pool.take(alloc)
        job.alloc, job.start = alloc, self.env.now
        if job.first_start is None:
            job.first_start = self.env.now
            self.tally.waits[job.spec.cls].append(job.first_start - job.arrival)
        if job.spec.cls == 3:
            self.dev_used[pool.name] += job.spec.gpus
        self.running[pool.name].append(job)
        self._schedule_end(job)

    def _schedule_end(self, job: Job) -> None:
        job.gen += 1
        begin = self.env.now + job.pay_restart
        left = (job.work - job.done) / job.spec.speed
        end = self.cap.finish(begin, left)
        event = self.env.timeout(max(0.0, end - self.env.now))
        gen = job.gen
        event.callbacks.append(lambda _e: self._finish(job, gen))

    def _progress(self, job: Job) -> None:
        """Work done since the job last (re)started, net of the restart it paid first."""
        begin = job.start + job.pay_restart
        if self.env.now > begin:
            job.done += self.cap.work(begin, self.env.now) * job.spec.speed
            job.pay_restart = 0.0
        else:
            job.pay_restart = begin - self.env.now
        job.done = min(job.done, job.work)

    def _rollback(self, job: Job) -> None:
        """An interruption: back to the last checkpoint, and a restart to pay."""
        if not job.spec.keep_progress:
            step = job.spec.interval_h
            job.done = 0.0 if math.isinf(step) else math.floor(job.done / step) * step
        job.pay_restart = job.spec.restart_h

    def _release(self, job: Job) -> Pool:
        self._account()
        pool = self.pools[job.spec.pool]
        pool.give(job.alloc)
        self.running[pool.name].remove(job)
        if job.spec.cls == 3:
            self.dev_used[pool.name] -= job.spec.gpus
        self._run_cost(job, self.env.now)
        job.alloc = []
        return pool

    def _finish(self, job: Job, gen: int) -> None:
        if gen != job.gen or not job.alloc:
            return  # pre-empted or interrupted since this end was scheduled
        self._release(job)
        self.tally.completed += 1
        if self.env.now <= self.hours:
            self.tally.sojourns[job.spec.cls].append(self.env.now - job.arrival)
            self.tally.tflop += job.work * job.spec.tflop_per_hour
        if job.spec.deadline_h is not None and self.env.now - job.arrival > job.spec.deadline_h:
            self.tally.missed += 1
        self.dispatch()

    def _preempt(self, job: Job) -> None:
        self._progress(job)
        self._release(job)
        self._rollback(job)
        job.gen += 1
        self.tally.preemptions += 1
        queue = self.queues[job.spec.cls]
        # Back in its place by arrival: a pre-empted job keeps its turn.
        at = next((i for i, q in enumerate(queue) if q.arrival > job.arrival), len(queue))
        queue.insert(at, job)

    # Scheduling ----------------------------------------------------------------------------------------

    def _victims(self, pool: Pool, gpus: int, below: int, classes: tuple[int, ...]) -> list[Job] | None:
        """The fewest running jobs of `classes` (lowest class, newest first) whose GPUs make room."""
        free = list(pool.free)
        chosen: list[Job] = []
        candidates = [j for j in self.running[pool.name] if j.spec.cls in classes and j.spec.cls > below]
        candidates.sort(key=lambda j: (-j.spec.cls, -j.start))
        for victim in candidates:
            if pool.fit(gpus, free) is not None:
                break
            for node, n in victim.alloc:
                free[node] += n
            chosen.append(victim)
        return chosen if chosen and pool.fit(gpus, free) is not None else None

    def _place(self, job: Job) -> bool:
        pool = self.pools[job.spec.pool]
        cls = job.spec.cls
        if cls == 3 and self.dev_used[pool.name] + job.spec.gpus > self.dev_cap[pool.name]:
            return False
        alloc = pool.fit(job.spec.gpus)
        if alloc is None and cls in (0, 1):
            # Urgent training pre-empts every lower class; regular training only batch work.
            victims = self._victims(pool, job.spec.gpus, cls, (1, 2, 3) if cls == 0 else (2,))
            for victim in victims or ():
                self._preempt(victim)
            alloc = pool.fit(job.spec.gpus) if victims else None
        if alloc is None:
            return False
        self._start(job, pool, alloc)
        return True

    def dispatch(self) -> None:
        """Start what can start, class by class."""
        for cls in (0, 1, 2, 3):
            queue = self.queues[cls]
            i = 0
            while i < len(queue):
                job = queue[i]
                if self._place(job):
                    queue.remove(job)
                    continue
                if cls == 1:
                    break  # first come, first served: the head waits, later regular jobs do not overtake
                i += 1

    # Serving -----------------------------------------------------------------------------------------

    def _add_replica(self, spec: JobSpec) -> bool:
        pool = self.pools[spec.pool]
        alloc = pool.fit(spec.gpus)
        if alloc is None:
            victims = self._victims(pool, spec.gpus, SERVING, (0, 1, 2, 3))
            for victim in victims or ():
                self._preempt(victim)
            alloc = pool.fit(spec.gpus) if victims else None
        if alloc is None:
            return False
        self._account()
        pool.take(alloc)
        replica = Job(spec, self.env.now, 0.0, alloc=alloc, start=self.env.now, first_start=self.env.now)
        self.replicas[spec.name].append(replica)
        return True

    def _drop_replica(self, spec: JobSpec) -> None:
        replica = self.replicas[spec.name].pop()
        self._account()
        self.pools[spec.pool].give(replica.alloc)
        self._run_cost(replica, self.env.now)

    def _steady_for(self, spec: JobSpec) -> float:
        """Hours until the hourly rate next changes the replicas wanted (the profile repeats daily)."""
        hour = int(self.env.now) % 24
        targets = self.targets[spec.name]
        for k in range(1, 24):
            if targets[(hour + k) % 24] != targets[hour]:
                return math.floor(self.env.now) + k - self.env.now
        return math.inf

    def _autoscale(self, spec: JobSpec) -> Process:
        """As many replicas as the hour's request rate needs, plus the spare ones; checked whenever the rate
        changes, and every hour while GPUs are short."""
        self.targets[spec.name] = [
            math.ceil(r / spec.capacity_rps) + self.redundancy if r > 0 else self.redundancy
            for r in spec.rate_by_hour
        ]
        while self.env.now < self.hours:
            want = self.targets[spec.name][int(self.env.now) % 24]
            have = self.replicas[spec.name]
            while len(have) > want:
                self._drop_replica(spec)
            while len(have) < want and self._add_replica(spec):
                pass
            short = want - len(have)
            step = min(1.0 if short else self._steady_for(spec), self.hours - self.env.now)
            step = max(step, 1e-9)
            self.tally.serving_need_h += want * step
            self.tally.serving_short_h += short * step
            self.dispatch()
            yield self.env.timeout(step)

    # Failures ----------------------------------------------------------------------------------------

    def _hit(self, pool: Pool, node: int, slot: int) -> Job | None:
        """The job (or replica) on GPU `slot` of `node`, if any: GPUs fill each server from its first slot."""
        used = 0
        holders = [j for j in self.running[pool.name] if any(n == node for n, _ in j.alloc)]
        holders += [r for reps in self.replicas.values() for r in reps if r.spec.pool == pool.name]
        for job in holders:
            used += sum(k for n, k in job.alloc if n == node)
            if slot < used:
                return job
        return None

    def _failures(self, pool: Pool) -> Process:
        rate = self.fail_rate * pool.total
        while True:
            yield self.env.timeout(self.rng.expovariate(rate))
            if self.env.now >= self.hours:
                return
            self.tally.failures += 1
            job = self._hit(pool, self.rng.randrange(pool.nodes), self.rng.randrange(pool.node_size))
            if job is None:
                continue
            if job.spec.cls == SERVING:
                self.tally.serving_short_h += job.spec.restart_h
                continue
            # The failed GPU is swapped; the job restarts from its checkpoint on the same servers.
            self._progress(job)
            self._rollback(job)
            self._run_cost(job, self.env.now)
            job.start = self.env.now  # its next stretch (restart first) is measured from here
            self._schedule_end(job)

    # Run ---------------------------------------------------------------------------------------------

    def run(self) -> Tally:
        """Simulate `hours` and close the accounts."""
        for spec in self.specs:
            if spec.cls == SERVING:
                self.env.process(self._autoscale(spec))
            elif spec.per_hour > 0:
                self.env.process(self._arrivals(spec))
        if self.replay:
            self.env.process(self._replay())
        if self.fail_rate > 0:
            for pool in self.pools.values():
                self.env.process(self._failures(pool))
        self.env.run(until=self.hours)
        self._account()
        self._close()
        return self.tally

    def _close(self) -> None:
        """Charge what still runs; count deadlines already past among the jobs that have not finished."""
        for jobs in self.running.values():
            for job in jobs:
                self._run_cost(job, self.hours)
        for reps in self.replicas.values():
            for replica in reps:
                self._run_cost(replica, self.hours)
        queued = [j for q in self.queues.values() for j in q]
        for job in queued:
            if job.first_start is None:  # still waiting at the end: its wait so far is a lower bound
                self.tally.waits[job.spec.cls].append(self.hours - job.arrival)
        waiting = queued + [j for r in self.running.values() for j in r]
        for job in waiting:
            if job.spec.deadline_h is not None and job.arrival + job.spec.deadline_h < self.hours:
                self.tally.missed += 1
