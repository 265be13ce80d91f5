//===- ChangeSet.cpp - The changes test selection acts on -----------------===//
//
// Regions are computed from the parent links of entities in one pass over
// the module; executions join each region with the EvidenceGraph's
// per-entity test lists, so a change costs time proportional to its region
// and the tests that ran it, not to the whole module.
//
//===----------------------------------------------------------------------===//
#include "fastci/Select/ChangeSet.h"
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace fastci;

ChangeSet::ChangeSet(const Module &module)
    : module(module), children(module.getNumEntities()),
      changedEntities(module.getNumEntities()) {
  for (const Entity &entity : module.getEntities())
    if (entity.parent < module.getNumEntities() && entity.parent != entity.id)
      children[entity.parent].push_back(entity.id);

  for (const auto &[index, change] : llvm::enumerate(module.getChanges())) {
    if (change.kind == ChangeKind::Cosmetic)
      continue;
    RelevantChange &relevant = changes.emplace_back();
    relevant.index = index;
    if (change.entity < module.getNumEntities()) {
      relevant.entity = change.entity;
      changedEntities[change.entity] = true;
      // A classified change of a module's own lines leaves the functions
      // and classes defined in it as they were.
      std::optional<llvm::StringRef> level =
          lookupString(change.attrs, diff::attr::kModuleLevel);
      if (level && module.getEntity(change.entity).kind == EntityKind::Module &&
          (*level == diff::attr::kDefinition ||
           *level == diff::attr::kEffect)) {
        relevant.level = *level == diff::attr::kDefinition
                             ? ModuleLevel::Definition
                             : ModuleLevel::Effect;
        relevant.region = {change.entity};
      } else {
        relevant.region = getRegion(change.entity);
      }
      relevant.importEffect = level && *level == diff::attr::kEffect;
      auto readNames = [&](llvm::StringRef attr,
                           std::vector<std::string> &names) {
        if (const Attribute *list = change.attrs.lookup(attr);
            list && list->isList())
          for (const Attribute &name : list->getList())
            if (name.isString())
              names.push_back(name.getString().str());
      };
      readNames(diff::attr::kDefines, relevant.defines);
      readNames(diff::attr::kChangedImports, relevant.imports);
      relevant.importsOnly =
          change.attrs.get(diff::attr::kImportsOnly).isBool() &&
          change.attrs.get(diff::attr::kImportsOnly).getBool();
    }
    relevant.oldSymbols.push_back(change.symbol.str());
    if (std::optional<llvm::StringRef> from =
            lookupString(change.attrs, diff::attr::kMovedFrom))
      relevant.oldSymbols.push_back(from->str());
    uint64_t lines = 0;
    for (const LineRange &range : change.lines)
      lines += range.last >= range.first ? range.last - range.first + 1 : 1;
    relevant.numLines = std::max<uint64_t>(lines, 1);

    // Deleted code is observed by the tests that ran it (their evidence
    // names it); other code that names no entity is not.
    if (change.entity >= module.getNumEntities() && !change.file.empty() &&
        change.kind != ChangeKind::Deleted)
      wholeFileChanges.push_back(change.file.str());
  }
  for (const ChangedFile &file : module.getChangedFiles())
    if (file.status == "added" || file.status == "renamed")
      wholeFileChanges.push_back(file.path.str());
  llvm::sort(wholeFileChanges);
  wholeFileChanges.erase(
      std::unique(wholeFileChanges.begin(), wholeFileChanges.end()),
      wholeFileChanges.end());
}

bool ChangeSet::isChangedEntity(EntityId entity) const {
  return entity < changedEntities.size() && changedEntities[entity];
}

bool ChangeSet::isWholeFileChange(llvm::StringRef path) const {
  return std::binary_search(wholeFileChanges.begin(), wholeFileChanges.end(),
                            path);
}

std::vector<EntityId> ChangeSet::getRegion(EntityId entity) const {
  std::vector<EntityId> region;
  if (entity >= children.size())
    return region;
  // Parent links are only checked for cycles by the verifier; the seen set
  // keeps a malformed module from looping here.
  llvm::DenseSet<EntityId> seen;
  std::vector<EntityId> worklist{entity};
  while (!worklist.empty()) {
    EntityId id = worklist.back();
    worklist.pop_back();
    if (!seen.insert(id).second)
      continue;
    region.push_back(id);
    llvm::append_range(worklist, children[id]);
  }
  llvm::sort(region);
  return region;
}

std::vector<ChangeExecution>
ChangeSet::getExecutions(const EvidenceGraph &graph,
                         llvm::ArrayRef<EntityId> region) {
  llvm::DenseMap<TestId, ChangeExecution> byTest;
  for (EntityId entity : region) {
    for (TestId test : graph.getTestsExecuting(entity)) {
      const EvidenceGraph::EntityUse *use = graph.lookup(test, entity);
      uint64_t samples = use ? use->samples : 0;
      ChangeExecution &execution = byTest[test];
      // Regions are walked in id order, so ties keep the outermost entity.
      if (execution.test == kNoTest || samples > execution.samples)
        execution = {test, entity, samples};
    }
  }
  std::vector<ChangeExecution> executions;
  executions.reserve(byTest.size());
  for (const auto &entry : byTest)
    executions.push_back(entry.second);
  llvm::sort(executions,
             [](const ChangeExecution &a, const ChangeExecution &b) {
               return a.test < b.test;
             });
  return executions;
}

llvm::StringRef fastci::getTestFilePath(const Module &module,
                                        const Test &test) {
  if (test.entry < module.getNumEntities()) {
    llvm::StringRef path = module.getFilePath(test.entry);
    if (!path.empty())
      return path;
  }
  size_t separator = test.name.find("::");
  return separator == llvm::StringRef::npos ? llvm::StringRef()
                                            : test.name.take_front(separator);
}

std::optional<EvidenceState>
fastci::getEvidenceTrust(const Test &test, const EvidenceGraph &graph) {
  const Attribute *attr = test.attrs.lookup(evidence::attr::kState);
  if (!attr)
    return graph.hasEvidence(test.index) ? EvidenceState::Fresh
                                         : EvidenceState::Missing;
  if (!attr->isString())
    return std::nullopt;
  return parseEvidenceState(attr->getString());
}
