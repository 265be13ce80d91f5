//===- ContextPruner.cpp - Pruning tests that exercise nothing new --------===//
//
// Contexts are encoded as canonical strings (sorted caller chains, sorted
// callee frames, signature) and interned into dense pair ids, so coverage is
// integer bookkeeping. The greedy cover keeps, for each test, the number of
// its pairs still uncovered and decrements it as other tests are kept, so a
// pick costs one scan over the candidates. Ties are broken by risk, then by
// test name, never by container order, so the result is the same on every
// run and for every input order of equal tests.
//
//===----------------------------------------------------------------------===//
#include "fastci/Select/ContextPruner.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/Schedule/ScheduleAttrs.h"
#include "fastci/Select/ChangeSet.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Select/Selector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

namespace {

/// What the pruner knows about one test.
struct TestInfo {
  bool affected = false;
  /// Only tests selected by evidence alone may be pruned.
  bool prunable = false;
  /// Its evidence may stand for what it runs (fresh or unverified).
  bool usable = false;
  bool retained = false;
  /// The (changed entity, context) pairs its trusted evidence covers,
  /// sorted; at most one per change.
  std::vector<uint32_t> pairs;
  /// Pairs not yet covered by a retained test (during the cover).
  uint64_t uncovered = 0;
  double weight = 0, risk = 0;
};

class Pruner {
public:
  Pruner(Module &module, const EvidenceGraph &graph,
         const PruneOptions &options, const ConfigSignatureBuilder *signatures)
      : module(module), graph(graph), options(options), signatures(signatures),
        changes(module), tests(module.getNumTests()) {}

  LogicalResult run(DiagnosticEngine &diag, llvm::SMLoc loc, PruneStats &stats);

private:
  LogicalResult classifyTests(DiagnosticEngine &diag);
  void collectPairs();
  void appendContext(TestId test, const EvidenceGraph::EntityUse &use,
                     std::string &key) const;
  bool isBetter(TestId a, TestId b) const;
  void cover();
  void writeResults(PruneStats &stats);

  Module &module;
  const EvidenceGraph &graph;
  const PruneOptions &options;
  const ConfigSignatureBuilder *signatures;
  ChangeSet changes;
  std::vector<TestInfo> tests;
  /// Interned pair keys; pairChange[id] is the index in changes of the
  /// pair's change, coveredBy[id] the retained test covering it.
  llvm::StringMap<uint32_t> pairIds;
  std::vector<uint32_t> pairChange;
  std::vector<TestId> coveredBy;
};

} // namespace

LogicalResult Pruner::classifyTests(DiagnosticEngine &diag) {
  bool ok = true;
  for (const Test &test : module.getTests()) {
    TestInfo &info = tests[test.index];
    Attribute selected = test.attrs.get(select::attr::kSelected);
    if (!selected.isBool() || !selected.getBool())
      continue;
    info.affected = true;
    std::optional<EvidenceState> state = getEvidenceTrust(test, graph);
    if (!state) {
      diag.error(test.loc, "test '" + test.name + "' has evidence state " +
                               test.attrs.get(evidence::attr::kState).str() +
                               "; expected \"fresh\", \"unverified\", "
                               "\"stale\" or \"missing\"");
      ok = false;
      continue;
    }
    // An unknown or missing rule could be a fallback: keep the test.
    std::optional<SelectionRule> rule = parseSelectionRule(
        lookupString(test.attrs, select::attr::kRule).value_or(""));
    info.usable = isUsableEvidence(*state);
    info.prunable = rule == SelectionRule::Executes && info.usable;
    info.weight = test.cost.gpuSeconds > 0
                      ? test.cost.gpuSeconds
                      : double(test.cost.gpus) * test.cost.seconds;
    info.risk = test.attrs.get(schedule::attr::kRisk).asNumber().value_or(0);
  }
  return success(ok);
}

