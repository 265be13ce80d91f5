//===- Selector.cpp - Evidence-based test selection -----------------------===//
//
// Each rule offers a verdict to the tests it selects; a test keeps the
// offer of highest precedence (and, among evidence offers, the change it
// spent most samples in), so the outcome does not depend on the order rules
// run in. Fallbacks that search beyond evidence (sampled callers, static
// reach, same package) only run for changes that evidence misses, from the
// cheapest and most precise to the broadest.
//
//===----------------------------------------------------------------------===//
#include "fastci/Select/Selector.h"
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/Evidence/EvidenceMerger.h"
#include "fastci/Select/ChangeSet.h"
#include "fastci/Select/ContextPruner.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Select/StaticReach.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

llvm::StringRef fastci::stringifySelectionRule(SelectionRule rule) {
  switch (rule) {
  case SelectionRule::PolicyAll:
    return "policy-all";
  case SelectionRule::ChangedTest:
    return "changed-test";
  case SelectionRule::MissingEvidence:
    return "missing-evidence";
  case SelectionRule::StaleEvidence:
    return "stale-evidence";
  case SelectionRule::UnverifiedEvidence:
    return "unverified-evidence";
  case SelectionRule::ReferencedFile:
    return "referenced-file";
  case SelectionRule::SampledCaller:
    return "sampled-caller";
  case SelectionRule::StaticReach:
    return "static-reach";
  case SelectionRule::SamePackage:
    return "same-package";
  case SelectionRule::TestEntry:
    return "test-entry";
  case SelectionRule::Executes:
    return "executes";
  case SelectionRule::Unaffected:
    return "unaffected";
  }
  llvm_unreachable("unknown selection rule");
}

std::optional<SelectionRule> fastci::parseSelectionRule(llvm::StringRef name) {
  for (size_t i = 0; i != kNumSelectionRules; ++i)
    if (stringifySelectionRule(static_cast<SelectionRule>(i)) == name)
      return static_cast<SelectionRule>(i);
  return std::nullopt;
}

/// `@"symbol"`, the way reasons name code.
static std::string quoteSymbol(llvm::StringRef symbol) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printSymbolRef(os, symbol);
  return text;
}

namespace {

/// The best offer a test has received so far.
struct Verdict {
  SelectionRule rule = SelectionRule::Unaffected;
  std::string reason;
  uint64_t samples = 0;

  /// Takes the offer if it outranks the current one: an earlier rule, or
  /// for evidence more samples. \p why is only evaluated when taken.
  template <typename Fn>
  void offer(SelectionRule candidate, Fn &&why, uint64_t candidateSamples = 0) {
    if (candidate > rule ||
        (candidate == rule && candidateSamples <= samples && !reason.empty()))
      return;
    rule = candidate;
    reason = why();
    samples = candidateSamples;
  }
};

class Selector {
public:
  Selector(Module &module, const EvidenceGraph &graph,
           const SelectOptions &options, DiagnosticEngine &diag)
      : module(module), graph(graph), options(options), diag(diag),
        changes(module), reach(changes), verdicts(module.getNumTests()) {}

  LogicalResult run(SelectionStats &stats);

private:
  LogicalResult readEvidenceStates();
  void applyPolicy();
  void applyTestRules();
  void applyChange(const RelevantChange &change);
  bool applySampledCallers(const RelevantChange &change,
                           const llvm::DenseSet<TestId> &executing);
  bool applyStaticReach(const RelevantChange &change);
  bool applySamePackage(const RelevantChange &change);
  bool applyTestEntries(const RelevantChange &change);
  void writeResults(SelectionStats &stats);

  Module &module;
  const EvidenceGraph &graph;
  const SelectOptions &options;
  DiagnosticEngine &diag;
  ChangeSet changes;
  StaticReach reach;
  std::vector<Verdict> verdicts;
  std::vector<EvidenceState> states;
  /// Tests whose stale evidence names a symbol (code since changed).
  llvm::StringMap<std::vector<TestId>> staleUsers;
  std::vector<std::string> unreached;
};

} // namespace

LogicalResult Selector::readEvidenceStates() {
  states.resize(module.getNumTests());
  bool ok = true;
  for (const Test &test : module.getTests()) {
    if (std::optional<EvidenceState> state = getEvidenceTrust(test, graph)) {
      states[test.index] = *state;
    } else {
      diag.error(test.loc, "test '" + test.name + "' has evidence state " +
                               test.attrs.get(evidence::attr::kState).str() +
                               "; expected \"fresh\", \"unverified\", "
                               "\"stale\" or \"missing\"");
      ok = false;
      continue;
    }
    if (const Attribute *stale =
            test.attrs.lookup(evidence::attr::kStaleEntities);
        stale && stale->isList())
      for (const Attribute &symbol : stale->getList())
        if (symbol.isString())
          staleUsers[symbol.getString()].push_back(test.index);
  }
  return success(ok);
}

