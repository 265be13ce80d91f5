//===- ScheduleAttrs.h - Attribute names of risk and scheduling -*- C++ -*-===//
//
// The attribute names score-risk, schedule and compute-metrics
// (lib/Schedule) set on tests and the module, declared once so that readers
// (prune-context-equiv, emit-plan, plugins) share one spelling. Each comment
// gives the value kind, what it means and who reads it; the verifier checks
// the kinds (passes/Attributes.cpp registers them). docs/IR.md has the table
// of writers and readers, docs/Risk.md and docs/Scheduling.md the meaning.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SCHEDULE_SCHEDULEATTRS_H
#define FASTCI_SCHEDULE_SCHEDULEATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::schedule::attr {

// Written by score-risk, on tests.

/// Number in [0, 1]: the test's failure risk. Read by schedule,
/// prune-context-equiv (which keeps the riskier of equivalent tests) and
/// emit-plan.
inline constexpr llvm::StringLiteral kRisk = "risk";
/// Number: the recent-failures term of the risk.
inline constexpr llvm::StringLiteral kRiskFailures = "risk_failures";
/// Number: the change-relevance term of the risk.
inline constexpr llvm::StringLiteral kRiskChange = "risk_change";
/// Number: the flakiness term of the risk.
inline constexpr llvm::StringLiteral kRiskFlakiness = "risk_flakiness";
/// Bool: the test has no history.
inline constexpr llvm::StringLiteral kRiskNew = "risk_new";

// Written by schedule, on tests.

/// Int (1-based): position in the run order. Read by compute-metrics and
/// emit-plan.
inline constexpr llvm::StringLiteral kRank = "rank";
/// Int (0-based): the runner the test is placed on. Read by emit-plan.
inline constexpr llvm::StringLiteral kRunner = "runner";
/// Number (seconds): planned start on its runner. Read by compute-metrics
/// and emit-plan.
inline constexpr llvm::StringLiteral kStart = "start";
/// Number (seconds): planned end on its runner. Read by compute-metrics.
inline constexpr llvm::StringLiteral kEnd = "end";

// Written by schedule, on the module. Read by emit-plan.

/// String: the SchedulePolicy used.
inline constexpr llvm::StringLiteral kSchedulePolicy = "schedule_policy";
/// Int: runners planned for.
inline constexpr llvm::StringLiteral kScheduleRunners = "schedule_runners";
/// Int: GPUs per runner.
inline constexpr llvm::StringLiteral kScheduleGpusPerRunner =
    "schedule_gpus_per_runner";
/// Int: tests scheduled.
inline constexpr llvm::StringLiteral kScheduleTests = "schedule_tests";
/// Number (seconds): the makespan.
inline constexpr llvm::StringLiteral kScheduleMakespan = "schedule_makespan";
/// Number: GPU-seconds of the scheduled tests.
inline constexpr llvm::StringLiteral kScheduleGpuSeconds =
    "schedule_gpu_seconds";
/// Number in [0, 1]: probability that some scheduled test fails.
inline constexpr llvm::StringLiteral kScheduleFailureProbability =
    "schedule_failure_probability";
/// Number (seconds): expected time to the first failure, when one may fail.
inline constexpr llvm::StringLiteral kScheduleExpectedFirstFailureTime =
    "schedule_expected_first_failure_time";
/// Number: expected GPU-seconds spent until the first failure.
inline constexpr llvm::StringLiteral kScheduleExpectedFirstFailureGpuSeconds =
    "schedule_expected_first_failure_gpu_seconds";

// Written by compute-metrics, on the module (for benchmarks and replays).

/// Int: tests the `failing=` option names.
inline constexpr llvm::StringLiteral kMetricsFailing = "metrics_failing";
/// Int: failing tests the schedule runs.
inline constexpr llvm::StringLiteral kMetricsDetected = "metrics_detected";
/// Number: APFD of the order.
inline constexpr llvm::StringLiteral kMetricsAPFD = "metrics_apfd";
/// Number: cost-cognizant APFD of the order.
inline constexpr llvm::StringLiteral kMetricsAPFDc = "metrics_apfdc";
/// Number: normalized APFD of the order.
inline constexpr llvm::StringLiteral kMetricsNAPFD = "metrics_napfd";
/// Number (seconds): time of the first failure.
inline constexpr llvm::StringLiteral kMetricsFirstFailureTime =
    "metrics_first_failure_time";
/// Number: GPU-seconds spent until the first failure.
inline constexpr llvm::StringLiteral kMetricsFirstFailureGpuSeconds =
    "metrics_first_failure_gpu_seconds";

} // namespace fastci::schedule::attr

#endif // FASTCI_SCHEDULE_SCHEDULEATTRS_H
