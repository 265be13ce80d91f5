//===- ImportGraph.cpp - Which repository modules import which ------------===//
//
// Built in one pass over the edges; adjacency lists are sorted and unique,
// and closures are plain worklist walks, so results do not depend on edge
// order. Parent links are walked with a depth bound, as elsewhere, so that
// a malformed module cannot loop.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ImportGraph.h"
#include "llvm/ADT/STLExtras.h"

using namespace fastci;

ImportGraph::ImportGraph(const Module &module)
    : module(module), imports(module.getNumEntities()),
      importers(module.getNumEntities()),
      moduleLevelImports(module.getNumEntities()) {
  for (const Entity &entity : module.getEntities())
    if (entity.kind == EntityKind::Module)
      moduleByFile.try_emplace(module.getFilePath(entity.id), entity.id);
  for (const StaticEdge &edge : module.getEdges()) {
    if (edge.kind != EdgeKind::Import)
      continue;
    EntityId from = getModuleOf(edge.from);
    EntityId to = edge.to != kNoEntity ? getModuleOf(edge.to) : kNoEntity;
    if (to == kNoEntity)
      to = lookupModule(edge.name);
    if (from == kNoEntity || to == kNoEntity)
      continue;
    // Imports written in a module's or class's own code run with its body;
    // those in functions run when the function does.
    bool moduleLevel = true;
    for (EntityId at = edge.from; at != from && at < module.getNumEntities();
         at = module.getEntity(at).parent)
      if (module.getEntity(at).kind == EntityKind::Function) {
        moduleLevel = false;
        break;
      }
    // Importing `a.b.c` runs `a` and `a.b` first.
    for (llvm::StringRef name = module.getEntity(to).symbol; !name.empty();) {
      EntityId target = module.lookupEntity(name);
      if (target != kNoEntity && target != from &&
          module.getEntity(target).kind == EntityKind::Module) {
        imports[from].push_back(target);
        importers[target].push_back(from);
        if (moduleLevel)
          moduleLevelImports[from].push_back(target);
      }
      if (!name.contains('.'))
        break;
      name = name.rsplit('.').first;
    }
  }
  for (auto *lists : {&imports, &importers, &moduleLevelImports})
    for (std::vector<EntityId> &list : *lists) {
      llvm::sort(list);
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
}

EntityId ImportGraph::getModuleOf(EntityId entity) const {
  for (size_t depth = 0;
       entity < module.getNumEntities() && depth <= module.getNumEntities();
       entity = module.getEntity(entity).parent, ++depth)
    if (module.getEntity(entity).kind == EntityKind::Module)
      return entity;
  return kNoEntity;
}

EntityId ImportGraph::lookupModule(llvm::StringRef dotted) const {
  for (llvm::StringRef prefix = dotted; !prefix.empty();) {
    if (EntityId id = module.lookupEntity(prefix); id != kNoEntity)
      if (EntityId owner = getModuleOf(id); owner != kNoEntity)
        return owner;
    if (!prefix.contains('.'))
      break;
    prefix = prefix.rsplit('.').first;
  }
  return kNoEntity;
}

EntityId ImportGraph::getModuleForFile(llvm::StringRef path) const {
  auto it = moduleByFile.find(path);
  return it == moduleByFile.end() ? kNoEntity : it->second;
}

llvm::ArrayRef<EntityId> ImportGraph::getImports(EntityId id) const {
  return id < imports.size() ? llvm::ArrayRef<EntityId>(imports[id])
                             : llvm::ArrayRef<EntityId>();
}

llvm::ArrayRef<EntityId> ImportGraph::getImporters(EntityId id) const {
  return id < importers.size() ? llvm::ArrayRef<EntityId>(importers[id])
                               : llvm::ArrayRef<EntityId>();
}

llvm::DenseSet<EntityId> ImportGraph::getImportersClosure(EntityId id) const {
  llvm::DenseSet<EntityId> found;
  if (id >= importers.size())
    return found;
  found.insert(id);
  std::vector<EntityId> worklist{id};
  while (!worklist.empty()) {
    EntityId at = worklist.back();
    worklist.pop_back();
    for (EntityId from : importers[at])
      if (found.insert(from).second)
        worklist.push_back(from);
  }
  return found;
}

llvm::DenseSet<EntityId>
ImportGraph::getImportClosure(llvm::ArrayRef<EntityId> roots, EntityId skip,
                              bool moduleLevelOnly) const {
  const auto &edges = moduleLevelOnly ? moduleLevelImports : imports;
  llvm::DenseSet<EntityId> found;
  std::vector<EntityId> worklist;
  for (EntityId root : roots)
    if (root < imports.size() && found.insert(root).second)
      worklist.push_back(root);
  while (!worklist.empty()) {
    EntityId at = worklist.back();
    worklist.pop_back();
    if (at == skip)
      continue;
    for (EntityId to : edges[at])
      if (found.insert(to).second)
        worklist.push_back(to);
  }
  return found;
}
