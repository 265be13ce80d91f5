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
#include "fastci/Diff/FileDecision.h"
#include "fastci/Diff/ImportGraph.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/Evidence/EvidenceMerger.h"
#include "fastci/Python/PythonAttrs.h"
#include "fastci/Select/ChangeSet.h"
#include "fastci/Select/ContextPruner.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Select/StaticReach.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
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
  case SelectionRule::ParseError:
    return "parse-error";
  case SelectionRule::MissingEvidence:
    return "missing-evidence";
  case SelectionRule::IncompleteEvidence:
    return "incomplete-evidence";
  case SelectionRule::StaleEvidence:
    return "stale-evidence";
  case SelectionRule::UnverifiedEvidence:
    return "unverified-evidence";
  case SelectionRule::ReferencedFile:
    return "referenced-file";
  case SelectionRule::ReadsFile:
    return "reads-file";
  case SelectionRule::ImportsDependency:
    return "imports-dependency";
  case SelectionRule::ImportTime:
    return "import-time";
  case SelectionRule::ModuleName:
    return "module-name";
  case SelectionRule::ModuleCode:
    return "module-code";
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
  void findRepresentatives();
  void applyPolicy();
  void applyTestRules();
  void applyStaleEvidence(const Test &test, Verdict &verdict);
  bool importRunsChange(EntityId body);
  void applyChange(const RelevantChange &change);
  bool applyParseError(const RelevantChange &change);
  bool applyModuleNames(const RelevantChange &change, llvm::StringRef scope);
  bool applyModuleCode(const RelevantChange &change);
  /// For a method added to an existing class: the tests that ran code of
  /// the class, when dispatch may call the method without any caller
  /// changing (a special method, an override of a base class's method).
  bool applyDispatch(const RelevantChange &change);
  /// For a change made of import statements: whether every process of
  /// \p test had loaded each module they import already, so that there they
  /// only bind names (which module-name follows).
  bool importsLoadedIn(const RelevantChange &change, TestId test);
  bool applyImportTime(const RelevantChange &change);
  bool selectImporters(EntityId moduleEntity, const std::string &what);
  llvm::DenseSet<EntityId> getImporters(EntityId moduleEntity);
  const StaticPaths *getReaching(const RelevantChange &change);
  void buildImportGraph();
  EntityId getModuleOf(EntityId entity) const;
  EntityId getTestModule(const Test &test) const;
  EntityId getEntry(const Test &test) const;
  bool hasNames(EntityId moduleEntity) const;
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
  /// Per test: a record of it says `complete = false`.
  std::vector<bool> incomplete;
  /// Tests whose stale evidence names a symbol (code since changed).
  llvm::StringMap<std::vector<TestId>> staleUsers;
  /// The stale symbols that name no entity at head (code deleted, renamed or
  /// moved since recording), by their own name (last dotted part): code that
  /// moved to another module keeps it.
  llvm::StringMap<std::vector<std::string>> vanishedByName;
  std::vector<std::string> unreached;
  /// Static reach of each change (by its position in the ChangeSet), found
  /// once for the rules that need it.
  std::vector<std::optional<StaticPaths>> reaching;
  /// Entities whose staleness matters for this merge request: in a changed
  /// region, enclosing one, or reaching one statically (stale heals).
  std::optional<llvm::DenseSet<EntityId>> staleRelevant;
  /// The static import graph, built when a rule first needs it.
  std::optional<ImportGraph> imports;
  /// Each test's root modules: its file's module and the conftests above it.
  std::vector<llvm::SmallVector<EntityId, 4>> testRoots;
  /// Module-level import edges by the name they import (their modules),
  /// and tests by entry, for module-name selection.
  std::optional<llvm::StringMap<std::vector<EntityId>>> importsByName;
  /// Per test, the external top-level modules every record of it loaded
  /// (nullopt: a record does not say), and the top-level modules installed
  /// distributions provide; for importsLoadedIn.
  std::optional<std::vector<std::optional<llvm::StringSet<>>>> loadedExternal;
  llvm::StringSet<> installedModules;
  llvm::DenseMap<EntityId, std::vector<TestId>> testsByEntry;
  /// Readers of module-level names: (name, entity) sorted by name.
  std::optional<std::vector<std::pair<llvm::StringRef, EntityId>>> readers;
  /// For tests the evidence recorded under a static item (`f[a]` under the
  /// parametrized `f`, tests under an enclosing file or class item): that
  /// static test; kNoTest otherwise.
  std::vector<TestId> representative;
  /// For static tests that evidence tests stand for: how many.
  std::vector<uint32_t> numRepresented;
  /// For stale module and class bodies: whether their import runs code
  /// this merge request changed (found on first use, per body).
  llvm::DenseMap<EntityId, bool> bodyRunsChange;
  /// Static edges by the entity containing them, and every entity of a
  /// change's region, built when a stale body first needs them.
  std::vector<std::vector<size_t>> edgesFrom;
  std::optional<llvm::DenseSet<EntityId>> changedCode;
  /// Whether parse-python wrote `names` (found on first use).
  mutable std::optional<bool> namesWritten;
  /// For those: whether every evidence test under it has exact evidence.
  std::vector<bool> representedExact;
};

} // namespace

