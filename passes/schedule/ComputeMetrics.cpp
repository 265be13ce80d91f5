//===- ComputeMetrics.cpp - The compute-metrics pass ----------------------===//
//
// compute-metrics{failing=<test ids>} scores a scheduled module against the
// tests that actually failed, so that the Python evaluation can compare
// policies through fastci-opt instead of reimplementing the metrics. Each
// failing test counts as one fault; a failing test the schedule left out is
// a fault the schedule misses. Formulas: docs/Scheduling.md.
//
//===----------------------------------------------------------------------===//
#include "fastci/History/History.h"
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Schedule/Metrics.h"
#include "fastci/Schedule/ScheduleAttrs.h"
#include "llvm/ADT/STLExtras.h"

using namespace fastci;

namespace {

/// What APFDc weighs tests by.
enum class MetricCost { GpuSeconds, Seconds };
constexpr EnumName<MetricCost> kMetricCostNames[] = {
    {MetricCost::GpuSeconds, "gpu-seconds", "GPU-seconds"},
    {MetricCost::Seconds, "seconds", "Wall-clock seconds"},
};

struct ComputeMetricsPass : PassWrapper<ComputeMetricsPass> {
  llvm::StringRef getArgument() const override { return "compute-metrics"; }
  llvm::StringRef getSummary() const override {
    return "Score a schedule against the tests that failed (APFD, APFDc, "
           "NAPFD, first failure)";
  }
  llvm::StringRef getDescription() const override {
    return "Reads the `rank`, `start` and `end` that `schedule` wrote and "
           "sets `metrics_apfd`, `metrics_apfdc`, `metrics_napfd`, "
           "`metrics_first_failure_time` and "
           "`metrics_first_failure_gpu_seconds` on the module, each failing "
           "test counting as one fault. Undefined metrics (APFD when a "
           "failure was not scheduled, anything without failures) are left "
           "out. See docs/Scheduling.md.";
  }

  ListOption<std::string> failing{
      *this, "failing", llvm::cl::desc("Ids of the tests that failed")};
  Option<MetricCost> cost{
      *this, "cost", llvm::cl::desc("What APFDc weighs tests by"),
      llvm::cl::init(MetricCost::GpuSeconds), enumValues(kMetricCostNames)};

  void runOnModule() override;
};

} // namespace

void ComputeMetricsPass::runOnModule() {
  Module &module = getModule();
  std::vector<const Test *> scheduled;
  for (const Test &test : module.getTests())
    if (test.attrs.get(schedule::attr::kRank).isInt())
      scheduled.push_back(&test);
  if (scheduled.empty()) {
    getDiagnostics().error(getLoc(), "compute-metrics needs a scheduled "
                                     "module (tests with 'rank'); run "
                                     "schedule first");
    return signalPassFailure();
  }
  llvm::stable_sort(scheduled, [](const Test *a, const Test *b) {
    return a->attrs.get(schedule::attr::kRank).getInt() <
           b->attrs.get(schedule::attr::kRank).getInt();
  });

  // Fault k is the k-th distinct failing test.
  TestMatcher matcher(module);
  llvm::DenseMap<TestId, unsigned> faultOf;
  for (const std::string &name : failing) {
    TestId id = matcher.lookup(name);
    if (id == kNoTest) {
      getDiagnostics().error(getLoc(), "failing test '" + name +
                                           "' is not in the module");
      return signalPassFailure();
    }
    faultOf.try_emplace(id, faultOf.size());
  }
  unsigned numFaults = faultOf.size();

  std::vector<PrioritizedTest> order;
  std::vector<TimedRun> runs;
  llvm::SmallVector<bool> fails;
  unsigned detected = 0;
  for (const Test *test : scheduled) {
    PrioritizedTest &entry = order.emplace_back();
    entry.cost = cost == MetricCost::GpuSeconds ? test->cost.gpuSeconds
                                                : test->cost.seconds;
    auto fault = faultOf.find(test->index);
    if (fault != faultOf.end()) {
      entry.faults.push_back(fault->second);
      ++detected;
    }
    fails.push_back(fault != faultOf.end());
    std::optional<double> start =
        test->attrs.get(schedule::attr::kStart).asNumber();
    std::optional<double> end =
        test->attrs.get(schedule::attr::kEnd).asNumber();
    if (!start || !end) {
      getDiagnostics().error(test->loc.isValid() ? test->loc : getLoc(),
                             "scheduled test '" + test->name +
                                 "' has no 'start' and 'end'");
      return signalPassFailure();
    }
    runs.push_back({*start, *end, std::max<int64_t>(1, test->cost.gpus)});
  }

  AttrDict &attrs = module.getAttrs();
  for (llvm::StringRef key :
       {schedule::attr::kMetricsAPFD, schedule::attr::kMetricsAPFDc,
        schedule::attr::kMetricsNAPFD, schedule::attr::kMetricsFirstFailureTime,
        schedule::attr::kMetricsFirstFailureGpuSeconds})
    attrs.erase(key);
  attrs.set(schedule::attr::kMetricsFailing, Attribute::getInt(numFaults));
  attrs.set(schedule::attr::kMetricsDetected, Attribute::getInt(detected));
  auto setIfDefined = [&](llvm::StringRef key, std::optional<double> value) {
    if (value)
      attrs.set(key, Attribute::getFloat(*value));
  };
  setIfDefined(schedule::attr::kMetricsAPFD, computeAPFD(order, numFaults));
  setIfDefined(schedule::attr::kMetricsAPFDc, computeAPFDc(order, numFaults));
  setIfDefined(schedule::attr::kMetricsNAPFD, computeNAPFD(order, numFaults));
  if (std::optional<FirstFailure> first = findFirstFailure(runs, fails)) {
    attrs.set(schedule::attr::kMetricsFirstFailureTime,
              Attribute::getFloat(first->time));
    attrs.set(schedule::attr::kMetricsFirstFailureGpuSeconds,
              Attribute::getFloat(first->gpuSeconds));
  }
  markAllAnalysesPreserved();
}

namespace fastci {
void registerComputeMetricsPass() {
  static PassRegistration<ComputeMetricsPass> registration;
}
} // namespace fastci
