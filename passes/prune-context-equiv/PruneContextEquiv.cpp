//===- PruneContextEquiv.cpp - The prune-context-equiv pass ---------------===//
//
// prune-context-equiv{k=3,config-aware=true} drops selected tests whose
// every (changed entity, calling context) pair a cheaper kept test also
// covers, and records the witnesses. The work is done by
// pruneContextEquivalentTests() (lib/Select); this file binds it to the
// pipeline and loads the workload schema that says which configuration
// dimensions change behaviour. See docs/Selection.md.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Select/ContextPruner.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cmath>

using namespace fastci;

namespace {

struct PruneContextEquivPass : PassWrapper<PruneContextEquivPass> {
  llvm::StringRef getArgument() const override { return "prune-context-equiv"; }
  llvm::StringRef getSummary() const override {
    return "Prune selected tests whose changed code runs in contexts other "
           "kept tests cover";
  }
  llvm::StringRef getDescription() const override {
    return "Among the tests select-affected selected by evidence, keeps a "
           "greedy minimum-GPU-seconds set that covers every (changed entity, "
           "context) pair, where a context is the caller chains of depth <= "
           "`k`, the callees (library leaves included) and, with "
           "`config-aware`, the test's parallelism, precision and scope. "
           "Pruned tests get `pruned = true`, `pruned_by` and `witnesses`; "
           "fallback-selected tests are never pruned. See docs/Selection.md.";
  }

  Option<unsigned> contextDepth{
      *this, "k", llvm::cl::desc("Callers per calling chain in a context"),
      llvm::cl::init(3)};
  Option<bool> configAware{
      *this, "config-aware",
      llvm::cl::desc("Tell tests apart by behaviour-changing configuration"),
      llvm::cl::init(true)};
  Option<std::string> schemaPath{
      *this, "schema",
      llvm::cl::desc("Workload schema naming the behaviour-changing "
                     "dimensions (default: the built-in schema)")};

  Statistic numAffected{this, "num-affected", "Tests the selection kept"};
  Statistic numRetained{this, "num-retained", "Tests retained"};
  Statistic numPruned{this, "num-pruned", "Tests pruned"};
  Statistic numPairs{this, "num-pairs",
                     "Distinct (changed entity, context) pairs"};
  Statistic affectedGpuSeconds{this, "affected-gpu-seconds",
                               "GPU-seconds of the affected tests (rounded)"};
  Statistic retainedGpuSeconds{this, "retained-gpu-seconds",
                               "GPU-seconds of the retained tests (rounded)"};
  Statistic changedLines{this, "changed-lines", "Changed lines considered"};
  Statistic affectedCoveredLines{
      this, "affected-covered-lines",
      "Changed lines in code the affected tests' evidence executes"};
  Statistic retainedCoveredLines{
      this, "retained-covered-lines",
      "Changed lines in code the retained tests' evidence executes"};

  std::optional<ConfigSignatureBuilder> signatures;

  LogicalResult initialize(DiagnosticEngine &diag) override {
    if (contextDepth == 0) {
      diag.error(contextDepth.hasValue() ? contextDepth.getLoc() : getLoc(),
                 "prune-context-equiv option 'k' must be at least 1");
      return failure();
    }
    if (!configAware)
      return success();
    std::optional<WorkloadSchema> schema = loadWorkloadSchema(
        schemaPath.getValue(),
        schemaPath.getLoc().isValid() ? schemaPath.getLoc() : getLoc(), diag);
    if (!schema)
      return failure();
    signatures.emplace(std::move(*schema));
    return success();
  }

  void runOnModule() override {
    PruneOptions options;
    options.contextDepth = contextDepth;
    options.configAware = configAware;
    // Contexts deeper than merge-evidence recorded need a graph of their own.
    EvidenceGraph &cached = getAnalysis<EvidenceGraph>();
    std::optional<EvidenceGraph> deeper;
    if (cached.getContextDepth() < contextDepth)
      deeper.emplace(getModule(), contextDepth);
    PruneStats stats;
    if (failed(pruneContextEquivalentTests(getModule(),
                                           deeper ? *deeper : cached, options,
                                           signatures ? &*signatures : nullptr,
                                           getDiagnostics(), getLoc(), &stats)))
      return signalPassFailure();
    numAffected += stats.affected;
    numRetained += stats.retained;
    numPruned += stats.pruned;
    numPairs += stats.pairs;
    affectedGpuSeconds += std::llround(stats.affectedGpuSeconds);
    retainedGpuSeconds += std::llround(stats.retainedGpuSeconds);
    changedLines += stats.changedLines;
    affectedCoveredLines += stats.affectedCoveredLines;
    retainedCoveredLines += stats.retainedCoveredLines;
    markAnalysesPreserved<EvidenceGraph>();
  }
};

} // namespace

namespace fastci {
void registerPruneContextEquivPasses() {
  static PassRegistration<PruneContextEquivPass> registration;
}
} // namespace fastci
