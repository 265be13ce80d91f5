//===- StaticReach.h - Who can reach code through static edges --*- C++ -*-===//
//
// Sampling at 50 Hz misses short functions, and new code has never run, so
// evidence alone cannot say which tests reach some changes. The static call
// and import edges of parse-python can: StaticReach walks them backwards from
// changed code, hop by hop, and remembers for every entity it meets the edge
// it came through, so a selection made on this basis can print the exact
// chain (`@"a" calls @"b" calls @"f"`). An import of a module reaches
// everything defined in it; edges the parser could not resolve are matched
// by the dotted name they were written with.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SELECT_STATICREACH_H
#define FASTCI_SELECT_STATICREACH_H

#include "fastci/IR/Module.h"
#include "fastci/Select/ChangeSet.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include <string>
#include <vector>

namespace fastci {

/// One entity found by a backward walk: how far it is from the target and
/// the edge of its shortest path towards it.
struct StaticStep {
  /// Number of edges from this entity to the target.
  unsigned hops = 0;
  /// Index in Module::getEdges() of the edge this entity's path starts with.
  size_t edge = 0;
  /// The entity whose region that edge leads into: the edge's target, an
  /// entity enclosing it (a call into a module's function reaches the
  /// module), or one it encloses (an import of a module reaches what the
  /// module defines). kNoEntity when the edge ends the path at code known
  /// only by name.
  EntityId next = kNoEntity;
};

/// The result of a backward walk from one target.
class StaticPaths {
public:
  /// Every entity found, with its first step; ordered by entity id.
  llvm::ArrayRef<std::pair<EntityId, StaticStep>> getEntities() const {
    return found;
  }
  /// Prints the chain from \p from to the target: `@"a" calls @"b" imports
  /// @"pkg.m"`.
  std::string formatChain(const Module &module, EntityId from) const;

private:
  friend class StaticReach;
  std::vector<std::pair<EntityId, StaticStep>> found;
  llvm::DenseMap<EntityId, StaticStep> steps;
};

/// The reversed static graph of a module.
class StaticReach {
public:
  /// Indexes the edges of \p changes' module; regions come from \p changes.
  explicit StaticReach(const ChangeSet &changes);

  /// The entities from which at most \p maxHops static edges lead into the
  /// region of \p target (kNoEntity for code that no longer exists) or to
  /// code named by one of \p symbols (edges the parser left unresolved).
  /// Each entity found is itself expanded to its region for the next hop:
  /// calling any function of a module reaches what the module imports.
  /// With \p importsReachTarget false, an import of the module (or class)
  /// enclosing the target does not count as reaching the target itself:
  /// for new code, which no existing code can name without changing.
  StaticPaths findReaching(EntityId target, llvm::ArrayRef<std::string> symbols,
                           unsigned maxHops,
                           bool importsReachTarget = true) const;

  /// The edges of kind Call that resolve to \p entity, in module order.
  llvm::ArrayRef<size_t> getCallsTo(EntityId entity) const;

private:
  /// The edges leading to \p entity: resolved edges to it, unresolved edges
  /// naming its symbol, and imports of the modules and classes enclosing it.
  void collectIncoming(EntityId entity, std::vector<size_t> &edges,
                       bool viaEnclosingImports = true) const;

  const ChangeSet &changes;
  const Module &module;
  /// Edge indices by resolved target, and by written name for unresolved
  /// edges.
  std::vector<std::vector<size_t>> incoming;
  std::vector<std::vector<size_t>> incomingCalls;
  llvm::StringMap<std::vector<size_t>> unresolved;
};

} // namespace fastci

#endif // FASTCI_SELECT_STATICREACH_H
