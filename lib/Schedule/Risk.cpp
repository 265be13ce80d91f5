//===- Risk.cpp - How likely a test is to fail on this change -------------===//
//
// The risk model of docs/Risk.md. Histories are read newest first, because
// the window and the decay both count back from the latest run.
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Risk.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include <cmath>

using namespace fastci;

static bool isFailure(OutcomeKind kind) {
  return kind == OutcomeKind::Fail || kind == OutcomeKind::Error;
}

RiskTerms fastci::computeRisk(llvm::ArrayRef<Outcome> history,
                              double changeShare, const RiskParams &params) {
  // Skipped runs say nothing about whether the test would fail.
  llvm::SmallVector<const Outcome *, 16> runs;
  for (const Outcome &outcome : llvm::reverse(history))
    if (outcome.kind != OutcomeKind::Skip)
      runs.push_back(&outcome);

  RiskTerms terms;
  terms.changeRelevance = changeShare;
  terms.runs = std::min<size_t>(runs.size(), params.window);
  if (terms.runs == 0) {
    terms.isNew = true;
    terms.failures = params.newTestPrior;
  } else {
    double weighted = 0, totalWeight = 0, weight = 1;
    unsigned numFailures = 0, numFlaky = 0;
    for (unsigned i = 0; i < terms.runs; ++i, weight *= params.decay) {
      totalWeight += weight;
      const Outcome &run = *runs[i];
      if (!isFailure(run.kind))
        continue;
      ++numFailures;
      // A failure followed by a pass of the same code is a flip without a
      // change: the failure says more about the test than about the code.
      // An empty revision is unknown and matches nothing.
      const Outcome *next = i > 0 ? runs[i - 1] : nullptr;
      bool flaky = next && next->kind == OutcomeKind::Pass &&
                   !run.revision.empty() && next->revision == run.revision;
      numFlaky += flaky;
      weighted += weight * (flaky ? params.flakyWeight : 1.0);
    }
    terms.failures = totalWeight > 0 ? weighted / totalWeight : 0;
    terms.flakiness =
        numFailures ? static_cast<double>(numFlaky) / numFailures : 0;
  }
  terms.risk = terms.failures + params.lambda * terms.changeRelevance;
  return terms;
}

std::vector<std::optional<double>>
fastci::computeChangeShares(const Module &module, const EvidenceGraph &graph) {
  // Which entities are changed, directly or through an enclosing class or
  // function (a nested function is part of its parent's body). Files and
  // modules do not propagate: a change record on a file says something in
  // it changed, not that all of it did.
  std::vector<char> changed(module.getNumEntities(), 0);
  for (const Change &change : module.getChanges())
    if (change.kind != ChangeKind::Cosmetic && change.entity != kNoEntity &&
        change.entity < changed.size())
      changed[change.entity] = 1;
  auto isChanged = [&](EntityId id) {
    for (; id != kNoEntity && id < changed.size();
         id = module.getEntity(id).parent) {
      if (changed[id])
        return true;
      EntityKind kind = module.getEntity(id).kind;
      if (kind != EntityKind::Function && kind != EntityKind::Class)
        return false;
    }
    return false;
  };

  // A trie node's parent is created before it, so one pass in id order
  // decides every stack.
  std::vector<char> frameChanged(module.getFrames().size(), 0);
  for (auto [id, frame] : llvm::enumerate(module.getFrames()))
    frameChanged[id] = !frame.isLeaf() && isChanged(frame.entity);
  std::vector<char> stackChanged(module.getNumStacks(), 0);
  for (StackId id = 0; id < module.getNumStacks(); ++id) {
    const StackNode &node = module.getStackNode(id);
    stackChanged[id] = frameChanged[node.frame] ||
                       (node.parent < id && stackChanged[node.parent]);
  }

  std::vector<double> inChanged(module.getNumTests(), 0),
      total(module.getNumTests(), 0);
  for (const EvidenceRecord &record : module.getEvidence()) {
    if (record.test >= module.getNumTests())
      continue;
    for (const StackSample &sample : record.samples) {
      double count = static_cast<double>(sample.count);
      total[record.test] += count;
      if (sample.stack != kEmptyStack && stackChanged[sample.stack])
        inChanged[record.test] += count;
    }
  }
  std::vector<std::optional<double>> shares(module.getNumTests());
  for (TestId id = 0; id < module.getNumTests(); ++id)
    if (total[id] > 0)
      shares[id] = inChanged[id] / total[id];
  // Samples see where time goes; a short changed function may get none. The
  // exact recorder's functions see it, so a test that ran changed code is
  // never scored as if it had not.
  // Code that moved to another module since recording is in the evidence
  // under its old symbol, stale; it changed when code of its name did (the
  // rule select-affected selects it by).
  llvm::StringSet<> changedLeaves;
  for (const Change &change : module.getChanges())
    if (change.kind != ChangeKind::Cosmetic && change.entity != kNoEntity &&
        change.entity < module.getNumEntities() &&
        module.getEntity(change.entity).kind == EntityKind::Function)
      changedLeaves.insert(
          getSymbolLeaf(module.getEntity(change.entity).symbol));
  for (const Test &test : module.getTests()) {
    TestId id = test.index;
    unsigned functions = 0, changedFunctions = 0;
    for (const EvidenceGraph::EntityUse &use : graph.getEntityUses(id)) {
      if (use.entity >= module.getNumEntities() ||
          module.getEntity(use.entity).kind != EntityKind::Function)
        continue;
      ++functions;
      changedFunctions += isChanged(use.entity);
    }
    if (const Attribute *stale =
            test.attrs.lookup(evidence::attr::kStaleEntities);
        stale && stale->isList())
      for (const Attribute &symbol : stale->getList())
        if (std::optional<llvm::StringRef> name = symbol.asString();
            name && module.lookupEntity(*name) == kNoEntity) {
          ++functions;
          changedFunctions += changedLeaves.contains(getSymbolLeaf(*name));
        }
    if (functions)
      shares[id] = std::max(shares[id].value_or(0),
                            double(changedFunctions) / functions);
  }
  return shares;
}

double fastci::failureProbability(double risk) {
  return risk > 0 ? -std::expm1(-risk) : 0;
}
