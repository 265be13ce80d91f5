//===- Lowering.h - The smallest workload that still validates a test -*-===//
//
// Given a test's workload, its validation scope and a dialect of the schema,
// finds the smallest workload that keeps every dimension the test validates
// (and every parallel and precision dimension) unchanged and satisfies all of
// the framework's constraints, and predicts its run time. The search decides
// dimensions in schema order, each at the smallest value for which all
// constraints over decided dimensions hold, backtracking when a later
// dimension has no valid value; so the result is the lexicographically
// smallest valid workload in schema order, which puts the expensive
// dimensions' minima first.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_WORKLOAD_LOWERING_H
#define FASTCI_WORKLOAD_LOWERING_H

#include "fastci/IR/Module.h"
#include "fastci/Workload/Schema.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include <optional>
#include <string>
#include <vector>

namespace fastci {

/// The validation scope of a test named \p testName, inferred from its name
/// tokens (`tp2` -> `tp`, `resume`, `dist_optimizer` -> `dist-optimizer`,
/// and the dialect's name scopes: `8experts` -> `experts`) against the
/// scopes \p dialect knows. Degree-1 tokens (`tp1`) name no scope.
std::vector<std::string> inferScope(llvm::StringRef testName,
                                    const Dialect &dialect);

/// The scopes the harness rules of \p test's test type, mode and flags add
/// (a `ckpt-resume` test validates `resume` whatever its name says).
std::vector<std::string> harnessScopes(const Test &test,
                                       const Dialect &dialect);

/// The flags of \p test's workload that \p dialect does not know, in
/// workload order; empty when the dialect has no unknown-flag policy.
std::vector<std::string> unknownFlags(const Test &test, const Dialect &dialect);

/// What lowering decided for one test.
struct LoweringResult {
  /// True if at least one dimension shrank.
  bool lowered = false;
  /// Why the workload stayed as it is, when it did.
  std::string reason;
  /// Flag -> new value, for every dimension that changed.
  AttrDict overrides;
  /// Flag -> why it was kept (`scope tp`, `parallel`, `golden values`...),
  /// for every dimension present in the workload that did not change.
  AttrDict pinned;
  /// Flag -> the behaviour floors (`name: why`) that kept it larger than
  /// the constraints alone would have, for every dimension they limited,
  /// followed by the floors over it that the test overrides (`name, off
  /// for this test: reason`, `name, raised to 20 for this test (reason):
  /// why`), joined by "; ".
  AttrDict floors;
  /// Predicted seconds of the lowered run (the original when not lowered).
  double predictedSeconds = 0;
  /// When steps shrank on a test with per-step goldens: compare only the
  /// first this-many steps.
  std::optional<int64_t> goldenSteps;
  /// True when a model dimension shrank on a test with goldens, which makes
  /// them invalid (only for tests marked tolerant).
  bool goldenInvalidated = false;
  /// The metrics that stay comparable with the goldens over the first
  /// goldenSteps steps (the harness's compared metrics).
  std::vector<std::string> goldenMetrics;
  /// Problems of the test's configuration that kept it as it is (a layer
  /// list of the wrong length, a resume test without a save interval);
  /// lower-workload reports each as a warning at the test.
  std::vector<std::string> warnings;
};

/// One test's adjustment of one of its dialect's behaviour floors.
struct FloorOverride {
  /// The floor's name in the schema (`model-width`).
  std::string name;
  /// True if the floor does not apply to this test at all.
  bool off = false;
  /// Otherwise the floor's bound is raised to at least this (still capped
  /// at the constrained dimension's original value, as every floor is).
  int64_t atLeast = 0;
  /// Why: required for `off`, optional for a raised bound.
  std::string why;
};

/// Reads \p test's floor overrides (workload::attr::kFloorOverrides) against
/// the floors of \p dialect. Reports, at the test's location, an override of a
/// floor the dialect lacks, a malformed entry, and a bound below a constant
/// floor's own (a test may raise a floor or turn it off, never lower it);
/// returns std::nullopt then. No attribute reads as no overrides.
std::optional<std::vector<FloorOverride>>
readFloorOverrides(const Test &test, const Dialect &dialect,
                   DiagnosticEngine &diag);

/// Options of the lowering search.
struct LoweringOptions {
  /// Constraint checks the search may spend per test before giving up.
  unsigned searchBudget = 1000000;
  /// Whether the dialect's behaviour floors apply.
  bool floors = true;
  /// The test's own overrides of the dialect's floors (ignored without
  /// floors); each is listed in the result's `floors`.
  std::vector<FloorOverride> floorOverrides;
  /// Flags the dialect does not know that may nevertheless not block the
  /// dimensions they could depend on; `*` allows every flag.
  std::vector<std::string> allowedFlags;
};

/// Lowers \p test's workload under \p dialect with the validation scope
/// \p scope.
LoweringResult lowerWorkload(const Test &test,
                             llvm::ArrayRef<std::string> scope,
                             const Dialect &dialect,
                             const LoweringOptions &options = {});

} // namespace fastci

#endif // FASTCI_WORKLOAD_LOWERING_H
