//===- ChangeSet.h - The changes test selection acts on ---------*- C++ -*-===//
//
// select-affected and prune-context-equiv both ask, for every change that can
// alter behaviour, which code it covers and which tests ran that code. A
// ChangeSet answers once for both: it keeps the changes that are not
// cosmetic, expands each changed entity to its *region* (the entity and
// everything nested in it, since a changed class body or module-level line
// affects every method and function defined under it), and joins regions
// with the EvidenceGraph to list, per change, the tests that executed code
// inside it.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SELECT_CHANGESET_H
#define FASTCI_SELECT_CHANGESET_H

#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/Evidence/EvidenceMerger.h"
#include "fastci/IR/Module.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fastci {

/// What a change to a module's own lines (code outside every function and
/// class) does when the module is imported, as mark-changed classified it.
enum class ModuleLevel : uint8_t {
  /// Not a module-level change, or not classified: its region is the whole
  /// module (every entity nested in it).
  None,
  /// It only binds names (`defines`): code that reads them observes it.
  Definition,
  /// It may act beyond binding names: every importer observes it.
  Effect,
};

/// A change that selection must account for.
struct RelevantChange {
  /// Index of the change in Module::getChanges().
  size_t index = 0;
  /// The changed entity, or kNoEntity for code that no longer exists.
  EntityId entity = kNoEntity;
  /// The entity and every entity nested in it, ordered by id; empty for
  /// code that no longer exists.
  std::vector<EntityId> region;
  /// Symbols the code was known by in earlier revisions (its own symbol and
  /// `moved_from`), which stale evidence and unresolved edges may name.
  std::vector<std::string> oldSymbols;
  /// Number of changed lines (at least 1, so that changes recorded without
  /// lines still weigh in line coverage).
  uint64_t numLines = 1;
  /// For a classified change of a module's own lines: what it does at
  /// import; its region is then the module entity alone, since the entities
  /// nested in it did not change.
  ModuleLevel level = ModuleLevel::None;
  /// For classified changes of a module's or class's own lines: the names
  /// bound.
  std::vector<std::string> defines;
  /// For a Definition: modules its changed import statements import, as
  /// written (mark-changed's `changed_imports`); empty when it imports
  /// nothing.
  std::vector<std::string> imports;
  /// For a Definition with imports: every changed statement is an import
  /// (mark-changed's `imports_only`).
  bool importsOnly = false;
  /// The change runs with effects when its module is imported (a
  /// module-level Effect, or a class whose own lines are one).
  bool importEffect = false;
};

/// One test's execution of a change's region.
struct ChangeExecution {
  TestId test = kNoTest;
  /// The entity of the region the test spent most samples in.
  EntityId hottest = kNoEntity;
  /// Inclusive samples of that entity.
  uint64_t samples = 0;
};

/// The non-cosmetic changes of a module with their regions.
class ChangeSet {
public:
  /// Collects the changes of \p module.
  explicit ChangeSet(const Module &module);

  /// The changes, in module order.
  llvm::ArrayRef<RelevantChange> getChanges() const { return changes; }
  /// The Change record of \p change.
  const Change &getRecord(const RelevantChange &change) const {
    return module.getChanges()[change.index];
  }
  /// True when \p entity itself has a non-cosmetic change.
  bool isChangedEntity(EntityId entity) const;
  /// True when the file \p path changed in a way no entity of it holds: a
  /// changed_file record says it was added or renamed (every test in it has
  /// a new id), or a non-cosmetic change in it other than a deletion names
  /// no entity. A change of an entity, or a deleted one, is observed through
  /// that entity, test by test.
  bool isWholeFileChange(llvm::StringRef path) const;

  /// The module the changes belong to.
  const Module &getModule() const { return module; }

  /// \p entity and every entity nested in it, ordered by id.
  std::vector<EntityId> getRegion(EntityId entity) const;

  /// The tests whose evidence executed code in \p region, ordered by test
  /// id, each with the entity of the region it spent most samples in.
  static std::vector<ChangeExecution>
  getExecutions(const EvidenceGraph &graph, llvm::ArrayRef<EntityId> region);

private:
  const Module &module;
  /// Nested entities, indexed by parent id.
  std::vector<std::vector<EntityId>> children;
  std::vector<RelevantChange> changes;
  std::vector<bool> changedEntities;
  /// The files isWholeFileChange() is true for, sorted.
  std::vector<std::string> wholeFileChanges;
};

/// How far \p test's evidence can be trusted: its `evidence` attribute, or
/// for modules that never ran merge-evidence, Fresh when \p graph holds
/// evidence for it and Missing otherwise. std::nullopt when the attribute
/// names no state.
std::optional<EvidenceState> getEvidenceTrust(const Test &test,
                                              const EvidenceGraph &graph);

/// True when evidence in \p state may stand for what a test runs.
inline bool isUsableEvidence(EvidenceState state) {
  return state == EvidenceState::Fresh || state == EvidenceState::Unverified;
}

/// The file path that a test lives in: its entry's file, else the part of a
/// pytest node id before `::`; empty when neither is known.
llvm::StringRef getTestFilePath(const Module &module, const Test &test);

} // namespace fastci

#endif // FASTCI_SELECT_CHANGESET_H
