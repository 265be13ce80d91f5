//===- EvidenceGraph.cpp - The dynamic call graph seen by tests -----------===//
//
// The graph is built one test at a time: the samples of all the test's
// records are first summed per stack (records of several ranks and nights
// share stacks through the module's trie), then every distinct stack is
// walked once. Per-stack dedup sets make each sample count once per entity,
// context and edge however often recursion repeats them.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/Evidence/EvidenceMerger.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <map>
#include <set>

using namespace fastci;

/// The context depth \p module records, or the default.
static unsigned getRecordedContextDepth(const Module &module) {
  std::optional<int64_t> depth =
      module.getAttrs().get(evidence::attr::kContextDepth).asInt();
  if (!depth || *depth < 1)
    return EvidenceGraph::kDefaultContextDepth;
  return unsigned(std::min<int64_t>(*depth, 1 << 16));
}

EvidenceGraph::EvidenceGraph(Module &module)
    : EvidenceGraph(module, getRecordedContextDepth(module)) {}

EvidenceGraph::EvidenceGraph(const Module &module, unsigned contextDepth)
    : module(module), contextDepth(std::max(1u, contextDepth)) {
  build();
}

/// Calls \p fn with the entity of each symbol (or string) in the list
/// \p key of \p attrs that names an entity of \p module.
/// \p missing, when given, collects the names that match no entity.
template <typename Fn>
static void forEachEntityIn(const Module &module, const AttrDict &attrs,
                            llvm::StringRef key, Fn fn,
                            std::vector<std::string> *missing = nullptr) {
  const Attribute *list = attrs.lookup(key);
  if (!list || !list->isList())
    return;
  for (const Attribute &element : list->getList()) {
    std::optional<llvm::StringRef> name =
        element.isSymbol()
            ? std::optional<llvm::StringRef>(element.getSymbolName())
            : element.asString();
    if (!name)
      continue;
    EntityId id = module.lookupEntity(*name);
    if (id != kNoEntity && id < module.getNumEntities())
      fn(id);
    else if (missing)
      missing->push_back(name->str());
  }
}

namespace {
/// An EntityUse under construction.
struct UseBuilder {
  uint64_t samples = 0, selfSamples = 0;
  std::map<llvm::SmallVector<EntityId, 4>, uint64_t> contexts;
  llvm::SmallDenseSet<FrameId, 8> callees;
};
} // namespace

void EvidenceGraph::build() {
  auto forEachEntity = [&](const AttrDict &attrs, llvm::StringRef key,
                           auto fn) {
    forEachEntityIn(module, attrs, key, fn);
  };
  size_t numTests = module.getNumTests();
  profiles.assign(numTests, {});
  testsByEntity.assign(module.getNumEntities(), {});

  std::vector<std::vector<const EvidenceRecord *>> recordsByTest(numTests);
  for (const EvidenceRecord &record : module.getEvidence())
    if (record.test < numTests)
      recordsByTest[record.test].push_back(&record);

  llvm::DenseMap<std::pair<EntityId, FrameId>, uint64_t> edgeSamples;
  llvm::SmallVector<FrameId, 64> frames;
  llvm::SmallVector<EntityId, 64> entities;
  for (TestId test = 0; test < numTests; ++test) {
    if (recordsByTest[test].empty())
      continue;
    llvm::DenseMap<StackId, uint64_t> stackSamples;
    for (const EvidenceRecord *record : recordsByTest[test])
      for (const StackSample &sample : record->samples)
        if (sample.stack < module.getNumStacks())
          stackSamples[sample.stack] += sample.count;
    // Visit stacks in id order so that nothing depends on hash order.
    std::vector<std::pair<StackId, uint64_t>> stacks(stackSamples.begin(),
                                                     stackSamples.end());
    llvm::sort(stacks);

    llvm::DenseMap<EntityId, UseBuilder> uses;
    for (auto [stack, count] : stacks) {
      module.getStackFrames(stack, frames);
      // Positions of repository frames; leaves sit between them.
      llvm::SmallVector<unsigned, 64> positions;
      for (unsigned i = 0, e = frames.size(); i != e; ++i)
        if (!module.getFrame(frames[i]).isLeaf())
          positions.push_back(i);
      entities.clear();
      for (unsigned position : positions)
        entities.push_back(module.getFrame(frames[position]).entity);

      llvm::SmallDenseSet<EntityId, 16> seenEntities;
      llvm::SmallDenseSet<std::pair<EntityId, FrameId>, 16> seenCalls;
      std::set<std::pair<EntityId, llvm::SmallVector<EntityId, 4>>>
          seenContexts;
      for (unsigned k = 0, e = positions.size(); k != e; ++k) {
        EntityId entity = entities[k];
        UseBuilder &use = uses[entity];
        if (seenEntities.insert(entity).second)
          use.samples += count;
        if (k + 1 == e)
          use.selfSamples += count;

        llvm::SmallVector<EntityId, 4> callers;
        for (unsigned j = k; j-- > 0 && callers.size() < contextDepth;)
          callers.push_back(entities[j]);
        if (seenContexts.insert({entity, callers}).second)
          use.contexts[callers] += count;

        // The next frame is a callee; so is the repository frame a library
        // leaf calls back into.
        unsigned position = positions[k];
        auto addCallee = [&](FrameId callee) {
          use.callees.insert(callee);
          if (seenCalls.insert({entity, callee}).second)
            edgeSamples[{entity, callee}] += count;
        };
        if (position + 1 < frames.size()) {
          addCallee(frames[position + 1]);
          if (module.getFrame(frames[position + 1]).isLeaf() &&
              position + 2 < frames.size())
            addCallee(frames[position + 2]);
        }
      }
    }

    // Exact records: every entity that started at test time is executed,
    // sampled or not.
    for (const EvidenceRecord *record : recordsByTest[test])
      forEachEntity(record->attrs, evidence::attr::kFunctions,
                    [&](EntityId entity) { uses[entity]; });

    std::vector<EntityUse> &profile = profiles[test];
    profile.reserve(uses.size());
    for (auto &[entity, builder] : uses) {
      EntityUse &use = profile.emplace_back();
      use.entity = entity;
      use.samples = builder.samples;
      use.selfSamples = builder.selfSamples;
      for (auto &[callers, samples] : builder.contexts)
        use.contexts.push_back({callers, samples});
      use.callees.assign(builder.callees.begin(), builder.callees.end());
      llvm::sort(use.callees);
    }
    llvm::sort(profile, [](const EntityUse &lhs, const EntityUse &rhs) {
      return lhs.entity < rhs.entity;
    });
    for (const EntityUse &use : profile)
      if (use.entity < testsByEntity.size())
        testsByEntity[use.entity].push_back(test);
  }

  buildImportEvidence(recordsByTest);

  edges.reserve(edgeSamples.size());
  for (auto &[call, samples] : edgeSamples)
    edges.push_back({call.first, call.second, samples});
  llvm::sort(edges, [](const CallEdge &lhs, const CallEdge &rhs) {
    return std::tie(lhs.caller, lhs.callee) < std::tie(rhs.caller, rhs.callee);
  });
}

