//===- Schedule.cpp - The schedule and compute-metrics passes -------------===//
//
// schedule{runners,gpus-per-runner,policy,seed,coleman-*} orders the retained
// tests by a policy and list-schedules them onto a pool of GPU runners,
// writing each test's `rank`, `runner`, `start` and `end` and the pool's
// predicted makespan and expected first failure as module attributes. The
// policies, the scheduler and the metrics live in lib/Schedule;
// docs/Scheduling.md documents them. compute-metrics (ComputeMetrics.cpp) is
// registered here too, as the evaluation's view of a schedule.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Schedule/Coleman.h"
#include "fastci/Schedule/Metrics.h"
#include "fastci/Schedule/Risk.h"
#include "fastci/Schedule/ScheduleAttrs.h"
#include "fastci/Schedule/Scheduler.h"
#include "llvm/ADT/STLExtras.h"
#include <cmath>
#include <numeric>

using namespace fastci;

namespace {

struct SchedulePass : PassWrapper<SchedulePass> {
  llvm::StringRef getArgument() const override { return "schedule"; }
  llvm::StringRef getSummary() const override {
    return "Order the retained tests and pack them onto GPU runners";
  }
  llvm::StringRef getDescription() const override {
    return "Orders the selected, unpruned tests by `policy` (risk-first: "
           "risk per GPU-second; as-listed; random with `seed`; "
           "shortest-first; coleman: the FRRMAB bandit of COLEMAN replayed "
           "over the history) and list-schedules them, in that order, onto "
           "`runners` runners of `gpus-per-runner` GPUs. Writes `rank`, "
           "`runner`, `start`, `end` on each test and `schedule_*` module "
           "attributes (makespan, expected first failure). See "
           "docs/Scheduling.md.";
  }

  Option<int64_t> runners{*this, "runners",
                          llvm::cl::desc("Number of GPU runners (>= 1)"),
                          llvm::cl::init(1)};
  Option<int64_t> gpusPerRunner{*this, "gpus-per-runner",
                                llvm::cl::desc("GPUs on each runner (>= 1)"),
                                llvm::cl::init(8)};
  Option<SchedulePolicy> policy{*this, "policy",
                                llvm::cl::desc("How tests are ordered"),
                                llvm::cl::init(SchedulePolicy::RiskFirst),
                                enumValues(kSchedulePolicyNames)};
  Option<uint64_t> seed{*this, "seed",
                        llvm::cl::desc("Seed of the random policy"),
                        llvm::cl::init(0)};
  Option<unsigned> colemanWindow{
      *this, "coleman-window",
      llvm::cl::desc("COLEMAN sliding window, in CI cycles (W)"),
      llvm::cl::init(ColemanParams().window)};
  Option<double> colemanDecay{
      *this, "coleman-decay",
      llvm::cl::desc("COLEMAN rank decay factor (D, in (0, 1])"),
      llvm::cl::init(ColemanParams().decay)};
  Option<double> colemanExploration{
      *this, "coleman-c",
      llvm::cl::desc("COLEMAN exploration coefficient (C, >= 0)"),
      llvm::cl::init(ColemanParams().exploration)};
  Option<ColemanReward> colemanReward{
      *this, "coleman-reward", llvm::cl::desc("COLEMAN reward function"),
      llvm::cl::init(ColemanReward::RNFail), enumValues(kColemanRewardNames)};

  Statistic numScheduled{this, "num-scheduled", "Tests scheduled"};
  Statistic numUnscheduled{this, "num-unscheduled",
                           "Tests not scheduled (pruned or not selected)"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    auto reject = [&](const llvm::Twine &message) {
      diag.error(getLoc(), "schedule option " + message);
      return failure();
    };
    if (runners < 1 || runners > 1000000)
      return reject("'runners' must be between 1 and 1000000");
    if (gpusPerRunner < 1)
      return reject("'gpus-per-runner' must be at least 1");
    if (colemanWindow == 0)
      return reject("'coleman-window' must be at least 1");
    if (!(colemanDecay > 0 && colemanDecay <= 1))
      return reject("'coleman-decay' must be in (0, 1]");
    if (!(colemanExploration >= 0) || std::isinf(colemanExploration))
      return reject("'coleman-c' must be a non-negative number");
    return success();
  }

  void runOnModule() override;

private:
  /// The retained tests in priority order, or none after an error.
  std::optional<std::vector<TestId>> order(llvm::ArrayRef<TestId> retained);
  /// The `risk` of every retained test, or none when some test lacks one.
  std::optional<std::vector<double>> getRisks(llvm::ArrayRef<TestId> retained,
                                              bool required);
};

} // namespace

std::optional<std::vector<double>>
SchedulePass::getRisks(llvm::ArrayRef<TestId> retained, bool required) {
  std::vector<double> risks;
  for (TestId id : retained) {
    const Test &test = getModule().getTest(id);
    std::optional<double> risk =
        test.attrs.get(schedule::attr::kRisk).asNumber();
    if (!risk) {
      if (required)
        getDiagnostics().error(test.loc.isValid() ? test.loc : getLoc(),
                               "test '" + test.name +
                                   "' has no 'risk'; run score-risk before "
                                   "schedule{policy=risk-first}");
      return std::nullopt;
    }
    risks.push_back(*risk);
  }
  return risks;
}

