//===- SelectAffected.cpp - The select-affected pass ----------------------===//
//
// select-affected marks every test `selected = true | false` with the `rule`
// that decided and a printable `reason`: tests whose evidence executed
// changed code, plus the fail-safe fallbacks for everything evidence cannot
// see. The work is done by selectAffectedTests() (lib/Select); this file
// binds it to the pipeline. The rules are in docs/Selection.md.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Select/Selector.h"

using namespace fastci;

namespace {

struct SelectAffectedPass : PassWrapper<SelectAffectedPass> {
  llvm::StringRef getArgument() const override { return "select-affected"; }
  llvm::StringRef getSummary() const override {
    return "Select the tests a change can affect, from evidence with "
           "fail-safe fallbacks";
  }
  llvm::StringRef getDescription() const override {
    return "Selects every test whose sampled evidence executed changed code "
           "(modified, deleted, moved or renamed, not cosmetic), and by "
           "fail-safe rules every test evidence cannot vouch for: the change "
           "policy forcing all, changed tests, missing or stale evidence, "
           "non-Python files routed to tests or read by them, syntax "
           "errors, module-level code observed at import or through the "
           "names it binds, static callees of sampled "
           "callers, static reach within `static-hops`, and the same "
           "package. Writes `selected`, `rule` and `reason` on every test. "
           "See docs/Selection.md.";
  }

  Option<bool> policyAll{
      *this, "policy-all",
      llvm::cl::desc("Select every test when the change policy says so"),
      llvm::cl::init(true)};
  Option<bool> changedTests{
      *this, "changed-tests",
      llvm::cl::desc("Select tests whose test function changed"),
      llvm::cl::init(true)};
  Option<bool> changedTestFiles{
      *this, "changed-test-files",
      llvm::cl::desc("Select every test of a test file added, renamed or "
                     "changed outside its entities"),
      llvm::cl::init(true)};
  Option<bool> missing{*this, "missing",
                       llvm::cl::desc("Select tests without evidence"),
                       llvm::cl::init(true)};
  Option<bool> incomplete{
      *this, "incomplete",
      llvm::cl::desc("Select tests a process of which left incomplete "
                     "evidence (ended before its final write)"),
      llvm::cl::init(true)};
  Option<bool> stale{*this, "stale",
                     llvm::cl::desc("Select tests whose evidence is stale"),
                     llvm::cl::init(true)};
  Option<bool> unverified{
      *this, "unverified",
      llvm::cl::desc("Select tests whose evidence is unverified instead of "
                     "trusting it"),
      llvm::cl::init(false)};
  Option<bool> referenced{
      *this, "referenced-files",
      llvm::cl::desc("Select tests the policy routes changed files to"),
      llvm::cl::init(true)};
  Option<bool> sampledCallers{
      *this, "sampled-callers",
      llvm::cl::desc("Count a static callee of a sampled caller as executed"),
      llvm::cl::init(true)};
  Option<unsigned> staticHops{
      *this, "static-hops",
      llvm::cl::desc("Static call/import hops searched for changed code no "
                     "evidence reaches (0: no static fallback)"),
      llvm::cl::init(2)};
  Option<bool> testEntries{
      *this, "test-entries",
      llvm::cl::desc("Select tests whose own function statically reaches "
                     "changed code within static-hops (sampling misses short "
                     "tests)"),
      llvm::cl::init(true)};
  Option<bool> samePackage{
      *this, "same-package",
      llvm::cl::desc("Fall back to tests of the changed code's package"),
      llvm::cl::init(true)};