void EvidenceGraph::buildImportEvidence(
    const std::vector<std::vector<const EvidenceRecord *>> &recordsByTest) {
  auto forEachEntity = [&](const AttrDict &attrs, llvm::StringRef key,
                           auto fn) {
    forEachEntityIn(module, attrs, key, fn);
  };
  size_t numTests = module.getNumTests(), numEntities = module.getNumEntities();
  importInfo.assign(numTests, false);
  exact.assign(numTests, false);
  unresolvedFunctions.assign(numTests, {});
  importFunctions.assign(numTests, {});
  recordedImports.assign(numTests, {});
  testsAtImport.assign(numEntities, {});
  testsImporting.assign(numEntities, {});
  importingModules.assign(numEntities, {});
  auto unique = [](auto &list) {
    llvm::sort(list);
    list.erase(std::unique(list.begin(), list.end()), list.end());
  };
  for (TestId test = 0; test < numTests; ++test) {
    std::vector<std::string> read;
    exact[test] = !recordsByTest[test].empty();
    for (const EvidenceRecord *record : recordsByTest[test]) {
      const AttrDict &attrs = record->attrs;
      std::optional<llvm::StringRef> coverage =
          attrs.get(evidence::attr::kCoverage).asString();
      if (!coverage || *coverage != "exact")
        exact[test] = false;
      forEachEntityIn(
          module, attrs, evidence::attr::kFunctions, [](EntityId) {},
          &unresolvedFunctions[test]);
      forEachEntityIn(
          module, attrs, evidence::attr::kImportFunctions, [](EntityId) {},
          &unresolvedFunctions[test]);
      if (attrs.lookup(evidence::attr::kCoverage) ||
          attrs.lookup(evidence::attr::kFunctions) ||
          attrs.lookup(evidence::attr::kImports) ||
          attrs.lookup(evidence::attr::kImportFunctions))
        importInfo[test] = true;
      forEachEntity(attrs, evidence::attr::kImportFunctions,
                    [&](EntityId id) { importFunctions[test].push_back(id); });
      forEachEntity(attrs, evidence::attr::kImports,
                    [&](EntityId id) { recordedImports[test].push_back(id); });
      if (const Attribute *reads = attrs.lookup(evidence::attr::kReads);
          reads && reads->isList())
        for (const Attribute &path : reads->getList())
          if (std::optional<llvm::StringRef> text = path.asString())
            read.push_back(text->str());
    }
    unique(importFunctions[test]);
    unique(unresolvedFunctions[test]);
    unique(recordedImports[test]);
    unique(read);
    for (EntityId id : importFunctions[test])
      testsAtImport[id].push_back(test);
    for (EntityId id : recordedImports[test])
      testsImporting[id].push_back(test);
    for (const std::string &path : read)
      readers[path].push_back(test);
  }
  if (const Attribute *table =
          module.getAttrs().lookup(evidence::attr::kImportTimeEntities);
      table && table->isDict())
    for (const NamedAttribute &entry : table->getDict()) {
      EntityId owner = module.lookupEntity(entry.first);
      if (owner == kNoEntity || !entry.second.isList())
        continue;
      for (const Attribute &symbol : entry.second.getList()) {
        std::optional<llvm::StringRef> name =
            symbol.isSymbol()
                ? std::optional<llvm::StringRef>(symbol.getSymbolName())
                : symbol.asString();
        EntityId id = name ? module.lookupEntity(*name) : kNoEntity;
        if (id != kNoEntity)
          importingModules[id].push_back(owner);
      }
    }
  for (std::vector<EntityId> &owners : importingModules)
    unique(owners);
}

