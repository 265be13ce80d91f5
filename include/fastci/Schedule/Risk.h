//===- Risk.h - How likely a test is to fail on this change -----*- C++ -*-===//
//
// The risk model behind `score-risk`: a test's risk adds its recent,
// recency-weighted failure rate (failures that look flaky discounted) and
// the share of its sampled stacks that run changed code; tests with no
// history start from a prior. docs/Risk.md gives the formula and the meaning
// of every parameter; this file is its only implementation.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SCHEDULE_RISK_H
#define FASTCI_SCHEDULE_RISK_H

#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/IR/Module.h"
#include "llvm/ADT/ArrayRef.h"
#include <optional>
#include <vector>

namespace fastci {

/// The parameters of the risk model (docs/Risk.md).
struct RiskParams {
  /// W: how many of the most recent non-skipped runs count.
  unsigned window = 5;
  /// γ: the weight of the i-th most recent run is γ^i (i = 0 most recent).
  double decay = 0.8;
  /// λ: the weight of change relevance.
  double lambda = 5;
  /// ρ: the factor a flaky failure's weight is multiplied by.
  double flakyWeight = 0.5;
  /// π: the failure term of a test with no history.
  double newTestPrior = 0.5;
};

/// The terms of one test's risk, each exposed as a test attribute.
struct RiskTerms {
  /// F: recency-weighted failure rate over the window, in [0, 1].
  double failures = 0;
  /// C: share of the test's samples in stacks running changed code, in
  /// [0, 1]; 0 when the test has no evidence.
  double changeRelevance = 0;
  /// φ: share of the window's failures that look flaky, in [0, 1].
  double flakiness = 0;
  /// True when the test has no non-skipped run (F is then the prior).
  bool isNew = false;
  /// Runs in the window.
  unsigned runs = 0;
  /// F + λ·C.
  double risk = 0;
};

/// Computes the risk of a test with \p history (oldest first) whose change
/// relevance is \p changeShare.
RiskTerms computeRisk(llvm::ArrayRef<Outcome> history, double changeShare,
                      const RiskParams &params);

/// Per test id, how much of what the test runs changed: the larger of the
/// share of its sample counts that fall in stacks containing a changed
/// entity and the share of the functions it executed (\p graph: sampled, or
/// recorded by the exact recorder) that are changed; none when the test has
/// neither samples nor functions. An entity counts as changed when it, or a
/// class or function enclosing it, has a non-cosmetic change.
std::vector<std::optional<double>>
computeChangeShares(const Module &module, const EvidenceGraph &graph);

/// The probability that a test of risk \p risk fails: 1 − e^(−risk), which
/// treats risk as a failure hazard (docs/Scheduling.md).
double failureProbability(double risk);

} // namespace fastci

#endif // FASTCI_SCHEDULE_RISK_H