void Selector::applyPolicy() {
  std::vector<std::string> reasons;
  const AttrDict &attrs = module.getAttrs();
  if (Attribute all = attrs.get(diff::attr::kPolicyAll);
      all.isBool() && all.getBool()) {
    if (Attribute list = attrs.get(diff::attr::kPolicyAllReasons);
        list.isList())
      for (const Attribute &reason : list.getList())
        if (reason.isString())
          reasons.push_back(reason.getString().str());
    if (reasons.empty())
      reasons.push_back("the module says 'policy_all'");
  }
  for (const ChangedFile &file : module.getChangedFiles()) {
    std::optional<llvm::StringRef> decision =
        lookupString(file.attrs, diff::attr::kDecision);
    if (!decision) {
      diag.warning(file.loc, "changed file '" + file.path +
                                 "' has no policy decision; treating it as "
                                 "'all' (run mark-changed first)");
      reasons.push_back((file.path + ": no policy decision").str());
      continue;
    }
    if (*decision == "all") {
      std::string why =
          lookupString(file.attrs, diff::attr::kReason).value_or("").str();
      std::string line = (file.path + ": " + why).str();
      if (!llvm::is_contained(reasons, line))
        reasons.push_back(line);
    } else if (*decision == "tests") {
      if (!options.selectReferenced)
        continue;
      Attribute names = file.attrs.get(diff::attr::kTests);
      std::string why =
          lookupString(file.attrs, diff::attr::kReason).value_or("").str();
      for (const Attribute &name :
           names.isList() ? names.getList() : llvm::ArrayRef<Attribute>()) {
        TestId test = name.isString() ? module.lookupTest(name.getString())
                      : name.isSymbol()
                          ? module.lookupTest(name.getSymbolName())
                          : kNoTest;
        if (test == kNoTest) {
          diag.warning(file.loc, "changed file '" + file.path +
                                     "' is routed to unknown test " +
                                     name.str());
          continue;
        }
        verdicts[test].offer(SelectionRule::ReferencedFile, [&] {
          return ("changed file '" + file.path + "' is routed to it (" + why +
                  ")")
              .str();
        });
      }
    } else if (*decision != "ignore" && *decision != "python" &&
               *decision != "modules") {
      diag.warning(file.loc, "changed file '" + file.path +
                                 "' has unknown policy decision '" + *decision +
                                 "'; treating it as 'all'");
      reasons.push_back(
          (file.path + ": unknown decision '" + *decision + "'").str());
    }
  }
  if (reasons.empty() || !options.honorPolicyAll)
    return;
  std::string reason = "the change policy selects every test: " + reasons[0];
  if (reasons.size() > 1)
    reason += llvm::formatv(" (and {0} more)", reasons.size() - 1).str();
  for (Verdict &verdict : verdicts)
    verdict.offer(SelectionRule::PolicyAll, [&] { return reason; });
}

void Selector::applyTestRules() {
  for (const Test &test : module.getTests()) {
    Verdict &verdict = verdicts[test.index];
    if (options.selectChangedTests && changes.isChangedEntity(test.entry)) {
      verdict.offer(SelectionRule::ChangedTest, [&] {
        return "the test itself changed: " +
               quoteSymbol(module.getEntity(test.entry).symbol);
      });
    } else if (options.selectChangedTestFiles) {
      llvm::StringRef path = getTestFilePath(module, test);
      if (!path.empty() && changes.isChangedFile(path))
        verdict.offer(SelectionRule::ChangedTest, [&] {
          return ("its test file '" + path + "' changed").str();
        });
    }
    switch (states[test.index]) {
    case EvidenceState::Missing:
      if (options.selectMissing)
        verdict.offer(SelectionRule::MissingEvidence,
                      [] { return std::string("no evidence was recorded"); });
      break;
    case EvidenceState::Stale:
      if (options.selectStale)
        verdict.offer(SelectionRule::StaleEvidence, [] {
          return std::string("its evidence is stale: code it ran changed "
                             "since recording");
        });
      break;
    case EvidenceState::Unverified:
      if (options.selectUnverified)
        verdict.offer(SelectionRule::UnverifiedEvidence, [] {
          return std::string("its evidence was recorded at another revision "
                             "and could not be verified");
        });
      break;
    case EvidenceState::Fresh:
      break;
    }
  }
}