/// Row \p index of a per-test or per-entity table, or nothing for an index
/// the table does not cover (ids added to the module after the graph).
template <typename T>
static llvm::ArrayRef<T> elementOf(const std::vector<std::vector<T>> &table,
                                   size_t index) {
  return index < table.size() ? llvm::ArrayRef<T>(table[index])
                              : llvm::ArrayRef<T>();
}

llvm::ArrayRef<std::string>
EvidenceGraph::getUnresolvedFunctions(TestId test) const {
  return elementOf(unresolvedFunctions, test);
}

llvm::ArrayRef<EntityId> EvidenceGraph::getImportFunctions(TestId test) const {
  return elementOf(importFunctions, test);
}

llvm::ArrayRef<EntityId> EvidenceGraph::getRecordedImports(TestId test) const {
  return elementOf(recordedImports, test);
}

llvm::ArrayRef<TestId>
EvidenceGraph::getTestsRunningAtImport(EntityId entity) const {
  return elementOf(testsAtImport, entity);
}

llvm::ArrayRef<TestId> EvidenceGraph::getTestsImporting(EntityId module) const {
  return elementOf(testsImporting, module);
}

llvm::ArrayRef<TestId>
EvidenceGraph::getTestsReading(llvm::StringRef path) const {
  auto it = readers.find(path);
  return it == readers.end() ? llvm::ArrayRef<TestId>()
                             : llvm::ArrayRef<TestId>(it->second);
}

llvm::ArrayRef<EntityId>
EvidenceGraph::getImportingModules(EntityId entity) const {
  return elementOf(importingModules, entity);
}

llvm::ArrayRef<EvidenceGraph::CallEdge>
EvidenceGraph::getCallees(EntityId caller) const {
  auto [first, last] =
      std::equal_range(edges.begin(), edges.end(), CallEdge{caller, 0, 0},
                       [](const CallEdge &lhs, const CallEdge &rhs) {
                         return lhs.caller < rhs.caller;
                       });
  return llvm::ArrayRef<CallEdge>(&*first, last - first);
}

llvm::ArrayRef<EvidenceGraph::EntityUse>
EvidenceGraph::getEntityUses(TestId test) const {
  if (test >= profiles.size())
    return {};
  return profiles[test];
}

const EvidenceGraph::EntityUse *EvidenceGraph::lookup(TestId test,
                                                      EntityId entity) const {
  llvm::ArrayRef<EntityUse> uses = getEntityUses(test);
  auto it = llvm::partition_point(
      uses, [&](const EntityUse &use) { return use.entity < entity; });
  return it != uses.end() && it->entity == entity ? &*it : nullptr;
}

llvm::ArrayRef<TestId> EvidenceGraph::getTestsExecuting(EntityId entity) const {
  if (entity >= testsByEntity.size())
    return {};
  return testsByEntity[entity];
}

/// Prints frame \p frame as a symbol reference or a quoted leaf name.
static void printFrame(const Module &module, FrameId frame,
                       llvm::raw_ostream &os) {
  const Frame &info = module.getFrame(frame);
  if (info.isLeaf()) {
    os << "leaf ";
    printEscapedString(os, info.leafName);
  } else {
    printSymbolRef(os, module.getEntity(info.entity).symbol);
  }
}

void EvidenceGraph::print(llvm::raw_ostream &os) const {
  os << "evidence-graph context-depth=" << contextDepth << "\n";
  for (const CallEdge &edge : edges) {
    os << "  call ";
    printSymbolRef(os, module.getEntity(edge.caller).symbol);
    os << " -> ";
    printFrame(module, edge.callee, os);
    os << " samples=" << edge.samples << "\n";
  }
  for (const Test &test : module.getTests()) {
    if (!hasEvidence(test.index))
      continue;
    os << "  test ";
    printEscapedString(os, test.name);
    os << "\n";
    for (const EntityUse &use : profiles[test.index]) {
      os << "    ";
      printSymbolRef(os, module.getEntity(use.entity).symbol);
      os << " samples=" << use.samples << " self=" << use.selfSamples << "\n";
      for (const CallingContext &context : use.contexts) {
        os << "      context [";
        llvm::interleaveComma(context.callers, os, [&](EntityId caller) {
          printSymbolRef(os, module.getEntity(caller).symbol);
        });
        os << "] samples=" << context.samples << "\n";
      }
      for (FrameId callee : use.callees) {
        os << "      callee ";
        printFrame(module, callee, os);
        os << "\n";
      }
    }
  }
}
