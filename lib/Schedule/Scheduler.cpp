//===- Scheduler.cpp - Ordering tests and packing them onto runners -------===//
//
// Priority orders and the list scheduler. The scheduler keeps one clock and
// a heap of running jobs: the head job starts at the current time on the
// first runner with room, else the clock jumps to the next job end. Each job
// costs O(log n + runners), so tens of thousands of tests schedule in
// milliseconds.
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Scheduler.h"
#include "fastci/Select/SelectAttrs.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <queue>
#include <random>

using namespace fastci;

//===----------------------------------------------------------------------===//
// Priority orders
//===----------------------------------------------------------------------===//

static std::vector<unsigned> identityOrder(size_t size) {
  std::vector<unsigned> order(size);
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

std::vector<unsigned>
fastci::orderByRiskPerCost(llvm::ArrayRef<double> risk,
                           llvm::ArrayRef<double> gpuSeconds) {
  assert(risk.size() == gpuSeconds.size() && "one cost per risk");
  // Risk per GPU-second, with a free test that may fail ranked above every
  // paid one (its ratio is +inf) and a test that cannot fail below all.
  std::vector<double> density(risk.size());
  for (size_t i = 0; i < risk.size(); ++i)
    density[i] = risk[i] <= 0        ? 0
                 : gpuSeconds[i] > 0 ? risk[i] / gpuSeconds[i]
                                     : std::numeric_limits<double>::infinity();
  std::vector<unsigned> order = identityOrder(risk.size());
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    if (density[a] != density[b])
      return density[a] > density[b];
    return risk[a] > risk[b];
  });
  return order;
}

std::vector<unsigned> fastci::orderByDuration(llvm::ArrayRef<double> seconds) {
  std::vector<unsigned> order = identityOrder(seconds.size());
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return seconds[a] < seconds[b];
  });
  return order;
}

std::vector<unsigned> fastci::orderRandomly(unsigned size, uint64_t seed) {
  std::vector<unsigned> order = identityOrder(size);
  std::mt19937_64 engine(seed);
  // std::shuffle and std::uniform_int_distribution are implementation
  // defined; this spells out an unbiased draw so that a seed names the same
  // order everywhere.
  auto below = [&](uint64_t bound) {
    uint64_t limit = std::numeric_limits<uint64_t>::max() -
                     std::numeric_limits<uint64_t>::max() % bound;
    uint64_t draw;
    do
      draw = engine();
    while (draw >= limit);
    return draw % bound;
  };
  for (unsigned i = size; i > 1; --i)
    std::swap(order[i - 1], order[below(i)]);
  return order;
}

//===----------------------------------------------------------------------===//
// List scheduling
//===----------------------------------------------------------------------===//

std::vector<Placement> fastci::listSchedule(llvm::ArrayRef<Job> jobs,
                                            RunnerPool pool) {
  assert(pool.runners > 0 && pool.gpusPerRunner > 0 && "empty pool");
  struct Running {
    double end;
    unsigned runner;
    int64_t gpus;
    bool operator>(const Running &other) const {
      return std::tie(end, runner) > std::tie(other.end, other.runner);
    }
  };
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>>
      running;
  std::vector<int64_t> freeGpus(pool.runners, pool.gpusPerRunner);
  std::vector<Placement> placements;
  placements.reserve(jobs.size());
  double now = 0;

  for (const Job &job : jobs) {
    assert(job.gpus >= 1 && job.gpus <= pool.gpusPerRunner &&
           "job does not fit a runner");
    while (true) {
      while (!running.empty() && running.top().end <= now) {
        freeGpus[running.top().runner] += running.top().gpus;
        running.pop();
      }
      auto runner = llvm::find_if(
          freeGpus, [&](int64_t gpus) { return gpus >= job.gpus; });
      if (runner != freeGpus.end()) {
        unsigned index = runner - freeGpus.begin();
        *runner -= job.gpus;
        Placement placement{index, now, now + job.seconds};
        running.push({placement.end, index, job.gpus});
        placements.push_back(placement);
        break;
      }
      // Nothing fits now; some job is running, because an idle runner fits
      // every job.
      now = running.top().end;
    }
  }
  return placements;
}

std::vector<TestId> fastci::getRetainedTests(const Module &module) {
  bool anySelected = llvm::any_of(module.getTests(), [](const Test &test) {
    return test.attrs.contains(select::attr::kSelected);
  });
  std::vector<TestId> retained;
  for (const Test &test : module.getTests()) {
    Attribute pruned = test.attrs.get(select::attr::kPruned);
    if (pruned.isBool() && pruned.getBool())
      continue;
    Attribute selected = test.attrs.get(select::attr::kSelected);
    if (anySelected && !(selected.isBool() && selected.getBool()))
      continue;
    retained.push_back(test.index);
  }
  return retained;
}
