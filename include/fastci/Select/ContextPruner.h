//===- ContextPruner.h - Pruning tests that exercise nothing new -*- C++
//-*-===//
//
// Selection keeps every test that ran changed code, but an LLM framework has
// dozens of end-to-end tests that run the same changed function the same
// way. pruneContextEquivalentTests() keeps a cheapest subset that still
// exercises every changed entity in every distinct *context* the selection
// exercised it in, where a test's context for a changed entity is
//  * the chains of at most k callers above it in the test's evidence,
//  * its callees in the evidence, library leaves (collectives, kernels)
//    included, and
//  * optionally the test's configuration signature (parallel degrees,
//    precision, scope), because equal code paths under other parallelism or
//    numerics are not the same test.
// The kept set is a greedy weighted set cover (weight: GPU-seconds); every
// pruned test names its witnesses, the kept tests covering its pairs.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SELECT_CONTEXTPRUNER_H
#define FASTCI_SELECT_CONTEXTPRUNER_H

#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/IR/Module.h"
#include "fastci/Select/ConfigSignature.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include <cstdint>
#include <optional>

namespace fastci {

/// How contexts are compared.
struct PruneOptions {
  /// Callers per calling chain (at least 1).
  unsigned contextDepth = 3;
  /// Include the configuration signature in contexts.
  bool configAware = true;
};

/// The figures of a pruning, also recorded as the module's `pruning`
/// attribute for the plan.
struct PruneStats {
  /// Tests the selection kept, those pruned, and those retained.
  uint64_t affected = 0, pruned = 0, retained = 0;
  /// Distinct (changed entity, context) pairs the affected tests cover.
  uint64_t pairs = 0;
  /// GPU-seconds of the affected and of the retained tests.
  double affectedGpuSeconds = 0, retainedGpuSeconds = 0;
  /// Changed lines in all, and those in changes that some affected test's
  /// (resp. retained test's) trusted evidence executes.
  uint64_t changedLines = 0, affectedCoveredLines = 0, retainedCoveredLines = 0;
};

/// Prunes the tests select-affected selected in \p module. \p graph must
/// record calling contexts of at least \p options.contextDepth callers;
/// \p signatures is needed when \p options.configAware is set. Fails with a
/// diagnostic at \p loc when the module carries no selection.
LogicalResult pruneContextEquivalentTests(
    Module &module, const EvidenceGraph &graph, const PruneOptions &options,
    const ConfigSignatureBuilder *signatures, DiagnosticEngine &diag,
    llvm::SMLoc loc, PruneStats *stats = nullptr);

} // namespace fastci

#endif // FASTCI_SELECT_CONTEXTPRUNER_H
