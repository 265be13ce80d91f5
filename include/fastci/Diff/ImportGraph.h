//===- ImportGraph.h - Which repository modules import which ----*- C++ -*-===//
//
// Module-level code runs once per process, when the module is first
// imported, and importing `a.b.c` first runs `a` and `a.b`. The import
// graph folds parse-python's static import edges (from any entity of a
// module, resolved or only written as a dotted name) onto modules, with
// those parent packages, so that mark-changed can tell whether an edit makes
// processes import code they did not import before and select-affected can
// find every process that runs a changed module body.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_IMPORTGRAPH_H
#define FASTCI_DIFF_IMPORTGRAPH_H

#include "fastci/IR/Module.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include <vector>

namespace fastci {

/// The static import graph between the modules of a Module.
class ImportGraph {
public:
  explicit ImportGraph(const Module &module);

  /// The module entity \p entity belongs to (itself for a module), or
  /// kNoEntity.
  EntityId getModuleOf(EntityId entity) const;
  /// The module a dotted name lives in: its longest prefix that names a
  /// module, or an entity of one; kNoEntity for code outside the module.
  EntityId lookupModule(llvm::StringRef dotted) const;
  /// The module of the Python file \p path, or kNoEntity.
  EntityId getModuleForFile(llvm::StringRef path) const;

  /// Modules \p module imports directly (parent packages included).
  llvm::ArrayRef<EntityId> getImports(EntityId module) const;
  /// Modules that import \p module directly.
  llvm::ArrayRef<EntityId> getImporters(EntityId module) const;

  /// \p module and every module that imports it, directly or not.
  llvm::DenseSet<EntityId> getImportersClosure(EntityId module) const;
  /// \p roots and every module they import, directly or not, not following
  /// the imports of \p skip (kNoEntity: follow all). With
  /// \p moduleLevelOnly, only imports a module (or class) body runs while it
  /// is imported count, not those inside functions.
  llvm::DenseSet<EntityId> getImportClosure(llvm::ArrayRef<EntityId> roots,
                                            EntityId skip = kNoEntity,
                                            bool moduleLevelOnly = false) const;

private:
  const Module &module;
  std::vector<std::vector<EntityId>> imports, importers, moduleLevelImports;
  llvm::StringMap<EntityId> moduleByFile;
};

} // namespace fastci

#endif // FASTCI_DIFF_IMPORTGRAPH_H
