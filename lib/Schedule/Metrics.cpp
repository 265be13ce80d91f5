//===- Metrics.cpp - How early a test order reveals failures --------------===//
//
// Direct transcriptions of the formulas in Metrics.h; every function is
// linear or n·log n in the number of tests and total on its inputs (an
// undefined metric is none, never NaN).
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Metrics.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <cassert>
#include <numeric>
#include <vector>

using namespace fastci;

/// The 1-based position of the first test revealing each fault, 0 if none.
static std::vector<size_t>
findFirstDetections(llvm::ArrayRef<PrioritizedTest> order, unsigned numFaults) {
  std::vector<size_t> first(numFaults, 0);
  for (auto [index, test] : llvm::enumerate(order))
    for (unsigned fault : test.faults)
      if (fault < numFaults && first[fault] == 0)
        first[fault] = index + 1;
  return first;
}

std::optional<double> fastci::computeAPFD(llvm::ArrayRef<PrioritizedTest> order,
                                          unsigned numFaults) {
  std::vector<size_t> first = findFirstDetections(order, numFaults);
  if (order.empty() || numFaults == 0 || llvm::is_contained(first, 0u))
    return std::nullopt;
  double n = order.size(), m = numFaults;
  double sum = std::accumulate(first.begin(), first.end(), 0.0);
  return 1 - sum / (n * m) + 1 / (2 * n);
}

std::optional<double>
fastci::computeAPFDc(llvm::ArrayRef<PrioritizedTest> order, unsigned numFaults,
                     llvm::ArrayRef<double> severities) {
  assert((severities.empty() || severities.size() == numFaults) &&
         "one severity per fault");
  std::vector<size_t> first = findFirstDetections(order, numFaults);
  if (order.empty() || numFaults == 0 || llvm::is_contained(first, 0u))
    return std::nullopt;
  // suffixCost[j] = Σ_{k ≥ j} t_k, 0-based.
  std::vector<double> suffixCost(order.size() + 1, 0);
  for (size_t j = order.size(); j-- > 0;)
    suffixCost[j] = suffixCost[j + 1] + order[j].cost;
  double totalSeverity = 0, weighted = 0;
  for (unsigned fault = 0; fault < numFaults; ++fault) {
    double severity = severities.empty() ? 1 : severities[fault];
    size_t j = first[fault] - 1;
    weighted += severity * (suffixCost[j] - order[j].cost / 2);
    totalSeverity += severity;
  }
  if (suffixCost[0] <= 0 || totalSeverity <= 0)
    return std::nullopt;
  return weighted / (suffixCost[0] * totalSeverity);
}

std::optional<double>
fastci::computeNAPFD(llvm::ArrayRef<PrioritizedTest> order,
                     unsigned numFaults) {
  if (order.empty() || numFaults == 0)
    return std::nullopt;
  std::vector<size_t> first = findFirstDetections(order, numFaults);
  double n = order.size(), m = numFaults;
  double detected = numFaults - llvm::count(first, 0u);
  double p = detected / m;
  double sum = std::accumulate(first.begin(), first.end(), 0.0);
  return p - sum / (n * m) + p / (2 * n);
}

double fastci::computeGpuSecondsUntil(llvm::ArrayRef<TimedRun> runs,
                                      double time) {
  double total = 0;
  for (const TimedRun &run : runs)
    if (time > run.start)
      total +=
          static_cast<double>(run.gpus) * (std::min(time, run.end) - run.start);
  return total;
}

std::optional<FirstFailure>
fastci::findFirstFailure(llvm::ArrayRef<TimedRun> runs,
                         llvm::ArrayRef<bool> fails) {
  assert(runs.size() == fails.size() && "one outcome per run");
  std::optional<double> earliest;
  for (auto [run, fail] : llvm::zip_equal(runs, fails))
    if (fail && (!earliest || run.end < *earliest))
      earliest = run.end;
  if (!earliest)
    return std::nullopt;
  return FirstFailure{*earliest, computeGpuSecondsUntil(runs, *earliest)};
}

/// G(t) for every time of \p times (ascending), in one sweep over the start
/// and end events: G is piecewise linear with slope the GPUs busy at t.
static std::vector<double> gpuSecondsAtTimes(llvm::ArrayRef<TimedRun> runs,
                                             llvm::ArrayRef<double> times) {
  std::vector<std::pair<double, double>> events; // (time, change of slope)
  events.reserve(2 * runs.size());
  for (const TimedRun &run : runs) {
    events.emplace_back(run.start, static_cast<double>(run.gpus));
    events.emplace_back(run.end, -static_cast<double>(run.gpus));
  }
  llvm::sort(events);
  std::vector<double> values;
  values.reserve(times.size());
  double spent = 0, slope = 0, last = events.empty() ? 0 : events[0].first;
  size_t next = 0;
  for (double time : times) {
    for (; next < events.size() && events[next].first <= time; ++next) {
      spent += slope * (events[next].first - last);
      last = events[next].first;
      slope += events[next].second;
    }
    values.push_back(time > last ? spent + slope * (time - last) : spent);
  }
  return values;
}

ExpectedFirstFailure
fastci::computeExpectedFirstFailure(llvm::ArrayRef<TimedRun> runs,
                                    llvm::ArrayRef<double> failProb) {
  assert(runs.size() == failProb.size() && "one probability per run");
  std::vector<unsigned> byEnd(runs.size());
  std::iota(byEnd.begin(), byEnd.end(), 0u);
  std::stable_sort(byEnd.begin(), byEnd.end(), [&](unsigned a, unsigned b) {
    return runs[a].end < runs[b].end;
  });
  std::vector<double> ends;
  ends.reserve(runs.size());
  for (unsigned k : byEnd)
    ends.push_back(runs[k].end);
  std::vector<double> spentByEnd = gpuSecondsAtTimes(runs, ends);

  ExpectedFirstFailure expected;
  double noneYet = 1, weightedTime = 0, weightedGpuSeconds = 0;
  for (auto [k, spent] : llvm::zip_equal(byEnd, spentByEnd)) {
    double p = std::clamp(failProb[k], 0.0, 1.0);
    double firstHere = noneYet * p;
    weightedTime += firstHere * runs[k].end;
    weightedGpuSeconds += firstHere * spent;
    noneYet *= 1 - p;
  }
  expected.probability = 1 - noneYet;
  if (expected.probability > 0) {
    expected.time = weightedTime / expected.probability;
    expected.gpuSeconds = weightedGpuSeconds / expected.probability;
  }
  return expected;
}
