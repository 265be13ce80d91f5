//===- EvidenceGraph.h - The dynamic call graph seen by tests ---*- C++ -*-===//
//
// EvidenceGraph is the analysis later passes (select-affected,
// prune-context-equiv) query instead of walking stacks themselves. Built from
// a Module's evidence records, it holds:
//  * caller -> callee edges between entities and library leaves, weighted by
//    the samples whose stack contains the call, aggregated over all tests;
//  * per test, every entity it executed with inclusive and self samples,
//    each entity's calling contexts (chains of its nearest K entity callers)
//    and its callees, library leaves included;
//  * per entity, the tests that executed it.
// Records of the exact function recorder add, per test, the entities that
// started at test time (`functions`, folded into the entity uses with no
// samples), the entities run while a module body executed
// (`import_functions`), the modules its processes imported (`imports`) and
// the non-Python files they read (`reads`); the module's
// `import_time_entities` says which module's import ran which entity.
// A call through a library (`f; torch.nn.Module._call_impl; g`) makes both
// the leaf and `g` callees of `f`, and `f` a caller of `g`: libraries that
// call back into the repository (hooks, nn.Module, autograd) do not cut the
// graph. Samples count once per stack, so recursion does not inflate them.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_EVIDENCE_EVIDENCEGRAPH_H
#define FASTCI_EVIDENCE_EVIDENCEGRAPH_H

#include "fastci/IR/Module.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include <cstdint>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fastci {

/// Caller/callee structure and per-test profiles of a module's evidence.
class EvidenceGraph {
public:
  /// The calling-context depth used when the module does not record one
  /// (merge-evidence records its `k` as `evidence_context_depth`).
  static constexpr unsigned kDefaultContextDepth = 3;

  /// Builds the graph of \p module's evidence with the context depth the
  /// module records; the analysis manager's entry point.
  explicit EvidenceGraph(Module &module);
  /// Builds the graph of \p module's evidence with contexts of at most
  /// \p contextDepth callers.
  EvidenceGraph(const Module &module, unsigned contextDepth);

  /// A weighted call from an entity to a frame (entity or library leaf).
  struct CallEdge {
    EntityId caller;
    FrameId callee;
    /// Samples whose stack contains the call.
    uint64_t samples;
  };

  /// The nearest callers of an entity, innermost first (at most K), and the
  /// samples seen in that context.
  struct CallingContext {
    llvm::SmallVector<EntityId, 4> callers;
    uint64_t samples = 0;
  };

  /// What one test did in one entity.
  struct EntityUse {
    EntityId entity = kNoEntity;
    /// Samples with the entity on the stack, and as the innermost
    /// repository frame.
    uint64_t samples = 0, selfSamples = 0;
    /// Distinct calling contexts, ordered by caller ids.
    std::vector<CallingContext> contexts;
    /// Distinct callee frames (entities and leaves), ordered by frame id.
    std::vector<FrameId> callees;
  };

  /// The module the graph describes.
  const Module &getModule() const { return module; }
  /// The calling-context depth K.
  unsigned getContextDepth() const { return contextDepth; }

  /// Every call edge, ordered by (caller, callee).
  llvm::ArrayRef<CallEdge> getEdges() const { return edges; }
  /// The calls made by \p caller, ordered by callee.
  llvm::ArrayRef<CallEdge> getCallees(EntityId caller) const;

  /// True if test \p test has any evidence: samples, or a record of the
  /// exact recorder (whose functions may all be gone since).
  bool hasEvidence(TestId test) const {
    return test < profiles.size() &&
           (!profiles[test].empty() || hasImportEvidence(test));
  }
  /// The entities test \p test executed, ordered by entity id.
  llvm::ArrayRef<EntityUse> getEntityUses(TestId test) const;
  /// What test \p test did in \p entity, or null if it never ran it.
  const EntityUse *lookup(TestId test, EntityId entity) const;
  /// The tests that executed \p entity, ordered by test id.
  llvm::ArrayRef<TestId> getTestsExecuting(EntityId entity) const;

  /// True when some record of \p test comes from the exact function
  /// recorder's format (it has `coverage`, `functions`, `imports` or
  /// `import_functions`): its evidence then separates import time from test
  /// time, and says which modules it imported.
  bool hasImportEvidence(TestId test) const {
    return test < importInfo.size() && importInfo[test];
  }
  /// True when every record of \p test says `coverage = "exact"`: every
  /// function its processes started at test time is in its evidence, so
  /// code missing from it did not run (no sampling hole to fill).
  bool hasExactEvidence(TestId test) const {
    return test < exact.size() && exact[test];
  }
  /// Symbols in \p test's `functions` and `import_functions` that name no
  /// entity of the module (code deleted, moved or renamed since recording).
  llvm::ArrayRef<std::string> getUnresolvedFunctions(TestId test) const;
  /// The entities \p test ran while a module body executed, by id.
  llvm::ArrayRef<EntityId> getImportFunctions(TestId test) const;
  /// The modules \p test's processes imported as its records say, by id.
  llvm::ArrayRef<EntityId> getRecordedImports(TestId test) const;
  /// The tests that ran \p entity while a module body executed.
  llvm::ArrayRef<TestId> getTestsRunningAtImport(EntityId entity) const;
  /// The tests whose records say they imported module \p module.
  llvm::ArrayRef<TestId> getTestsImporting(EntityId module) const;
  /// The tests that read the repository file \p path (`reads`).
  llvm::ArrayRef<TestId> getTestsReading(llvm::StringRef path) const;
  /// The modules whose body ran \p entity during import
  /// (`import_time_entities`), by id.
  llvm::ArrayRef<EntityId> getImportingModules(EntityId entity) const;

  /// Prints the graph in a stable, human-readable form (for tests and
  /// debugging).
  void print(llvm::raw_ostream &os) const;

private:
  void build();
  void buildImportEvidence(
      const std::vector<std::vector<const EvidenceRecord *>> &recordsByTest);

  const Module &module;
  unsigned contextDepth;
  std::vector<CallEdge> edges;
  /// Indexed by test id.
  std::vector<std::vector<EntityUse>> profiles;
  /// Indexed by entity id.
  std::vector<std::vector<TestId>> testsByEntity;
  /// Import-time evidence, indexed by test id.
  std::vector<bool> importInfo, exact;
  std::vector<std::vector<std::string>> unresolvedFunctions;
  std::vector<std::vector<EntityId>> importFunctions, recordedImports;
  /// Inverses, indexed by entity id.
  std::vector<std::vector<TestId>> testsAtImport, testsImporting;
  std::vector<std::vector<EntityId>> importingModules;
  /// Tests by file read, each list ordered by test id.
  llvm::StringMap<std::vector<TestId>> readers;
};

} // namespace fastci

#endif // FASTCI_EVIDENCE_EVIDENCEGRAPH_H