void Pruner::appendContext(TestId test, const EvidenceGraph::EntityUse &use,
                           std::string &key) const {
  llvm::raw_string_ostream os(key);
  // A use known only from the exact function recorder (no sample shows its
  // callers) has no calling context to compare: two such tests ran the
  // code, but nothing says they ran it the same way. The key is the test's
  // own, so it is never pruned in favour of another on this code.
  if (use.contexts.empty()) {
    os << 'e' << use.entity << "<unknown:t" << test << '>';
    return;
  }
  // Truncating longer chains to k callers can make distinct chains equal.
  std::vector<llvm::SmallVector<EntityId, 4>> chains;
  for (const EvidenceGraph::CallingContext &context : use.contexts) {
    size_t depth =
        std::min<size_t>(context.callers.size(), options.contextDepth);
    chains.emplace_back(context.callers.begin(),
                        context.callers.begin() + depth);
  }
  llvm::sort(chains);
  chains.erase(std::unique(chains.begin(), chains.end()), chains.end());
  os << 'e' << use.entity << "<";
  for (const auto &chain : chains) {
    os << '(';
    llvm::interleave(chain, os, ",");
    os << ')';
  }
  os << ">[";
  llvm::interleave(use.callees, os, ",");
  os << ']';
}

void Pruner::collectPairs() {
  for (const auto &[changeIndex, change] :
       llvm::enumerate(changes.getChanges())) {
    // One key per test: every entity of the region it ran, in id order.
    llvm::DenseMap<TestId, std::string> keys;
    for (EntityId entity : change.region) {
      for (TestId test : graph.getTestsExecuting(entity)) {
        if (test >= tests.size() || !tests[test].usable)
          continue;
        if (const EvidenceGraph::EntityUse *use = graph.lookup(test, entity))
          appendContext(test, *use, keys[test]);
      }
    }
    std::vector<std::pair<TestId, std::string>> ordered(keys.begin(),
                                                        keys.end());
    llvm::sort(ordered,
               [](const auto &a, const auto &b) { return a.first < b.first; });
    for (auto &[test, key] : ordered) {
      // Regions nest (a module and a function in it), so equal contexts of
      // different changes are different pairs.
      key.insert(0, "c" + std::to_string(changeIndex) + "|");
      if (options.configAware && signatures)
        key += "|" + signatures->getSignature(module.getTest(test));
      auto [it, inserted] =
          pairIds.try_emplace(key, static_cast<uint32_t>(pairChange.size()));
      if (inserted)
        pairChange.push_back(changeIndex);
      tests[test].pairs.push_back(it->second);
    }
  }
  for (TestInfo &info : tests)
    llvm::sort(info.pairs);
  coveredBy.assign(pairChange.size(), kNoTest);
}

bool Pruner::isBetter(TestId a, TestId b) const {
  // Cost per newly covered pair, compared without division so that free
  // tests (weight 0) are simply the cheapest.
  const TestInfo &x = tests[a], &y = tests[b];
  double lhs = x.weight * double(y.uncovered),
         rhs = y.weight * double(x.uncovered);
  if (lhs != rhs)
    return lhs < rhs;
  if (x.uncovered != y.uncovered)
    return x.uncovered > y.uncovered;
  if (x.risk != y.risk)
    return x.risk > y.risk;
  return module.getTest(a).name < module.getTest(b).name;
}

void Pruner::cover() {
  std::vector<std::vector<TestId>> testsByPair(pairChange.size());
  auto keep = [&](TestId test) {
    tests[test].retained = true;
    for (uint32_t pair : tests[test].pairs) {
      if (coveredBy[pair] != kNoTest)
        continue;
      coveredBy[pair] = test;
      for (TestId other : testsByPair[pair])
        --tests[other].uncovered;
    }
  };
  std::vector<TestId> candidates;
  for (const auto &[test, info] : llvm::enumerate(tests)) {
    if (!info.prunable)
      continue;
    candidates.push_back(test);
    info.uncovered = info.pairs.size();
    for (uint32_t pair : info.pairs)
      testsByPair[pair].push_back(test);
  }
  // Tests that must run anyway cover their pairs first, in test order. A
  // prunable test without pairs has nothing to be witnessed by: keep it.
  for (const auto &[test, info] : llvm::enumerate(tests))
    if (info.affected && (!info.prunable || info.pairs.empty()))
      keep(test);
  while (true) {
    TestId best = kNoTest;
    for (TestId test : candidates)
      if (!tests[test].retained && tests[test].uncovered &&
          (best == kNoTest || isBetter(test, best)))
        best = test;
    if (best == kNoTest)
      break;
    keep(best);
  }
}

