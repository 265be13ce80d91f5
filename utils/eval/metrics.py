"""Per-MR metrics of a plan, and the simulated runner pool for CI latency.

All costs are fleet costs (GPUs x seconds per test, see strategies.Plan).
APFDc follows docs/Scheduling.md (Elbaum et al., unit fault severities, a
failing test the plan leaves out is a missed fault contributing 0), the
same definition the `compute-metrics` pass implements.
"""

import heapq


def gpu_hours(plan):
    return sum(plan.gpu_seconds(n) for n in plan.tests) / 3600.0


def recall(plan, affected):
    """Share of the affected tests the plan runs; None when nothing is affected."""
    if not affected:
        return None
    return len(affected & set(plan.tests)) / len(affected)


def line_retention(plan, changed_lines, coverage):
    """Share of the modified lines some test covers that the plan's tests cover.

    `changed_lines` is {(path, line)}; `coverage` maps test -> {(path, line)}."""
    reachable = set()
    for lines in coverage.values():
        reachable |= lines & changed_lines
    if not reachable:
        return None
    kept = set()
    for name in plan.tests:
        kept |= coverage.get(name, set()) & changed_lines
    return len(kept & reachable) / len(reachable)


def gpu_seconds_to_first_failure(plan, failing):
    """GPU-seconds spent, running the plan in order, until a failing test ends."""
    spent = 0.0
    for name in plan.tests:
        spent += plan.gpu_seconds(name)
        if name in failing:
            return spent
    return None


def apfdc(order, costs, failing, undetected=()):
    """APFDc of running `order` (costs: name -> weight) against failing tests.

    Failing tests outside the order, or in `undetected` (run but passing, as
    a lowered workload can), are missed faults."""
    if not failing:
        return None
    total = sum(costs[n] for n in order)
    if total <= 0:
        return None
    position = {n: i for i, n in enumerate(order)}
    suffix, acc = [0.0] * (len(order) + 1), 0.0
    for i in range(len(order) - 1, -1, -1):
        acc += costs[order[i]]
        suffix[i] = acc
    score = 0.0
    for fault in failing:
        i = position.get(fault)
        if i is not None and fault not in undetected:
            score += suffix[i] - costs[order[i]] / 2.0
    return score / (total * len(failing))


def simulate_latency(arrivals, plans, runners, gpus_per_runner):
    """CI latency (seconds) of each MR on a shared pool, first come first served.

    MR i arrives at arrivals[i] and queues its plan's tests behind every
    earlier MR's; the head of the queue starts on the lowest-numbered runner
    with enough free GPUs (a runner runs several tests when their GPUs fit),
    waiting for the next test end otherwise. Latency = last end - arrival
    (0 for an empty plan). Tests wider than a runner are clamped to it."""
    free = [gpus_per_runner] * runners
    running = []  # (end time, runner, gpus)
    now, latencies = 0.0, []
    for arrival, plan in zip(arrivals, plans):
        now = max(now, arrival)
        finish = arrival
        for name in plan.tests:
            gpus, seconds = plan.cost[name]
            gpus = min(max(gpus, 1), gpus_per_runner)
            while True:
                while running and running[0][0] <= now:
                    _, runner, used = heapq.heappop(running)
                    free[runner] += used
                runner = next((r for r in range(runners) if free[r] >= gpus), None)
                if runner is not None:
                    break
                now = running[0][0]
            free[runner] -= gpus
            heapq.heappush(running, (now + seconds, runner, gpus))
            finish = max(finish, now + seconds)
        latencies.append(finish - arrival)
    return latencies


def percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    k = (len(values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)