void Selector::applyChange(const RelevantChange &change) {
  const Change &record = changes.getRecord(change);
  std::string changed = quoteSymbol(record.symbol);
  std::string via;
  if (std::optional<llvm::StringRef> from =
          lookupString(record.attrs, diff::attr::kVia))
    via = (" (it loads changed '" + *from + "')").str();

  llvm::DenseSet<TestId> executing;
  for (const ChangeExecution &execution :
       ChangeSet::getExecutions(graph, change.region)) {
    executing.insert(execution.test);
    verdicts[execution.test].offer(
        SelectionRule::Executes,
        [&] {
          std::string where =
              execution.hottest == change.entity
                  ? changed
                  : quoteSymbol(module.getEntity(execution.hottest).symbol) +
                        " in changed " + changed;
          return llvm::formatv("executes {0} ({1} samples){2}", where,
                               execution.samples, via)
              .str();
        },
        execution.samples);
  }
  // Evidence recorded before a deletion or move names the old symbol.
  for (const std::string &symbol : change.oldSymbols) {
    auto it = staleUsers.find(symbol);
    if (it == staleUsers.end())
      continue;
    for (TestId test : it->second) {
      executing.insert(test);
      verdicts[test].offer(SelectionRule::Executes, [&] {
        return "executed " + quoteSymbol(symbol) + " before it was " +
               stringifyChangeKind(record.kind).str() + " (stale evidence)";
      });
    }
  }
  bool reached = !executing.empty();
  if (options.sampledCallers && applySampledCallers(change, executing))
    reached = true;
  // Evidence is sampled: a test may run changed code too briefly to be seen
  // even when other tests were. Its own body is known statically.
  if (options.testEntries && applyTestEntries(change))
    reached = true;
  if (reached)
    return;
  if (applyStaticReach(change) || applySamePackage(change))
    return;
  std::string why = "no evidence";
  if (options.staticHops)
    why +=
        llvm::formatv(", no static path within {0} hop(s)", options.staticHops)
            .str();
  if (options.samePackage)
    why += ", no test of its package";
  diag.warning(record.loc,
               "changed " + changed + " is reached by no test (" + why + ")");
  unreached.push_back(record.symbol.str());
}

bool Selector::applySampledCallers(const RelevantChange &change,
                                   const llvm::DenseSet<TestId> &executing) {
  bool any = false;
  llvm::DenseSet<EntityId> region(change.region.begin(), change.region.end());
  for (EntityId callee : change.region) {
    for (size_t edgeIndex : reach.getCallsTo(callee)) {
      const StaticEdge &edge = module.getEdges()[edgeIndex];
      if (region.contains(edge.from))
        continue;
      for (TestId test : graph.getTestsExecuting(edge.from)) {
        if (executing.contains(test))
          continue;
        any = true;
        const EvidenceGraph::EntityUse *use = graph.lookup(test, edge.from);
        verdicts[test].offer(SelectionRule::SampledCaller, [&] {
          std::string line =
              edge.line ? llvm::formatv(" at line {0}", edge.line).str() : "";
          return llvm::formatv("sampled {0} ({1} samples) calls {2}{3}; the "
                               "call was too short to be sampled",
                               quoteSymbol(module.getEntity(edge.from).symbol),
                               use ? use->samples : 0,
                               quoteSymbol(module.getEntity(callee).symbol),
                               line)
              .str();
        });
      }
    }
  }
  return any;
}

bool Selector::applyStaticReach(const RelevantChange &change) {
  if (!options.staticHops)
    return false;
  StaticPaths paths =
      reach.findReaching(change.entity, change.oldSymbols, options.staticHops);
  // Nearest entities first, so each test records its shortest chain.
  std::vector<std::pair<EntityId, StaticStep>> found(paths.getEntities());
  llvm::stable_sort(found, [](const auto &a, const auto &b) {
    return a.second.hops < b.second.hops;
  });
  llvm::DenseSet<TestId> done;
  for (const auto &[entity, step] : found) {
    for (const ChangeExecution &execution :
         ChangeSet::getExecutions(graph, changes.getRegion(entity))) {
      if (!done.insert(execution.test).second)
        continue;
      verdicts[execution.test].offer(SelectionRule::StaticReach, [&] {
        return llvm::formatv("no sample reaches changed {0}; sampled code "
                             "reaches it in {1} static hop(s): {2}",
                             quoteSymbol(changes.getRecord(change).symbol),
                             step.hops, paths.formatChain(module, entity))
            .str();
      });
    }
  }
  return !done.empty();
}