void Pruner::writeResults(PruneStats &stats) {
  std::vector<bool> affectedCovers(changes.getChanges().size());
  std::vector<bool> retainedCovers(changes.getChanges().size());
  for (Test &test : module.getTests()) {
    TestInfo &info = tests[test.index];
    test.attrs.erase(select::attr::kPruned);
    test.attrs.erase(select::attr::kPrunedBy);
    test.attrs.erase(select::attr::kWitnesses);
    if (!info.affected)
      continue;
    ++stats.affected;
    stats.affectedGpuSeconds += info.weight;
    for (uint32_t pair : info.pairs) {
      affectedCovers[pairChange[pair]] = true;
      if (info.retained)
        retainedCovers[pairChange[pair]] = true;
    }
    if (info.retained) {
      ++stats.retained;
      stats.retainedGpuSeconds += info.weight;
      continue;
    }
    ++stats.pruned;
    std::vector<TestId> witnesses;
    AttrDict byEntity;
    for (uint32_t pair : info.pairs) {
      TestId witness = coveredBy[pair];
      witnesses.push_back(witness);
      const RelevantChange &change = changes.getChanges()[pairChange[pair]];
      byEntity.set(changes.getRecord(change).symbol,
                   Attribute::getSymbol(module.getTest(witness).name));
    }
    llvm::sort(witnesses);
    witnesses.erase(std::unique(witnesses.begin(), witnesses.end()),
                    witnesses.end());
    std::vector<Attribute> prunedBy;
    for (TestId witness : witnesses)
      prunedBy.push_back(Attribute::getSymbol(module.getTest(witness).name));
    test.attrs.set(select::attr::kPruned, Attribute::getBool(true));
    test.attrs.set(select::attr::kPrunedBy,
                   Attribute::getList(std::move(prunedBy)));
    test.attrs.set(select::attr::kWitnesses,
                   Attribute::getDict(std::move(byEntity)));
  }
  stats.pairs = pairChange.size();
  for (const auto &[index, change] : llvm::enumerate(changes.getChanges())) {
    stats.changedLines += change.numLines;
    if (affectedCovers[index])
      stats.affectedCoveredLines += change.numLines;
    if (retainedCovers[index])
      stats.retainedCoveredLines += change.numLines;
  }

  auto share = [](double part, double whole) {
    return whole > 0 ? part / whole : 1.0;
  };
  AttrDict summary{
      {"k", Attribute::getInt(options.contextDepth)},
      {"config_aware", Attribute::getBool(options.configAware)},
      {"affected", Attribute::getInt(stats.affected)},
      {"retained", Attribute::getInt(stats.retained)},
      {"pruned", Attribute::getInt(stats.pruned)},
      {"pairs", Attribute::getInt(stats.pairs)},
      {"affected_gpu_seconds", Attribute::getFloat(stats.affectedGpuSeconds)},
      {"retained_gpu_seconds", Attribute::getFloat(stats.retainedGpuSeconds)},
      {"retained_gpu_share",
       Attribute::getFloat(
           share(stats.retainedGpuSeconds, stats.affectedGpuSeconds))},
      {"changed_lines", Attribute::getInt(stats.changedLines)},
      {"affected_covered_lines", Attribute::getInt(stats.affectedCoveredLines)},
      {"retained_covered_lines", Attribute::getInt(stats.retainedCoveredLines)},
      {"retained_line_share",
       Attribute::getFloat(
           share(stats.retainedCoveredLines, stats.affectedCoveredLines))}};
  module.getAttrs().set(select::attr::kPruningSummary,
                        Attribute::getDict(std::move(summary)));
}

LogicalResult Pruner::run(DiagnosticEngine &diag, llvm::SMLoc loc,
                          PruneStats &stats) {
  if (!module.getAttrs().get(select::attr::kSelectionSummary).isDict()) {
    diag.error(loc, "prune-context-equiv needs the selection made by "
                    "select-affected; run select-affected before it");
    return failure();
  }
  if (graph.getContextDepth() < options.contextDepth) {
    diag.error(loc, "the evidence graph keeps " +
                        llvm::Twine(graph.getContextDepth()) +
                        " caller(s) per context, fewer than k=" +
                        llvm::Twine(options.contextDepth));
    return failure();
  }
  if (failed(classifyTests(diag)))
    return failure();
  collectPairs();
  cover();
  writeResults(stats);
  return success();
}

LogicalResult fastci::pruneContextEquivalentTests(
    Module &module, const EvidenceGraph &graph, const PruneOptions &options,
    const ConfigSignatureBuilder *signatures, DiagnosticEngine &diag,
    llvm::SMLoc loc, PruneStats *stats) {
  PruneStats local;
  Pruner pruner(module, graph, options, signatures);
  return pruner.run(diag, loc, stats ? *stats : local);
}