LogicalResult Selector::readEvidenceStates() {
  states.resize(module.getNumTests());
  incomplete.assign(module.getNumTests(), false);
  // The IR verifier has checked that `complete` is a bool (its AttrDecl).
  for (const EvidenceRecord &record : module.getEvidence())
    if (const Attribute *complete =
            record.attrs.lookup(evidence::attr::kComplete);
        complete && complete->isBool() && !complete->getBool() &&
        record.test != kNoTest)
      incomplete[record.test] = true;
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
    // Exact records name code by symbol; code deleted or moved since is
    // matched by its old name like stale evidence.
    for (const std::string &symbol : graph.getUnresolvedFunctions(test.index))
      if (!llvm::is_contained(staleUsers[symbol], test.index))
        staleUsers[symbol].push_back(test.index);
  }
  for (const auto &entry : staleUsers) {
    llvm::StringRef symbol = entry.getKey();
    if (module.lookupEntity(symbol) != kNoEntity)
      continue;
    vanishedByName[getSymbolLeaf(symbol)].push_back(symbol.str());
  }
  for (auto &entry : vanishedByName)
    llvm::sort(entry.getValue());
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
  // The tests a changed file's string-list attribute \p name lists by name.
  auto forEachListedTest = [&](const ChangedFile &file, llvm::StringRef name,
                               llvm::function_ref<void(TestId)> fn) {
    Attribute names = file.attrs.get(name);
    for (const Attribute &entry :
         names.isList() ? names.getList() : llvm::ArrayRef<Attribute>())
      if (TestId test =
              entry.isString() ? module.lookupTest(entry.getString()) : kNoTest;
          test != kNoTest)
        fn(test);
  };
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
    std::optional<FileDecision> kind = symbolizeFileDecision(*decision);
    if (!kind) {
      diag.warning(file.loc, "changed file '" + file.path +
                                 "' has unknown policy decision '" + *decision +
                                 "'; treating it as 'all'");
      reasons.push_back(
          (file.path + ": unknown decision '" + *decision + "'").str());
      continue;
    }
    switch (*kind) {
    case FileDecision::All: {
      std::string why =
          lookupString(file.attrs, diff::attr::kReason).value_or("").str();
      std::string line = (file.path + ": " + why).str();
      if (!llvm::is_contained(reasons, line))
        reasons.push_back(line);
      break;
    }
    case FileDecision::Tests: {
      if (!options.selectReferenced)
        break;
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
      break;
    }
    case FileDecision::Reads: {
      // Evidence says which tests opened the file: exactly those.
      forEachListedTest(file, diff::attr::kReaders, [&](TestId test) {
        verdicts[test].offer(SelectionRule::ReadsFile, [&] {
          return ("reads-file: its evidence read changed '" + file.path + "'")
              .str();
        });
      });
      for (TestId test : graph.getTestsReading(file.path))
        verdicts[test].offer(SelectionRule::ReadsFile, [&] {
          return ("reads-file: its evidence read changed '" + file.path + "'")
              .str();
        });
      break;
    }
    case FileDecision::Packages: {
      // Evidence says whose processes imported the changed distributions.
      std::string packages;
      if (Attribute list = file.attrs.get(diff::attr::kDistributions);
          list.isList())
        for (const Attribute &name : list.getList())
          if (std::optional<llvm::StringRef> text = name.asString())
            packages += (packages.empty() ? "" : ", ") + text->str();
      forEachListedTest(file, diff::attr::kImporters, [&](TestId test) {
        verdicts[test].offer(SelectionRule::ImportsDependency, [&] {
          return ("imports-dependency: its processes import a package of "
                  "the distributions whose requirements '" +
                  file.path + "' changes (" + packages + ")")
              .str();
        });
      });
      break;
    }
    case FileDecision::Python:
    case FileDecision::Modules:
    case FileDecision::Ignore:
      // Python files and the modules a build file names are selected by
      // their changed entities; an ignored file selects nothing.
      break;
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

void Selector::findRepresentatives() {
  size_t numTests = module.getNumTests();
  representative.assign(numTests, kNoTest);
  numRepresented.assign(numTests, 0);
  // Evidence ids sorted by name: those under a static item `S` are the ones
  // named `S::...` (an enclosing file or class item) or `S[...]` (a
  // parametrized function), a contiguous range.
  std::vector<std::pair<llvm::StringRef, TestId>> withEvidence;
  for (const Test &test : module.getTests())
    if (graph.hasEvidence(test.index) ||
        test.attrs.lookup(evidence::attr::kFromEvidence))
      withEvidence.emplace_back(test.name, test.index);
  llvm::sort(withEvidence);
  for (const Test &test : module.getTests()) {
    if (test.attrs.lookup(evidence::attr::kFromEvidence) ||
        graph.hasEvidence(test.index))
      continue;
    bool enclosing = test.attrs.get(python::attr::kEnclosing).isBool() &&
                     test.attrs.get(python::attr::kEnclosing).getBool();
    bool parametrized = test.attrs.get(python::attr::kParametrized).isBool() &&
                        test.attrs.get(python::attr::kParametrized).getBool();
    // A file item `a/test_x.py` has no `::`; every other static id may
    // still be parametrized by pytest (fixture params) even when not marked.
    bool isFile = !test.name.contains("::");
    for (llvm::StringRef suffix : {"::", "["}) {
      if (suffix == "::" && !(enclosing || isFile))
        continue;
      if (suffix == "[" && !(parametrized || !isFile))
        continue;
      std::string prefix = (test.name + suffix).str();
      auto it = llvm::lower_bound(
          withEvidence, std::make_pair(llvm::StringRef(prefix), TestId(0)));
      for (; it != withEvidence.end() && it->first.starts_with(prefix); ++it) {
        if (it->second == test.index)
          continue;
        // The innermost static item wins: `f` over its class over its file.
        TestId &current = representative[it->second];
        if (current == kNoTest ||
            module.getTest(current).name.size() < test.name.size())
          current = test.index;
      }
    }
  }
  representedExact.assign(numTests, true);
  for (TestId test = 0; test < numTests; ++test)
    if (TestId owner = representative[test]; owner != kNoTest) {
      ++numRepresented[owner];
      if (!graph.hasExactEvidence(test))
        representedExact[owner] = false;
    }
}

EntityId Selector::getEntry(const Test &test) const {
  if (test.entry != kNoEntity)
    return test.entry;
  TestId owner = representative[test.index];
  return owner == kNoTest ? kNoEntity : module.getTest(owner).entry;
}

void Selector::applyTestRules() {
  for (const Test &test : module.getTests()) {
    Verdict &verdict = verdicts[test.index];
    EntityId entry = getEntry(test);
    if (options.selectChangedTests && changes.isChangedEntity(entry)) {
      verdict.offer(SelectionRule::ChangedTest, [&] {
        return "the test itself changed: " +
               quoteSymbol(module.getEntity(entry).symbol);
      });
    } else if (options.selectChangedTestFiles) {
      llvm::StringRef path = getTestFilePath(module, test);
      if (!path.empty() && changes.isWholeFileChange(path))
        verdict.offer(SelectionRule::ChangedTest, [&] {
          return ("its test file '" + path +
                  "' was added, renamed or changed outside its entities")
              .str();
        });
    }
    if (EntityId file = getTestModule(test);
        file != kNoEntity &&
        module.getEntity(file).attrs.get(python::attr::kParseError).isBool() &&
        module.getEntity(file).attrs.get(python::attr::kParseError).getBool())
      verdict.offer(SelectionRule::ParseError, [&] {
        return ("parse-error: its file '" + module.getFilePath(file) +
                "' has syntax errors, so its tests may be incomplete")
            .str();
      });
    // The evidence tests under it are the tests; this static item only
    // runs when a rule that needs its static view selects it.
    if (numRepresented[test.index])
      continue;
    if (options.selectIncomplete && incomplete[test.index])
      verdict.offer(SelectionRule::IncompleteEvidence, [] {
        return std::string("its evidence is incomplete: a process of it ended "
                           "before its final write");
      });
    switch (states[test.index]) {
    case EvidenceState::Missing:
      if (options.selectMissing)
        verdict.offer(SelectionRule::MissingEvidence,
                      [] { return std::string("no evidence was recorded"); });
      break;
    case EvidenceState::Stale:
      if (options.selectStale)
        applyStaleEvidence(test, verdict);
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

void Selector::applyStaleEvidence(const Test &test, Verdict &verdict) {
  const Attribute *stale = test.attrs.lookup(evidence::attr::kStaleEntities);
  std::vector<llvm::StringRef> symbols;
  if (stale && stale->isList())
    for (const Attribute &symbol : stale->getList())
      if (std::optional<llvm::StringRef> name =
              symbol.isSymbol()
                  ? std::optional<llvm::StringRef>(symbol.getSymbolName())
                  : symbol.asString())
        symbols.push_back(*name);
  if (symbols.empty()) {
    verdict.offer(SelectionRule::StaleEvidence, [] {
      return std::string("its evidence is stale: code it ran changed since "
                         "recording (no stale_entities say which, so the "
                         "whole record counts)");
    });
    return;
  }
  // Stale heals: evidence outdated only in code this merge request cannot
  // reach still vouches for everything else the test runs.
  if (!staleRelevant) {
    staleRelevant.emplace();
    for (const RelevantChange &change : changes.getChanges()) {
      for (EntityId entity = change.entity;
           entity != kNoEntity && entity < module.getNumEntities();
           entity = module.getEntity(entity).parent) {
        if (!staleRelevant->insert(entity).second)
          break;
        if (module.getEntity(entity).kind == EntityKind::File)
          break;
      }
      staleRelevant->insert(change.region.begin(), change.region.end());
      if (const StaticPaths *paths = getReaching(change))
        for (const auto &[entity, step] : paths->getEntities())
          staleRelevant->insert(entity);
    }
  }
  for (llvm::StringRef symbol : symbols) {
    EntityId entity = module.lookupEntity(symbol);
    // A module's or class's own code (what runs when it is imported) runs
    // what it calls and the bodies it imports, not the functions defined in
    // it or in the modules it imports: its staleness matters only when its
    // import runs changed code.
    bool body = entity != kNoEntity &&
                (module.getEntity(entity).kind == EntityKind::Module ||
                 module.getEntity(entity).kind == EntityKind::Class);
    bool relevant =
        entity != kNoEntity &&
        (body ? importRunsChange(entity) : staleRelevant->contains(entity));
    // Code that no longer exists under its name (deleted or moved since)
    // is matched against what this merge request changed by name: the old
    // symbol a rename in this change records, or, for code that moved to
    // another module between recording and the base, its own name (the
    // last dotted part), which a move keeps. Without the second match a
    // test whose recorded code moved would lose it from its evidence and be
    // skipped when the moved code changes.
    if (entity == kNoEntity) {
      llvm::StringRef leaf = getSymbolLeaf(symbol);
      auto sameName = [&](EntityId id) {
        if (id == kNoEntity || id >= module.getNumEntities())
          return false;
        llvm::StringRef other = module.getEntity(id).symbol;
        return other == leaf || other.ends_with(("." + leaf).str());
      };
      relevant =
          llvm::any_of(changes.getChanges(), [&](const RelevantChange &c) {
            return llvm::is_contained(c.oldSymbols, symbol) ||
                   sameName(c.entity) || llvm::any_of(c.region, sameName);
          });
    }
    if (!relevant)
      continue;
    verdict.offer(SelectionRule::StaleEvidence, [&] {
      if (entity == kNoEntity)
        return "its evidence is stale in " + quoteSymbol(symbol) +
               ", which no longer exists under that name (renamed or moved "
               "since recording) and is named like code this change touches";
      return "its evidence is stale in " + quoteSymbol(symbol) +
             ", which changed since recording and is (or reaches) code this "
             "change touches";
    });
    return;
  }
}

/// Whether importing \p body (a module, or a class whose body runs when its
/// module is imported) runs code this merge request changes: its own
/// statements and those of the classes nested in it, the bodies of the
/// modules it imports at module level (closure), the decorators and
/// def-line defaults of the definitions in those bodies, and the functions
/// their calls reach within `static-hops` call edges (with the bodies of
/// the modules those functions import). Calls to code known only by a name
/// that changed (deleted or moved) count as running it.
bool Selector::importRunsChange(EntityId body) {
  if (auto it = bodyRunsChange.find(body); it != bodyRunsChange.end())
    return it->second;
  buildImportGraph();
  if (!changedCode) {
    // A module-level definition is observed by the code reading its names
    // (module-name), not by the bodies that run it.
    changedCode.emplace();
    for (const RelevantChange &change : changes.getChanges())
      if (change.level != ModuleLevel::Definition ||
          change.entity == kNoEntity ||
          module.getEntity(change.entity).kind != EntityKind::Module ||
          !hasNames(change.entity))
        changedCode->insert(change.region.begin(), change.region.end());
    edgesFrom.assign(module.getNumEntities(), {});
    for (const auto &[index, edge] : llvm::enumerate(module.getEdges()))
      if (edge.from < module.getNumEntities())
        edgesFrom[edge.from].push_back(index);
  }
  auto namesChangedCode = [&](llvm::StringRef name) {
    return llvm::any_of(changes.getChanges(), [&](const RelevantChange &c) {
      return c.entity == kNoEntity && llvm::is_contained(c.oldSymbols, name);
    });
  };
  llvm::DenseSet<EntityId> bodies, functions;
  std::vector<EntityId> bodyWork;
  std::vector<std::pair<EntityId, unsigned>> callWork;
  auto addBodies = [&](llvm::ArrayRef<EntityId> roots) {
    for (EntityId root : roots)
      for (EntityId module :
           imports->getImportClosure(root, kNoEntity, /*moduleLevelOnly=*/true))
        if (bodies.insert(module).second)
          bodyWork.push_back(module);
  };
  // A call's target runs: a function, or a class (constructing it runs its
  // methods, as static reach assumes).
  auto call = [&](const StaticEdge &edge, unsigned hops) {
    EntityId to = edge.to < module.getNumEntities()
                      ? edge.to
                      : module.lookupEntity(edge.name);
    if (to == kNoEntity)
      return namesChangedCode(edge.name);
    if (hops <= options.staticHops && functions.insert(to).second)
      callWork.emplace_back(to, hops);
    return false;
  };
  bool found = false;
  if (module.getEntity(body).kind == EntityKind::Module)
    addBodies(body);
  else if (bodies.insert(body).second)
    bodyWork.push_back(body);
  while (!found && (!bodyWork.empty() || !callWork.empty())) {
    if (!bodyWork.empty()) {
      EntityId at = bodyWork.back();
      bodyWork.pop_back();
      for (EntityId member : changes.getRegion(at)) {
        // Only the body itself and classes nested through classes run with
        // it; of a function nested in them, its decorators and the defaults
        // on its def line.
        bool runs = true;
        for (EntityId up = member; up != at && up != kNoEntity;
             up = module.getEntity(up).parent)
          if (module.getEntity(up).kind != EntityKind::Class) {
            runs = false;
            break;
          }
        EntityId parent = module.getEntity(member).parent;
        bool definitionOfBody =
            !runs && module.getEntity(member).kind == EntityKind::Function &&
            parent != kNoEntity && (bodies.contains(parent) || [&] {
              for (EntityId up = parent; up != at && up != kNoEntity;
                   up = module.getEntity(up).parent)
                if (module.getEntity(up).kind != EntityKind::Class)
                  return false;
              return true;
            }());
        if (!runs && !definitionOfBody)
          continue;
        if (runs && changedCode->contains(member)) {
          found = true;
          break;
        }
        uint32_t defLine = module.getEntity(member).range.startLine;
        for (size_t index : edgesFrom[member]) {
          const StaticEdge &edge = module.getEdges()[index];
          if (definitionOfBody && edge.line > defLine)
            continue;
          if (edge.kind == EdgeKind::Call && call(edge, 1)) {
            found = true;
            break;
          }
        }
        if (found)
          break;
      }
      continue;
    }
    auto [at, hops] = callWork.back();
    callWork.pop_back();
    for (EntityId member : changes.getRegion(at)) {
      if (changedCode->contains(member)) {
        found = true;
        break;
      }
      for (size_t index : edgesFrom[member]) {
        const StaticEdge &edge = module.getEdges()[index];
        if (edge.kind == EdgeKind::Import) {
          // Calling a function that imports a module runs that module.
          EntityId target = edge.to < module.getNumEntities()
                                ? getModuleOf(edge.to)
                                : imports->lookupModule(edge.name);
          if (target != kNoEntity)
            addBodies(target);
        } else if (call(edge, hops + 1)) {
          found = true;
          break;
        }
      }
      if (found)
        break;
    }
  }
  bodyRunsChange[body] = found;
  return found;
}

void Selector::applyChange(const RelevantChange &change) {
  const Change &record = changes.getRecord(change);
  std::string changed = quoteSymbol(record.symbol);
  std::string via;
  if (std::optional<llvm::StringRef> from =
          lookupString(record.attrs, diff::attr::kVia))
    via = (" (it loads changed '" + *from + "')").str();

  bool reached = applyParseError(change);
  // A module-level definition is observed by the code that reads its
  // names; an effect by every process that imports the module. Both need
  // parse-python's `names` (definitions) to be precise; without them the
  // change covers the whole module, as before.
  std::vector<EntityId> fullRegion;
  llvm::ArrayRef<EntityId> region = change.region;
  std::string fallback;
  if (change.level == ModuleLevel::Definition && !hasNames(change.entity)) {
    fullRegion = changes.getRegion(change.entity);
    region = fullRegion;
    fallback = " (no `names` from parse-python: every entity of the module "
               "counts)";
  } else if (change.level == ModuleLevel::Definition) {
    // Nothing but the readers observes a binding: no static reach through
    // imports of the module, no package fallback (a name nobody reads
    // selects nothing, and is no warning).
    applyModuleNames(change, record.symbol);
    applyModuleCode(change);
    return;
  } else if (change.level == ModuleLevel::Effect) {
    fullRegion = changes.getRegion(change.entity);
    region = fullRegion;
  }
  if (applyImportTime(change))
    reached = true;
  // A class's own lines (attributes, header) are observed by its methods
  // (its region) and by code naming `C.attr`.
  if (!change.defines.empty() && change.entity != kNoEntity &&
      module.getEntity(change.entity).kind == EntityKind::Class &&
      hasNames(getModuleOf(change.entity)) &&
      applyModuleNames(change, record.symbol))
    reached = true;
  // They run in the module's body, like the module's own lines.
  if (lookupString(record.attrs, diff::attr::kModuleLevel) &&
      change.entity != kNoEntity &&
      module.getEntity(change.entity).kind == EntityKind::Class &&
      applyModuleCode(change))
    reached = true;

  llvm::DenseSet<TestId> executing;
  for (const ChangeExecution &execution :
       ChangeSet::getExecutions(graph, region)) {
    executing.insert(execution.test);
    verdicts[execution.test].offer(
        SelectionRule::Executes,
        [&] {
          std::string where =
              execution.hottest == change.entity
                  ? changed
                  : quoteSymbol(module.getEntity(execution.hottest).symbol) +
                        " in changed " + changed;
          std::string seen =
              execution.samples
                  ? llvm::formatv("{0} samples", execution.samples).str()
                  : "recorded, not sampled";
          return llvm::formatv("executes {0} ({1}){2}{3}", where, seen, via,
                               fallback)
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
  // Code that moved to another module between recording and the base is
  // named by neither its symbol nor this change's old symbols; it keeps its
  // own name. Without this, a test whose evidence ran the code before the
  // move is skipped when the moved code changes.
  if (change.entity != kNoEntity) {
    auto it = vanishedByName.find(getSymbolLeaf(record.symbol));
    if (it != vanishedByName.end())
      for (const std::string &symbol : it->second)
        for (TestId test : staleUsers.find(symbol)->second) {
          if (!executing.insert(test).second)
            continue;
          verdicts[test].offer(SelectionRule::StaleEvidence, [&] {
            return "its evidence ran " + quoteSymbol(symbol) +
                   ", which no longer exists under that name (moved or "
                   "renamed since recording) and is named like changed " +
                   changed;
          });
        }
  }
  if (!executing.empty())
    reached = true;
  if (record.kind == ChangeKind::Added && applyDispatch(change))
    reached = true;
  if (change.level == ModuleLevel::Effect) {
    if (!reached)
      unreached.push_back(record.symbol.str());
    return;
  }
  if (options.sampledCallers && applySampledCallers(change, executing))
    reached = true;
  // Evidence is sampled: a test may run changed code too briefly to be seen
  // even when other tests were. Its own body is known statically.
  if (options.testEntries && applyTestEntries(change))
    reached = true;
  if (reached)
    return;
  if (applyStaticReach(change))
    return;
  // New code no evidence or static edge reaches runs in no test yet: the
  // package fallback is for changed code evidence missed, not for that.
  bool isNew = record.kind == ChangeKind::Added;
  if (!isNew && applySamePackage(change))
    return;
  std::string why = "no evidence";
  if (options.staticHops)
    why +=
        llvm::formatv(", no static path within {0} hop(s)", options.staticHops)
            .str();
  if (options.samePackage)
    why +=
        isNew ? ", new code (no package fallback)" : ", no test of its package";
  diag.warning(record.loc,
               "changed " + changed + " is reached by no test (" + why + ")");
  unreached.push_back(record.symbol.str());
}

bool Selector::hasNames(EntityId moduleEntity) const {
  // parse-python leaves `names` out where an entity loads nothing, so a
  // module of constants has none: any entity with `names` says the parser
  // wrote them for every entity.
  if (!namesWritten)
    namesWritten = llvm::any_of(module.getEntities(), [&](const Entity &e) {
      return e.attrs.lookup(python::attr::kNames) != nullptr;
    });
  return moduleEntity < module.getNumEntities() && *namesWritten;
}

EntityId Selector::getModuleOf(EntityId entity) const {
  // The import graph is built before any rule runs.
  return imports ? imports->getModuleOf(entity) : kNoEntity;
}

EntityId Selector::getTestModule(const Test &test) const {
  EntityId entry = getEntry(test);
  if (entry != kNoEntity)
    if (EntityId owner = getModuleOf(entry); owner != kNoEntity)
      return owner;
  if (!imports)
    return kNoEntity;
  return imports->getModuleForFile(getTestFilePath(module, test));
}

const StaticPaths *Selector::getReaching(const RelevantChange &change) {
  if (!options.staticHops)
    return nullptr;
  size_t index = &change - changes.getChanges().data();
  if (reaching.size() != changes.getChanges().size())
    reaching.resize(changes.getChanges().size());
  std::optional<StaticPaths> &paths = reaching[index];
  if (!paths)
    paths = reach.findReaching(
        change.entity, change.oldSymbols, options.staticHops,
        /*importsReachTarget=*/changes.getRecord(change).kind !=
            ChangeKind::Added);
  return &*paths;
}

void Selector::buildImportGraph() {
  if (imports)
    return;
  imports.emplace(module);
  // pytest imports a test file's conftests (every directory from the root
  // down) before the file itself, in the same process.
  testRoots.assign(module.getNumTests(), {});
  for (const Test &test : module.getTests()) {
    llvm::SmallVector<EntityId, 4> &roots = testRoots[test.index];
    llvm::StringRef path = getTestFilePath(module, test);
    if (EntityId own = getTestModule(test); own != kNoEntity)
      roots.push_back(own);
    for (llvm::StringRef dir =
             llvm::sys::path::parent_path(path, llvm::sys::path::Style::posix);
         ; dir = llvm::sys::path::parent_path(dir,
                                              llvm::sys::path::Style::posix)) {
      std::string conftest =
          dir.empty() ? "conftest.py" : (dir + "/conftest.py").str();
      if (EntityId id = imports->getModuleForFile(conftest); id != kNoEntity)
        roots.push_back(id);
      if (dir.empty())
        break;
    }
  }
}

llvm::DenseSet<EntityId> Selector::getImporters(EntityId moduleEntity) {
  buildImportGraph();
  return imports->getImportersClosure(moduleEntity);
}

bool Selector::selectImporters(EntityId moduleEntity, const std::string &what) {
  if (moduleEntity == kNoEntity)
    return false;
  llvm::DenseSet<EntityId> importers = getImporters(moduleEntity);
  std::string name = quoteSymbol(module.getEntity(moduleEntity).symbol);
  bool any = false;
  for (const Test &test : module.getTests()) {
    for (EntityId root : testRoots[test.index]) {
      if (!importers.contains(root))
        continue;
      any = true;
      verdicts[test.index].offer(SelectionRule::ImportTime, [&] {
        std::string how = root == moduleEntity
                              ? "its test file or a conftest is " + name
                              : "its test file or a conftest (" +
                                    quoteSymbol(module.getEntity(root).symbol) +
                                    ") imports " + name + " statically";
        return "import-time: " + what + "; " + how;
      });
      break;
    }
  }
  for (TestId test : graph.getTestsImporting(moduleEntity)) {
    any = true;
    verdicts[test].offer(SelectionRule::ImportTime, [&] {
      return "import-time: " + what + "; its recorded processes import " + name;
    });
  }
  for (TestId test : graph.getTestsRunningAtImport(moduleEntity)) {
    any = true;
    verdicts[test].offer(SelectionRule::ImportTime, [&] {
      return "import-time: " + what + "; its evidence ran the body of " + name;
    });
  }
  return any;
}

bool Selector::applyParseError(const RelevantChange &change) {
  EntityId owner = getModuleOf(change.entity);
  if (owner == kNoEntity)
    return false;
  Attribute flag = module.getEntity(owner).attrs.get(python::attr::kParseError);
  if (!flag.isBool() || !flag.getBool())
    return false;
  // What tree-sitter recovered may miss entities, and a file that does not
  // parse fails every process that imports it: run them all.
  std::string what = "parse-error: changed " +
                     quoteSymbol(changes.getRecord(change).symbol) +
                     " is in a file with syntax errors";
  bool any = false;
  for (const ChangeExecution &execution :
       ChangeSet::getExecutions(graph, changes.getRegion(owner))) {
    any = true;
    verdicts[execution.test].offer(SelectionRule::ParseError, [&] {
      return what + "; the test ran code of it";
    });
  }
  llvm::DenseSet<EntityId> importers = getImporters(owner);
  for (const Test &test : module.getTests())
    if (llvm::any_of(testRoots[test.index],
                     [&](EntityId root) { return importers.contains(root); }) ||
        llvm::is_contained(graph.getRecordedImports(test.index), owner)) {
      any = true;
      verdicts[test.index].offer(SelectionRule::ParseError, [&] {
        return what + "; its processes import it";
      });
    }
  return any;
}

bool Selector::applyImportTime(const RelevantChange &change) {
  const Change &record = changes.getRecord(change);
  bool any = false;
  if (change.importEffect) {
    std::string statement =
        lookupString(record.attrs, diff::attr::kEffectStatement)
            .value_or("")
            .str();
    std::string what = "changed module-level code of " +
                       quoteSymbol(record.symbol) +
                       " runs when it is imported" +
                       (statement.empty() ? "" : " (" + statement + ")");
    any |= selectImporters(getModuleOf(change.entity), what);
  }
  // A new definition whose decorators may register it changes its module's
  // import, like a module-level call.
  if (const Attribute *registered =
          record.attrs.lookup(diff::attr::kRegisteredBy);
      registered && registered->isList() && !registered->getList().empty()) {
    std::string what = "new " + quoteSymbol(record.symbol) +
                       " is registered at import by @" +
                       registered->getList()[0].str();
    any |= selectImporters(getModuleOf(change.entity), what);
  }
  // Changed functions that module bodies call while being imported. The
  // collection files pytest's process writes say which (evidence's
  // `import_time_entities`, listing at least every module body that ran);
  // without them, a body that calls the function statically stands in, so
  // that code a test module runs while it is collected still counts.
  bool collectionEvidence =
      module.getAttrs().contains(evidence::attr::kImportTimeEntities);
  auto atImport = [&](EntityId at) {
    for (; at != kNoEntity && at < module.getNumEntities();
         at = module.getEntity(at).parent) {
      EntityKind kind = module.getEntity(at).kind;
      if (kind == EntityKind::Module)
        return true;
      if (kind != EntityKind::Class)
        return false;
    }
    return false;
  };
  if (change.level == ModuleLevel::None)
    for (EntityId entity : change.region) {
      if (module.getEntity(entity).kind == EntityKind::Module)
        continue;
      if (!collectionEvidence)
        for (size_t index : reach.getCallsTo(entity)) {
          EntityId from = module.getEdges()[index].from;
          if (!atImport(from))
            continue;
          EntityId owner = getModuleOf(from);
          any |= selectImporters(
              owner, quoteSymbol(module.getEntity(from).symbol) +
                         " calls changed " +
                         quoteSymbol(module.getEntity(entity).symbol) +
                         " while it is imported (no collection evidence "
                         "says what ran then)");
        }
      for (EntityId owner : graph.getImportingModules(entity))
        any |= selectImporters(owner,
                               quoteSymbol(module.getEntity(entity).symbol) +
                                   " (changed) runs while " +
                                   quoteSymbol(module.getEntity(owner).symbol) +
                                   " is imported");
      for (TestId test : graph.getTestsRunningAtImport(entity)) {
        any = true;
        verdicts[test].offer(SelectionRule::ImportTime, [&] {
          return "import-time: its evidence ran changed " +
                 quoteSymbol(module.getEntity(entity).symbol) +
                 " while a module was being imported";
        });
      }
    }
  return any;
}

bool Selector::applyModuleNames(const RelevantChange &change,
                                llvm::StringRef scope) {
  if (!readers) {
    readers.emplace();
    for (const Entity &entity : module.getEntities())
      if (const Attribute *names = entity.attrs.lookup(python::attr::kNames);
          names && names->isList())
        for (const Attribute &name : names->getList())
          if (name.isString())
            readers->emplace_back(name.getString(), entity.id);
    llvm::sort(*readers);
  }
  // The names as readers spell them: `pkg.mod.X`, and `pkg.X` where
  // `pkg/__init__.py` re-exports it (`from .mod import X`, `import *`).
  // Each target after the first ones is a name a body statement binds from
  // one of them (`__version__ = ".".join(__version_tuple__)`): `origins`
  // says which, for the reasons.
  std::vector<std::string> targets;
  llvm::StringMap<std::string> origins;
  for (const std::string &name : change.defines)
    if (name != "*")
      targets.push_back(
          name == module.getEntity(change.entity).symbol.rsplit('.').second &&
                  module.getEntity(change.entity).kind == EntityKind::Class
              ? scope.str()
              : (scope + "." + name).str());
  if (!importsByName) {
    // Module-level imports by the dotted name they import, and tests by
    // their entry, once for every definition change.
    importsByName.emplace();
    for (const StaticEdge &edge : module.getEdges())
      if (edge.kind == EdgeKind::Import && !edge.name.empty() &&
          edge.from < module.getNumEntities() &&
          module.getEntity(edge.from).kind == EntityKind::Module)
        (*importsByName)[edge.name].push_back(edge.from);
    for (const Test &test : module.getTests())
      if (EntityId entry = getEntry(test); entry != kNoEntity)
        testsByEntry[entry].push_back(test.index);
  }
  constexpr size_t kMaxTargets = 4096;
  auto addTarget = [&](std::string target, const std::string &origin) {
    if (targets.size() < kMaxTargets && !llvm::is_contained(targets, target)) {
      if (!origin.empty())
        origins.try_emplace(target, origin);
      targets.push_back(std::move(target));
    }
  };
  auto addReExports = [&](size_t i) {
    std::string target = targets[i];
    llvm::StringRef owner = llvm::StringRef(target).rsplit('.').first,
                    last = llvm::StringRef(target).rsplit('.').second;
    std::string origin = origins.lookup(target);
    auto add = [&](EntityId from) {
      addTarget((module.getEntity(from).symbol + "." + last).str(), origin);
    };
    if (auto it = importsByName->find(target); it != importsByName->end())
      for (EntityId from : it->second)
        add(from);
    // `from owner import *` (an edge naming the module itself).
    if (auto it = importsByName->find(owner); it != importsByName->end())
      for (EntityId from : it->second)
        add(from);
  };

  // Entities reading a target or an attribute of it (`X.y`), or the module
  // object itself (which may be read through getattr).
  llvm::MapVector<EntityId, std::string> found;
  auto collect = [&](llvm::StringRef target, bool exact) {
    auto it = llvm::lower_bound(*readers, std::make_pair(target, EntityId(0)));
    for (; it != readers->end() && it->first.starts_with(target); ++it)
      if (it->first.size() == target.size() ||
          (!exact && it->first[target.size()] == '.'))
        found.try_emplace(it->second, it->first.str());
  };
  EntityId owner = getModuleOf(change.entity);
  std::string ownerSymbol =
      owner != kNoEntity ? module.getEntity(owner).symbol.str() : "";
  if (owner != kNoEntity)
    collect(ownerSymbol, /*exact=*/true);
  // A name read in a body is loaded when its module is imported: whether
  // that reaches beyond the names the body binds is the reading
  // statement's kind (parse-python's `flows` and `effect_names`).
  auto readsTarget = [&](const Attribute *names) {
    if (!names || !names->isList())
      return false;
    return llvm::any_of(names->getList(), [&](const Attribute &name) {
      if (!name.isString())
        return false;
      llvm::StringRef read = name.getString();
      if (read == ownerSymbol)
        return true;
      return llvm::any_of(targets, [&](llvm::StringRef target) {
        return read.starts_with(target) &&
               (read.size() == target.size() || read[target.size()] == '.');
      });
    });
  };
  // The changed module's own body passes its names on too: a name bound
  // from a changed one in the same module is changed as well.
  std::vector<EntityId> bodies;
  if (owner != kNoEntity)
    bodies.push_back(owner);
  for (size_t expanded = 0, collected = 0, seen = 0;;) {
    for (; expanded < targets.size(); ++expanded)
      addReExports(expanded);
    for (; collected < targets.size(); ++collected)
      collect(targets[collected], /*exact=*/false);
    for (; seen < found.size(); ++seen) {
      EntityId reader = found.begin()[seen].first;
      EntityKind kind = module.getEntity(reader).kind;
      if (reader != owner &&
          (kind == EntityKind::Module || kind == EntityKind::Class))
        bodies.push_back(reader);
    }
    size_t before = targets.size();
    for (EntityId body : bodies) {
      const Attribute *flows =
          module.getEntity(body).attrs.lookup(python::attr::kFlows);
      if (!flows || !flows->isDict())
        continue;
      for (const auto &[bound, from] : flows->getDict())
        if (readsTarget(&from))
          addTarget((module.getEntity(body).symbol + "." + bound).str(),
                    "bound by module-level code of " +
                        quoteSymbol(module.getEntity(body).symbol));
    }
    if (targets.size() == before)
      break;
  }
  if (owner != kNoEntity)
    found.erase(owner);

  const Change &record = changes.getRecord(change);
  std::string changed = quoteSymbol(record.symbol);
  bool any = false;
  for (const auto &[reader, name] : found) {
    const Entity &entity = module.getEntity(reader);
    std::string origin = origins.lookup(name);
    std::string reads =
        "reads '" + name + "', " +
        (origin.empty() ? "bound by changed module-level code of " + changed
                        : origin + " from a name changed in " + changed);
    std::string what = quoteSymbol(entity.symbol) + " " + reads;
    if (entity.kind == EntityKind::Module || entity.kind == EntityKind::Class) {
      const AttrDict &attrs = entity.attrs;
      bool knowsFlows = attrs.contains(python::attr::kFlows) ||
                        attrs.contains(python::attr::kEffectNames);
      if (!knowsFlows ||
          readsTarget(attrs.lookup(python::attr::kEffectNames))) {
        // A statement that may act beyond binding names reads it (or an
        // older parse-python did not say which statements read it): what
        // importing the module does changes.
        any |= selectImporters(getModuleOf(reader), what);
        continue;
      }
      // Only statements that bind names read it: their names are targets
      // above. A class's methods read its attributes through `self`.
      if (entity.kind == EntityKind::Class)
        for (const ChangeExecution &execution :
             ChangeSet::getExecutions(graph, changes.getRegion(reader))) {
          any = true;
          verdicts[execution.test].offer(SelectionRule::ModuleName, [&] {
            return "module-name: it runs " +
                   quoteSymbol(module.getEntity(execution.hottest).symbol) +
                   " of " + quoteSymbol(entity.symbol) +
                   ", whose attributes are bound by class-level code that " +
                   reads;
          });
        }
      continue;
    }
    for (TestId test : graph.getTestsExecuting(reader)) {
      any = true;
      verdicts[test].offer(SelectionRule::ModuleName, [&] {
        return "module-name: it runs " + quoteSymbol(entity.symbol) +
               ", which " + reads;
      });
    }
    for (EntityId owner : graph.getImportingModules(reader))
      any |= selectImporters(owner, what + ", which runs at import");
    for (TestId test : graph.getTestsRunningAtImport(reader)) {
      any = true;
      verdicts[test].offer(SelectionRule::ImportTime, [&] {
        return "import-time: its evidence ran " + what + " at import";
      });
    }
    if (auto it = testsByEntry.find(reader); it != testsByEntry.end())
      for (TestId test : it->second) {
        any = true;
        verdicts[test].offer(SelectionRule::ModuleName, [&] {
          return "module-name: the test function " + reads;
        });
      }
    // Sampled evidence misses short readers: tests that sampled code
    // reaching the reader within static-hops.
    if (options.staticHops) {
      StaticPaths paths = reach.findReaching(reader, {}, options.staticHops);
      for (const auto &[caller, step] : paths.getEntities())
        for (TestId test : graph.getTestsExecuting(caller)) {
          if (graph.hasExactEvidence(test))
            continue;
          any = true;
          verdicts[test].offer(SelectionRule::ModuleName, [&] {
            return "module-name: sampled " +
                   quoteSymbol(module.getEntity(caller).symbol) + " reaches " +
                   quoteSymbol(entity.symbol) + ", which " + reads + " (" +
                   paths.formatChain(module, caller) + ")";
          });
        }
    }
  }
  return any;
}

bool Selector::applyModuleCode(const RelevantChange &change) {
  // A module's own lines run when its body does, in every process that
  // imports it, and what they bind are globals that any code of the module
  // may read: parse-python's `names` see `X.attr` and calls of `X`, not
  // every use (a default argument, `globals()`, a decorator applied at
  // import, a re-export read through the package). An import does more: it
  // loads the modules it names and fails on a name the target lacks. A
  // class's own lines (header, attributes) run in the same module body. So
  // the observers are the tests that run code of the module, the processes
  // that import it, and the tests whose evidence ran its body; not every
  // test whose test file imports the package at collection, where nothing
  // of the module runs for that test. This is what line coverage counts
  // for such a line (docs/Evaluation.md), and it keeps "a version string
  // nobody reads selects nothing" for modules whose code no test runs.
  EntityId owner = getModuleOf(change.entity);
  if (owner == kNoEntity)
    return false;
  const Change &record = changes.getRecord(change);
  std::string name = quoteSymbol(module.getEntity(owner).symbol);
  std::string what;
  if (!change.imports.empty())
    what = "its changed import statements (" +
           llvm::join(change.imports, ", ") +
           ") run at import, load modules and bind globals that code may "
           "read";
  else if (change.entity != owner)
    what = "the changed own lines of " + quoteSymbol(record.symbol) +
           " run at import and bind what that code may read";
  else
    what = "its changed module-level code runs at import and binds globals "
           "that code may read";
  bool any = false;
  auto offer = [&](TestId test, const std::string &how) {
    if (change.importsOnly && importsLoadedIn(change, test))
      return;
    any = true;
    verdicts[test].offer(SelectionRule::ModuleCode,
                         [&] { return "module-code: " + how + "; " + what; });
  };
  for (const ChangeExecution &execution :
       ChangeSet::getExecutions(graph, changes.getRegion(owner)))
    offer(execution.test,
          execution.hottest == owner
              ? "its evidence ran the body of " + name
              : "it runs " +
                    quoteSymbol(module.getEntity(execution.hottest).symbol) +
                    " of " + name);
  for (TestId test : graph.getTestsImporting(owner))
    offer(test, "its recorded processes import " + name);
  for (TestId test : graph.getTestsRunningAtImport(owner))
    offer(test, "its evidence ran the body of " + name);
  return any;
}

bool Selector::applyDispatch(const RelevantChange &change) {
  if (change.entity == kNoEntity ||
      module.getEntity(change.entity).kind != EntityKind::Function)
    return false;
  EntityId cls = module.getEntity(change.entity).parent;
  if (cls == kNoEntity || cls >= module.getNumEntities() ||
      module.getEntity(cls).kind != EntityKind::Class)
    return false;
  llvm::StringRef name = getSymbolLeaf(module.getEntity(change.entity).symbol);
  // Python calls special methods itself (`len(x)`, `x == y`, `with x:`).
  std::string how;
  if (name.size() > 4 && name.starts_with("__") && name.ends_with("__"))
    how = "a special method Python calls itself";
  // A base class's code calls the method by its name on `self`: an override
  // runs where the base's did. The candidate bases are what the class's
  // header reads (`effect_names`; without them, every name it reads), and
  // theirs in turn; one outside the repository may define any method.
  llvm::SmallVector<EntityId, 4> work{cls};
  llvm::DenseSet<EntityId> seen{cls};
  while (how.empty() && !work.empty()) {
    const Entity &at = module.getEntity(work.pop_back_val());
    const Attribute *bases = at.attrs.lookup(python::attr::kEffectNames);
    if (!bases && !at.attrs.contains(python::attr::kFlows))
      bases = at.attrs.lookup(python::attr::kNames);
    if (!bases || !bases->isList())
      continue;
    for (const Attribute &base : bases->getList()) {
      if (!base.isString())
        continue;
      EntityId id = module.lookupEntity(base.getString());
      if (id == kNoEntity) {
        // A decorator or keyword that is not a class is read here too; any
        // name the repository does not define may be an external base.
        how = ("an override of a method its base '" + base.getString() +
               "' (outside the repository) may define")
                  .str();
        break;
      }
      if (module.getEntity(id).kind != EntityKind::Class ||
          !seen.insert(id).second)
        continue;
      if (module.lookupEntity(
              (module.getEntity(id).symbol + "." + name).str()) != kNoEntity) {
        how = "an override of " +
              quoteSymbol((module.getEntity(id).symbol + "." + name).str());
        break;
      }
      work.push_back(id);
    }
  }
  if (how.empty())
    return false;
  std::vector<EntityId> region = changes.getRegion(cls);
  llvm::erase_if(region, [&](EntityId id) {
    return llvm::is_contained(change.region, id);
  });
  bool any = false;
  for (const ChangeExecution &execution :
       ChangeSet::getExecutions(graph, region)) {
    any = true;
    verdicts[execution.test].offer(SelectionRule::Executes, [&] {
      return "it runs " +
             quoteSymbol(module.getEntity(execution.hottest).symbol) + " of " +
             quoteSymbol(module.getEntity(cls).symbol) + ", whose new " +
             quoteSymbol(module.getEntity(change.entity).symbol) + " is " +
             how + ": dispatch may call it";
    });
  }
  return any;
}

bool Selector::importsLoadedIn(const RelevantChange &change, TestId test) {
  if (!loadedExternal) {
    // A record lists the top-level modules its processes imported or tried
    // to import; one an installed distribution provides was loaded.
    loadedExternal.emplace(module.getNumTests());
    std::vector<bool> seen(module.getNumTests());
    for (const EvidenceRecord &record : module.getEvidence()) {
      if (record.test >= module.getNumTests())
        continue;
      std::optional<llvm::StringSet<>> &loaded = (*loadedExternal)[record.test];
      const Attribute *names =
          record.attrs.lookup(evidence::attr::kExternalImports);
      llvm::StringSet<> these;
      if (names && names->isList())
        for (const Attribute &name : names->getList())
          if (std::optional<llvm::StringRef> text = name.asString())
            these.insert(*text);
      if (!seen[record.test]) {
        seen[record.test] = true;
        if (names && names->isList())
          loaded = std::move(these);
      } else if (loaded && !(names && names->isList())) {
        loaded.reset();
      } else if (loaded) {
        llvm::SmallVector<llvm::StringRef, 8> gone;
        for (const auto &entry : *loaded)
          if (!these.contains(entry.getKey()))
            gone.push_back(entry.getKey());
        for (llvm::StringRef name : gone)
          loaded->erase(name);
      }
    }
    if (const Attribute *dists =
            module.getAttrs().lookup(evidence::attr::kDistributionModules);
        dists && dists->isDict())
      for (const auto &[dist, modules] : dists->getDict())
        if (modules.isList())
          for (const Attribute &name : modules.getList())
            if (std::optional<llvm::StringRef> text = name.asString())
              installedModules.insert(*text);
  }
  const std::optional<llvm::StringSet<>> &loaded = (*loadedExternal)[test];
  buildImportGraph();
  return llvm::all_of(change.imports, [&](llvm::StringRef written) {
    // A repository module: mark-changed classified the change as an effect
    // if importing it runs a body with effects no importer ran before.
    if (written.starts_with(".") || imports->lookupModule(written) != kNoEntity)
      return true;
    // An external submodule may be new to the process: its body would run.
    return !written.contains('.') && installedModules.contains(written) &&
           loaded && loaded->contains(written);
  });
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
        // An exact record lists every function that started: a callee it
        // lacks did not run.
        if (executing.contains(test) || graph.hasExactEvidence(test))
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
  const StaticPaths &paths = *getReaching(change);
  // Nearest entities first, so each test records its shortest chain.
  std::vector<std::pair<EntityId, StaticStep>> found(paths.getEntities());
  llvm::stable_sort(found, [](const auto &a, const auto &b) {
    return a.second.hops < b.second.hops;
  });
  llvm::DenseSet<TestId> done;
  for (const auto &[entity, step] : found) {
    for (const ChangeExecution &execution :
         ChangeSet::getExecutions(graph, changes.getRegion(entity))) {
      if (graph.hasExactEvidence(execution.test) ||
          !done.insert(execution.test).second)
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
  llvm::DenseMap<EntityId, std::string> reachers;
  for (EntityId entity : change.region)
    reachers.try_emplace(entity, "");
  if (const StaticPaths *paths = getReaching(change))
    for (const auto &[entity, step] : paths->getEntities())
      reachers.try_emplace(entity, paths->formatChain(module, entity));
  bool any = false;
  const Change &record = changes.getRecord(change);
  for (const Test &test : module.getTests()) {
    EntityId entry = getEntry(test);
    auto it = reachers.find(entry);
    // Exact evidence already says whether the test ran the changed code;
    // the static view of its body only stands in for sampling's holes (a
    // static item stands for its evidence tests).
    bool exact = numRepresented[test.index]
                     ? representedExact[test.index]
                     : graph.hasExactEvidence(test.index);
    if (entry == kNoEntity || it == reachers.end() ||
        (exact && !it->second.empty()))
      continue;
    any = true;
    verdicts[test.index].offer(SelectionRule::TestEntry, [&] {
      if (it->second.empty())
        return "the test function is changed code " +
               quoteSymbol(record.symbol);
      return "the test function reaches changed " + quoteSymbol(record.symbol) +
             " statically: " + it->second;
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
      if (graph.hasExactEvidence(test))
        continue;
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
      verdict.reason =
          numRepresented[test.index]
              ? llvm::formatv("its {0} evidence test(s) stand for it",
                              numRepresented[test.index])
                    .str()
          : changes.getChanges().empty()
              ? "the change alters no code"
              : "its evidence executes no changed code";
    bool selected = verdict.rule != SelectionRule::Unaffected;
    stats.selected += selected;
    ++stats.byRule[static_cast<size_t>(verdict.rule)];
    test.attrs.set(select::attr::kSelected, Attribute::getBool(selected));
    test.attrs.set(select::attr::kRule,
                   Attribute::getString(stringifySelectionRule(verdict.rule)));
    test.attrs.set(select::attr::kReason, Attribute::getString(verdict.reason));
    test.attrs.erase(select::attr::kEnclosedBy);
    test.attrs.erase(select::attr::kEvidenceTests);
    if (numRepresented[test.index])
      test.attrs.set(select::attr::kEvidenceTests,
                     Attribute::getInt(numRepresented[test.index]));
    if (TestId owner = representative[test.index];
        owner != kNoTest && selected &&
        verdicts[owner].rule != SelectionRule::Unaffected)
      test.attrs.set(select::attr::kEnclosedBy,
                     Attribute::getString(module.getTest(owner).name));
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
  findRepresentatives();
  buildImportGraph();
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
