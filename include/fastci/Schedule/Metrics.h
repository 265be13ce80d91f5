//===- Metrics.h - How early a test order reveals failures -------*- C++
//-*-===//
//
// The prioritisation metrics shared by `schedule`, `compute-metrics` and the
// Python evaluation: APFD (Rothermel et al.), its cost-aware form APFDc
// (Elbaum et al.), NAPFD for orders that run only part of the suite (Qu et
// al.), and, for a schedule on a runner pool, the time and the GPU-seconds
// until the first failure is known. docs/Scheduling.md gives the formulas.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SCHEDULE_METRICS_H
#define FASTCI_SCHEDULE_METRICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <cstdint>
#include <optional>

namespace fastci {

/// A test of a prioritised suite, as the metrics see it.
struct PrioritizedTest {
  /// What running it costs (seconds or GPU-seconds); used by APFDc.
  double cost = 1;
  /// The faults it reveals, numbered 0..numFaults-1.
  llvm::SmallVector<unsigned, 2> faults;
};

/// APFD = 1 − ΣTF_i / (n·m) + 1 / (2n) for the tests \p order (n of them)
/// and \p numFaults faults (m), TF_i being the 1-based position of the first
/// test revealing fault i. None when n or m is 0 or a fault is never
/// revealed (APFD assumes every fault is; use NAPFD).
std::optional<double> computeAPFD(llvm::ArrayRef<PrioritizedTest> order,
                                  unsigned numFaults);

/// APFDc = Σ_i f_i·(Σ_{j ≥ TF_i} t_j − t_{TF_i}/2) / (Σ_j t_j · Σ_i f_i),
/// with test costs t_j and fault severities f_i (all 1 when \p severities is
/// empty). None when APFD is, or when the total cost or severity is 0.
std::optional<double> computeAPFDc(llvm::ArrayRef<PrioritizedTest> order,
                                   unsigned numFaults,
                                   llvm::ArrayRef<double> severities = {});

/// NAPFD = p − ΣTF_i / (n·m) + p / (2n), where p is the share of the m
/// faults that \p order reveals and TF_i is 0 for a fault it misses. None
/// when n or m is 0.
std::optional<double> computeNAPFD(llvm::ArrayRef<PrioritizedTest> order,
                                   unsigned numFaults);

/// A test as placed on the runner pool.
struct TimedRun {
  /// When it starts and ends, in seconds from the pipeline's start.
  double start = 0, end = 0;
  /// GPUs it occupies while it runs.
  int64_t gpus = 1;
};

/// The GPU-seconds the pool has spent on \p runs by time \p time.
double computeGpuSecondsUntil(llvm::ArrayRef<TimedRun> runs, double time);

/// When CI first learns of a failure, and what it cost to get there.
struct FirstFailure {
  /// The earliest end among failing runs.
  double time = 0;
  /// GPU-seconds spent by then (computeGpuSecondsUntil).
  double gpuSeconds = 0;
};

/// The first failure among \p runs, where \p fails says which fail; none
/// when no run fails.
std::optional<FirstFailure> findFirstFailure(llvm::ArrayRef<TimedRun> runs,
                                             llvm::ArrayRef<bool> fails);

/// The first failure in expectation over independent failures.
struct ExpectedFirstFailure {
  /// P(at least one run fails) = 1 − Π(1 − p_j).
  double probability = 0;
  /// E[time of the first failure | some run fails].
  double time = 0;
  /// E[GPU-seconds spent by then | some run fails].
  double gpuSeconds = 0;
};

/// The expected first failure of \p runs when run j fails independently with
/// probability \p failProb[j]. Runs are taken in order of their end (ties in
/// the given order); run k is the first failure with probability
/// p_k · Π_{j before k} (1 − p_j).
ExpectedFirstFailure
computeExpectedFirstFailure(llvm::ArrayRef<TimedRun> runs,
                            llvm::ArrayRef<double> failProb);

} // namespace fastci

#endif // FASTCI_SCHEDULE_METRICS_H
