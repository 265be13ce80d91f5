//===- StaticReach.cpp - Who can reach code through static edges ----------===//
//
// A breadth-first walk over reversed edges: the first time an entity is met
// is along a shortest path, so the step recorded then is the one chains
// print. Entities are expanded in id order within a hop, which makes the
// chosen paths independent of edge order in the input.
//
//===----------------------------------------------------------------------===//
#include "fastci/Select/StaticReach.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

StaticReach::StaticReach(const ChangeSet &changes)
    : changes(changes), module(changes.getModule()),
      incoming(module.getNumEntities()),
      incomingCalls(module.getNumEntities()) {
  for (const auto &[index, edge] : llvm::enumerate(module.getEdges())) {
    if (edge.from >= module.getNumEntities())
      continue;
    if (edge.to < module.getNumEntities()) {
      incoming[edge.to].push_back(index);
      if (edge.kind == EdgeKind::Call)
        incomingCalls[edge.to].push_back(index);
    } else if (!edge.name.empty()) {
      unresolved[edge.name].push_back(index);
    }
  }
}

llvm::ArrayRef<size_t> StaticReach::getCallsTo(EntityId entity) const {
  if (entity >= incomingCalls.size())
    return {};
  return incomingCalls[entity];
}

void StaticReach::collectIncoming(EntityId entity, std::vector<size_t> &edges,
                                  bool viaEnclosingImports) const {
  llvm::append_range(edges, incoming[entity]);
  if (auto it = unresolved.find(module.getEntity(entity).symbol);
      it != unresolved.end())
    llvm::append_range(edges, it->second);
  if (!viaEnclosingImports)
    return;
  // `import pkg.mod` and `from pkg import mod` reach everything `pkg.mod`
  // defines. The depth bound guards against parent cycles in unverified
  // input.
  EntityId ancestor = module.getEntity(entity).parent;
  for (size_t depth = 0;
       ancestor < module.getNumEntities() && depth < module.getNumEntities();
       ancestor = module.getEntity(ancestor).parent, ++depth) {
    const Entity &outer = module.getEntity(ancestor);
    if (outer.kind == EntityKind::File)
      break;
    for (size_t edge : incoming[ancestor])
      if (module.getEdges()[edge].kind == EdgeKind::Import)
        edges.push_back(edge);
  }
}

StaticPaths StaticReach::findReaching(EntityId target,
                                      llvm::ArrayRef<std::string> symbols,
                                      unsigned maxHops,
                                      bool importsReachTarget) const {
  StaticPaths paths;
  llvm::DenseMap<EntityId, StaticStep> &steps = paths.steps;
  std::vector<EntityId> targetRegion = changes.getRegion(target);
  llvm::DenseSet<EntityId> targets(targetRegion.begin(), targetRegion.end());

  std::vector<EntityId> frontier;
  auto visit = [&](size_t edgeIndex, EntityId next, unsigned hops) {
    EntityId from = module.getEdges()[edgeIndex].from;
    if (targets.contains(from) || steps.contains(from))
      return;
    steps[from] = {hops, edgeIndex, next};
    frontier.push_back(from);
  };
  std::vector<size_t> edges;
  auto expand = [&](EntityId entity, unsigned hops, bool viaImports) {
    edges.clear();
    for (EntityId member : changes.getRegion(entity)) {
      collectIncoming(member, edges, viaImports);
      // Methods are mostly reached through dispatch the static graph cannot
      // follow (`layer(x)` runs `Layer.forward`); code that constructs or
      // names the class is taken to reach its methods.
      const Entity &memberEntity = module.getEntity(member);
      if (memberEntity.kind == EntityKind::Function &&
          memberEntity.parent != kNoEntity &&
          module.getEntity(memberEntity.parent).kind == EntityKind::Class)
        collectIncoming(memberEntity.parent, edges, viaImports);
    }
    llvm::sort(edges);
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    for (size_t edge : edges)
      visit(edge, entity, hops);
  };

  if (maxHops == 0)
    return paths;
  if (target != kNoEntity)
    expand(target, 1, importsReachTarget);
  for (const std::string &symbol : symbols)
    if (auto it = unresolved.find(symbol); it != unresolved.end())
      for (size_t edge : it->second)
        visit(edge, kNoEntity, 1);

  for (unsigned hops = 2; hops <= maxHops && !frontier.empty(); ++hops) {
    std::vector<EntityId> current = std::move(frontier);
    frontier.clear();
    llvm::sort(current);
    for (EntityId entity : current)
      expand(entity, hops, true);
  }

  paths.found.assign(steps.begin(), steps.end());
  llvm::sort(paths.found,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  return paths;
}

/// True when \p outer is \p inner or encloses it.
static bool encloses(const Module &module, EntityId outer, EntityId inner) {
  for (size_t depth = 0;
       inner < module.getNumEntities() && depth <= module.getNumEntities();
       inner = module.getEntity(inner).parent, ++depth)
    if (inner == outer)
      return true;
  return false;
}

std::string StaticPaths::formatChain(const Module &module,
                                     EntityId from) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  printSymbolRef(os, module.getEntity(from).symbol);
  EntityId current = from;
  // Every step strictly lowers the hop count, so the walk ends.
  for (auto it = steps.find(current); it != steps.end();
       it = steps.find(current)) {
    const StaticStep &step = it->second;
    const StaticEdge &edge = module.getEdges()[step.edge];
    os << ' ' << stringifyEdgeKind(edge.kind) << "s ";
    if (edge.to < module.getNumEntities())
      printSymbolRef(os, module.getEntity(edge.to).symbol);
    else
      printEscapedString(os, edge.name);
    if (step.next == kNoEntity)
      break;
    if (step.next != edge.to) {
      os << (encloses(module, step.next, edge.to) ? " in " : " defining ");
      printSymbolRef(os, module.getEntity(step.next).symbol);
    }
    current = step.next;
  }
  return text;
}