bool Selector::applyTestEntries(const RelevantChange &change) {
  if (change.entity == kNoEntity)
    return false;
  // Entities within static-hops of the change, the changed code included.
  llvm::DenseMap<EntityId, std::string> reaching;
  for (EntityId entity : change.region)
    reaching.try_emplace(entity, "");
  if (options.staticHops) {
    StaticPaths paths = reach.findReaching(change.entity, change.oldSymbols,
                                           options.staticHops);
    for (const auto &[entity, step] : paths.getEntities())
      reaching.try_emplace(entity, paths.formatChain(module, entity));
  }
  bool any = false;
  const Change &record = changes.getRecord(change);
  for (const Test &test : module.getTests()) {
    auto it = reaching.find(test.entry);
    if (test.entry == kNoEntity || it == reaching.end())
      continue;
    any = true;
    verdicts[test.index].offer(SelectionRule::TestEntry, [&] {
      if (it->second.empty())
        return "the test function is changed code " +
               quoteSymbol(record.symbol);
      return "the test function reaches changed " +
             quoteSymbol(record.symbol) + " statically: " + it->second;
    });
  }
  return any;
}

bool Selector::applySamePackage(const RelevantChange &change) {
  if (!options.samePackage)
    return false;
  const Change &record = changes.getRecord(change);
  llvm::StringRef file = record.file;
  if (file.empty() && change.entity != kNoEntity)
    file = module.getFilePath(change.entity);
  if (file.empty())
    return false;
  llvm::StringRef package =
      llvm::sys::path::parent_path(file, llvm::sys::path::Style::posix);
  auto inPackage = [&](llvm::StringRef path) {
    return package.empty()
               ? !path.contains('/')
               : path.starts_with(package) && path.size() > package.size() &&
                     path[package.size()] == '/';
  };
  bool any = false;
  for (const Entity &entity : module.getEntities()) {
    if (entity.kind == EntityKind::File ||
        !inPackage(module.getFilePath(entity.id)))
      continue;
    for (TestId test : graph.getTestsExecuting(entity.id)) {
      any = true;
      verdicts[test].offer(SelectionRule::SamePackage, [&] {
        return ("nothing reaches changed " + quoteSymbol(record.symbol) +
                "; the test ran " + quoteSymbol(entity.symbol) +
                " of the same package '" + package + "/'")
            .str();
      });
    }
  }
  return any;
}

void Selector::writeResults(SelectionStats &stats) {
  stats.changes = changes.getChanges().size();
  stats.unreachedChanges = unreached.size();
  for (Test &test : module.getTests()) {
    Verdict &verdict = verdicts[test.index];
    if (verdict.rule == SelectionRule::Unaffected)
      verdict.reason = changes.getChanges().empty()
                           ? "the change alters no code"
                           : "its evidence executes no changed code";
    bool selected = verdict.rule != SelectionRule::Unaffected;
    stats.selected += selected;
    ++stats.byRule[static_cast<size_t>(verdict.rule)];
    test.attrs.set(select::attr::kSelected, Attribute::getBool(selected));
    test.attrs.set(select::attr::kRule,
                   Attribute::getString(stringifySelectionRule(verdict.rule)));
    test.attrs.set(select::attr::kReason, Attribute::getString(verdict.reason));
    // A new selection invalidates any earlier pruning.
    test.attrs.erase(select::attr::kPruned);
    test.attrs.erase(select::attr::kPrunedBy);
    test.attrs.erase(select::attr::kWitnesses);
  }
  AttrDict byRule;
  for (size_t i = 0; i != kNumSelectionRules; ++i)
    if (stats.byRule[i])
      byRule.set(stringifySelectionRule(static_cast<SelectionRule>(i)),
                 Attribute::getInt(stats.byRule[i]));
  AttrDict summary{
      {"tests", Attribute::getInt(module.getNumTests())},
      {"selected", Attribute::getInt(stats.selected)},
      {"skipped", Attribute::getInt(module.getNumTests() - stats.selected)},
      {"changes", Attribute::getInt(stats.changes)},
      {"by_rule", Attribute::getDict(std::move(byRule))}};
  AttrDict &attrs = module.getAttrs();
  attrs.set(select::attr::kSelectionSummary,
            Attribute::getDict(std::move(summary)));
  attrs.erase(select::attr::kPruningSummary);
  if (unreached.empty())
    attrs.erase(select::attr::kUnreached);
  else
    attrs.set(select::attr::kUnreached, Attribute::getStringList(unreached));
}

LogicalResult Selector::run(SelectionStats &stats) {
  if (failed(readEvidenceStates()))
    return failure();
  applyPolicy();
  applyTestRules();
  for (const RelevantChange &change : changes.getChanges())
    applyChange(change);
  writeResults(stats);
  return success();
}

LogicalResult fastci::selectAffectedTests(Module &module,
                                          const EvidenceGraph &graph,
                                          const SelectOptions &options,
                                          DiagnosticEngine &diag,
                                          SelectionStats *stats) {
  SelectionStats local;
  Selector selector(module, graph, options, diag);
  return selector.run(stats ? *stats : local);
}