  Statistic numSelected{this, "num-selected", "Tests selected"};
  Statistic numSkipped{this, "num-skipped", "Tests skipped"};
  Statistic numChanges{this, "num-changes", "Non-cosmetic changes considered"};
  Statistic numUnreached{this, "num-unreached-changes",
                         "Changes no rule routes to any test"};
  Statistic byPolicyAll{this, "rule-policy-all",
                        "Tests selected because the policy selects all"};
  Statistic byChangedTest{this, "rule-changed-test",
                          "Tests selected because they changed"};
  Statistic byParseError{this, "rule-parse-error",
                         "Tests selected because of a file with syntax "
                         "errors"};
  Statistic byMissing{this, "rule-missing-evidence",
                      "Tests selected for lack of evidence"};
  Statistic byIncomplete{this, "rule-incomplete-evidence",
                         "Tests selected because a process left incomplete "
                         "evidence"};
  Statistic byStale{this, "rule-stale-evidence",
                    "Tests selected because their evidence is stale"};
  Statistic byUnverified{this, "rule-unverified-evidence",
                         "Tests selected because their evidence is "
                         "unverified"};
  Statistic byReferenced{this, "rule-referenced-file",
                         "Tests selected for a changed file routed to them"};
  Statistic byReadsFile{this, "rule-reads-file",
                        "Tests selected because they read a changed file"};
  Statistic byImportsDependency{this, "rule-imports-dependency",
                                "Tests selected because they import a "
                                "package whose pin changed"};
  Statistic byImportTime{this, "rule-import-time",
                         "Tests selected because changed code runs when "
                         "their processes import a module"};
  Statistic byModuleName{this, "rule-module-name",
                         "Tests selected because they run code reading a "
                         "changed module-level name"};
  Statistic byModuleCode{this, "rule-module-code",
                         "Tests selected because they run code of a module "
                         "whose module-level code changed"};
  Statistic bySampledCaller{this, "rule-sampled-caller",
                            "Tests selected through a sampled caller"};
  Statistic byStaticReach{this, "rule-static-reach",
                          "Tests selected by static reach"};
  Statistic bySamePackage{this, "rule-same-package",
                          "Tests selected by package"};
  Statistic byTestEntry{this, "rule-test-entry",
                        "Tests selected because their own function statically "
                        "reaches changed code"};
  Statistic byExecutes{this, "rule-executes",
                       "Tests selected because they executed changed code"};

  void runOnModule() override {
    SelectOptions options;
    options.honorPolicyAll = policyAll;
    options.selectChangedTests = changedTests;
    options.selectChangedTestFiles = changedTestFiles;
    options.selectMissing = missing;
    options.selectIncomplete = incomplete;
    options.selectStale = stale;
    options.selectUnverified = unverified;
    options.selectReferenced = referenced;
    options.sampledCallers = sampledCallers;
    options.staticHops = staticHops;
    options.samePackage = samePackage;
    options.testEntries = testEntries;
    SelectionStats stats;
    if (failed(selectAffectedTests(getModule(), getAnalysis<EvidenceGraph>(),
                                   options, getDiagnostics(), &stats)))
      return signalPassFailure();

    numSelected += stats.selected;
    numSkipped += stats.byRule[size_t(SelectionRule::Unaffected)];
    numChanges += stats.changes;
    numUnreached += stats.unreachedChanges;
    Statistic *byRule[] = {
        &byPolicyAll,         &byChangedTest,   &byParseError,
        &byMissing,           &byIncomplete,    &byStale,
        &byUnverified,        &byReferenced,    &byReadsFile,
        &byImportsDependency, &byImportTime,    &byModuleName,
        &byModuleCode,        &bySampledCaller, &byStaticReach,
        &bySamePackage,       &byTestEntry,     &byExecutes};
    static_assert(std::size(byRule) == kNumSelectionRules - 1,
                  "one statistic per selecting rule");
    for (auto [index, statistic] : llvm::enumerate(byRule))
      *statistic += stats.byRule[index];
    // Only attributes changed; evidence and code are as they were.
    markAnalysesPreserved<EvidenceGraph>();
  }
};

} // namespace

namespace fastci {
void registerSelectAffectedPasses() {
  static PassRegistration<SelectAffectedPass> registration;
}
} // namespace fastci
