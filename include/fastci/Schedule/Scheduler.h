//===- Scheduler.h - Ordering tests and packing them onto runners -*- C++
//-*-===//
//
// The two halves of `schedule`: a policy puts the retained tests in priority
// order, and a list scheduler dispatches them in that order onto a pool of
// identical GPU runners, as a CI queue would: the head of the queue starts as
// soon as some runner has enough free GPUs, on the lowest-numbered such
// runner. A runner runs several tests at once when their GPUs fit. Start
// times never decrease along the order, so the order is the order in which
// CI learns results. docs/Scheduling.md describes the policies.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SCHEDULE_SCHEDULER_H
#define FASTCI_SCHEDULE_SCHEDULER_H

#include "fastci/IR/Module.h"
#include "fastci/Support/EnumNames.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <vector>

namespace fastci {

/// How tests are put in priority order.
enum class SchedulePolicy {
  /// By risk per GPU-second, descending.
  RiskFirst,
  /// In module order.
  AsListed,
  /// A seeded, reproducible shuffle.
  Random,
  /// By wall-clock seconds, ascending.
  ShortestFirst,
  /// By the COLEMAN bandit's scores (Coleman.h).
  Coleman,
};

/// The spellings of SchedulePolicy: schedule's `policy=` option and the
/// module's `schedule_policy` attribute.
inline constexpr EnumName<SchedulePolicy> kSchedulePolicyNames[] = {
    {SchedulePolicy::RiskFirst, "risk-first",
     "Risk per GPU-second, descending"},
    {SchedulePolicy::AsListed, "as-listed", "Module order"},
    {SchedulePolicy::Random, "random", "Seeded shuffle"},
    {SchedulePolicy::ShortestFirst, "shortest-first",
     "Shortest wall-clock time first"},
    {SchedulePolicy::Coleman, "coleman",
     "COLEMAN's FRRMAB bandit over the history"},
};

/// The policy spelled \p spelling (`risk-first`, ...), if any.
inline std::optional<SchedulePolicy>
symbolizeSchedulePolicy(llvm::StringRef spelling) {
  return symbolizeEnum<SchedulePolicy>(kSchedulePolicyNames, spelling);
}
/// The spelling of \p policy.
inline llvm::StringRef stringifySchedulePolicy(SchedulePolicy policy) {
  return stringifyEnum<SchedulePolicy>(kSchedulePolicyNames, policy);
}

/// Indices into \p risk ordered by risk per GPU-second, descending; a test
/// that costs nothing but may fail comes first. Ties keep index order.
std::vector<unsigned> orderByRiskPerCost(llvm::ArrayRef<double> risk,
                                         llvm::ArrayRef<double> gpuSeconds);
/// Indices into \p seconds ordered by duration, ascending; ties keep index
/// order.
std::vector<unsigned> orderByDuration(llvm::ArrayRef<double> seconds);
/// A permutation of 0..\p size-1 drawn from \p seed. The generator and the
/// shuffle are spelled out (mt19937_64, Fisher–Yates with rejection
/// sampling), so the order is the same on every platform.
std::vector<unsigned> orderRandomly(unsigned size, uint64_t seed);

/// A test as the scheduler sees it.
struct Job {
  /// GPUs it occupies, 1 to the runners' GPU count.
  int64_t gpus = 1;
  /// Wall-clock seconds it runs.
  double seconds = 0;
};

/// Where and when a job runs.
struct Placement {
  /// The runner, 0-based.
  unsigned runner = 0;
  /// Start and end, in seconds from the pipeline's start.
  double start = 0, end = 0;
};

/// A pool of identical runners.
struct RunnerPool {
  /// How many runners there are (at least 1).
  unsigned runners = 1;
  /// GPUs on each runner (at least 1).
  int64_t gpusPerRunner = 1;
};

/// List-schedules \p jobs, in order, onto \p pool. Every job must need
/// between 1 and pool.gpusPerRunner GPUs.
std::vector<Placement> listSchedule(llvm::ArrayRef<Job> jobs, RunnerPool pool);

/// The tests `schedule` orders: those selected and not pruned. A module in
/// which no test carries a `selected` attribute has selected every test.
std::vector<TestId> getRetainedTests(const Module &module);

} // namespace fastci

#endif // FASTCI_SCHEDULE_SCHEDULER_H