std::optional<std::vector<TestId>>
SchedulePass::order(llvm::ArrayRef<TestId> retained) {
  const Module &module = getModule();
  std::vector<unsigned> positions;
  switch (policy) {
  case SchedulePolicy::RiskFirst: {
    std::optional<std::vector<double>> risks =
        getRisks(retained, /*required=*/true);
    if (!risks)
      return std::nullopt;
    std::vector<double> costs;
    for (TestId id : retained)
      costs.push_back(module.getTest(id).cost.gpuSeconds);
    positions = orderByRiskPerCost(*risks, costs);
    break;
  }
  case SchedulePolicy::AsListed:
    positions.resize(retained.size());
    std::iota(positions.begin(), positions.end(), 0u);
    break;
  case SchedulePolicy::Random:
    positions = orderRandomly(retained.size(), seed);
    break;
  case SchedulePolicy::ShortestFirst: {
    std::vector<double> seconds;
    for (TestId id : retained)
      seconds.push_back(module.getTest(id).cost.seconds);
    positions = orderByDuration(seconds);
    break;
  }
  case SchedulePolicy::Coleman: {
    ColemanParams params;
    params.window = colemanWindow;
    params.decay = colemanDecay;
    params.exploration = colemanExploration;
    params.reward = colemanReward;
    ColemanAgent agent(params);
    agent.replay(module);
    std::vector<llvm::StringRef> arms;
    for (TestId id : retained)
      arms.push_back(module.getTest(id).name);
    positions = agent.prioritize(arms);
    break;
  }
  }
  std::vector<TestId> ordered;
  for (unsigned position : positions)
    ordered.push_back(retained[position]);
  return ordered;
}

void SchedulePass::runOnModule() {
  Module &module = getModule();
  for (Test &test : module.getTests())
    for (llvm::StringRef key : {schedule::attr::kRank, schedule::attr::kRunner,
                                schedule::attr::kStart, schedule::attr::kEnd})
      test.attrs.erase(key);

  std::vector<TestId> retained = getRetainedTests(module);
  numUnscheduled += module.getNumTests() - retained.size();

  // Every test must fit a runner; report them all, then fail.
  bool tooBig = false;
  std::vector<Job> jobs;
  for (TestId id : retained) {
    const Test &test = module.getTest(id);
    if (test.cost.gpus > gpusPerRunner) {
      getDiagnostics().error(test.loc.isValid() ? test.loc : getLoc(),
                             "test '" + test.name + "' needs " +
                                 llvm::Twine(test.cost.gpus) +
                                 " GPUs but a runner has " +
                                 llvm::Twine(gpusPerRunner.getValue()));
      tooBig = true;
    }
  }
  if (tooBig)
    return signalPassFailure();

  std::optional<std::vector<TestId>> ordered = order(retained);
  if (!ordered)
    return signalPassFailure();

  // A test declaring no GPU still occupies a slot of a GPU runner.
  for (TestId id : *ordered) {
    const Test &test = module.getTest(id);
    jobs.push_back({std::max<int64_t>(1, test.cost.gpus), test.cost.seconds});
  }
  std::vector<Placement> placements = listSchedule(
      jobs, {static_cast<unsigned>(runners.getValue()), gpusPerRunner});

  std::vector<TimedRun> runs;
  double makespan = 0, gpuSeconds = 0;
  for (auto [rank, id, job, placement] :
       llvm::enumerate(*ordered, jobs, placements)) {
    Test &test = module.getTest(id);
    test.attrs.set(schedule::attr::kRank, Attribute::getInt(rank + 1));
    test.attrs.set(schedule::attr::kRunner,
                   Attribute::getInt(placement.runner));
    test.attrs.set(schedule::attr::kStart,
                   Attribute::getFloat(placement.start));
    test.attrs.set(schedule::attr::kEnd, Attribute::getFloat(placement.end));
    runs.push_back({placement.start, placement.end, job.gpus});
    makespan = std::max(makespan, placement.end);
    gpuSeconds += static_cast<double>(job.gpus) * job.seconds;
  }
  numScheduled += ordered->size();

  AttrDict &attrs = module.getAttrs();
  attrs.set(schedule::attr::kSchedulePolicy,
            Attribute::getString(stringifySchedulePolicy(policy)));
  attrs.set(schedule::attr::kScheduleRunners, Attribute::getInt(runners));
  attrs.set(schedule::attr::kScheduleGpusPerRunner,
            Attribute::getInt(gpusPerRunner));
  attrs.set(schedule::attr::kScheduleTests, Attribute::getInt(ordered->size()));
  attrs.set(schedule::attr::kScheduleMakespan, Attribute::getFloat(makespan));
  attrs.set(schedule::attr::kScheduleGpuSeconds,
            Attribute::getFloat(gpuSeconds));

  // The expected first failure needs a failure probability for every test;
  // any policy gets it when risks are known, so policies can be compared.
  for (llvm::StringRef key :
       {schedule::attr::kScheduleFailureProbability,
        schedule::attr::kScheduleExpectedFirstFailureTime,
        schedule::attr::kScheduleExpectedFirstFailureGpuSeconds})
    attrs.erase(key);
  if (std::optional<std::vector<double>> risks =
          getRisks(*ordered, /*required=*/false)) {
    std::vector<double> probabilities;
    for (double risk : *risks)
      probabilities.push_back(failureProbability(risk));
    ExpectedFirstFailure expected =
        computeExpectedFirstFailure(runs, probabilities);
    attrs.set(schedule::attr::kScheduleFailureProbability,
              Attribute::getFloat(expected.probability));
    if (expected.probability > 0) {
      attrs.set(schedule::attr::kScheduleExpectedFirstFailureTime,
                Attribute::getFloat(expected.time));
      attrs.set(schedule::attr::kScheduleExpectedFirstFailureGpuSeconds,
                Attribute::getFloat(expected.gpuSeconds));
    }
  }
}

namespace fastci {
void registerComputeMetricsPass();
void registerSchedulePasses() {
  static PassRegistration<SchedulePass> registration;
  registerComputeMetricsPass();
}
} // namespace fastci
