//===- Selector.h - Evidence-based test selection ---------------*- C++ -*-===//
//
// selectAffectedTests() decides, for every test of a module, whether a merge
// request can change its outcome. The primary rule is evidence: a test whose
// sampled stacks executed changed code is selected. Evidence has holes --
// tests never recorded, recordings older than the code, short functions that
// 50 Hz sampling missed, code that has never run, files that are not Python
// -- and each hole has a named fail-safe rule that selects rather than skips.
// Every test gets `selected`, the `rule` that decided and a `reason` a plan
// can print; docs/Selection.md states the rules and their options.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SELECT_SELECTOR_H
#define FASTCI_SELECT_SELECTOR_H

#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/IR/Module.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include <array>
#include <cstdint>
#include <optional>

namespace fastci {

/// Why a test was selected or skipped. Rules are listed by precedence: a
/// test that several rules select records the first. Every rule before
/// Executes is a fail-safe, and tests it selects are never pruned.
enum class SelectionRule : uint8_t {
  /// The change policy decided that every test runs.
  PolicyAll,
  /// The test itself is new or edited.
  ChangedTest,
  /// The test, or changed code it may run, is in a file whose parse found
  /// syntax errors, so its entities may be incomplete.
  ParseError,
  /// The test has no evidence.
  MissingEvidence,
  /// A process of the test ended before its final evidence write (killed,
  /// crashed): the record holds only what an earlier flush saw.
  IncompleteEvidence,
  /// Code the test ran has changed since its evidence was recorded.
  StaleEvidence,
  /// The evidence was recorded at another revision and could not be
  /// verified (only with `select-unverified`).
  UnverifiedEvidence,
  /// The policy routed a changed non-Python file to the test.
  ReferencedFile,
  /// The test's evidence read a changed non-Python file.
  ReadsFile,
  /// The test's processes imported (or tried to import) a package whose
  /// dependency pin changed.
  ImportsDependency,
  /// Changed code runs while a module the test's processes import is being
  /// imported (a module-level effect, or a function a module body calls).
  ImportTime,
  /// The test runs code that reads a name a changed module-level
  /// definition binds.
  ModuleName,
  /// The test runs code of (or its processes import) a module whose own
  /// lines (module-level statements, a class's header or attributes)
  /// changed: they run at import and bind globals that code may read.
  ModuleCode,
  /// The test sampled a caller that statically calls changed code which no
  /// sample shows (too short for the sampling rate).
  SampledCaller,
  /// No evidence reaches the changed code; the test sampled code that calls
  /// or imports it within a few static hops.
  StaticReach,
  /// Neither evidence nor static edges reach the changed code; the test ran
  /// code of the same package.
  SamePackage,
  /// The test function itself calls or imports changed code within
  /// `static-hops` static hops: tests too short for 50 Hz sampling (most
  /// unit tests) are found from their own body, whatever the evidence says.
  TestEntry,
  /// The test's evidence executed changed code.
  Executes,
  /// Nothing changed reaches the test: it is skipped.
  Unaffected,
};

/// Number of SelectionRule values.
inline constexpr size_t kNumSelectionRules =
    static_cast<size_t>(SelectionRule::Unaffected) + 1;

/// The attribute spelling of \p rule (`executes`, `missing-evidence`, ...).
llvm::StringRef stringifySelectionRule(SelectionRule rule);
/// The rule spelled \p name, if any.
std::optional<SelectionRule> parseSelectionRule(llvm::StringRef name);
/// True for the fail-safe rules, whose tests prune-context-equiv keeps.
inline bool isFallbackRule(SelectionRule rule) {
  return rule < SelectionRule::Executes;
}

/// The knobs of the fail-safe rules; each loosens or tightens one rule.
struct SelectOptions {
  /// Select every test when the change policy says so.
  bool honorPolicyAll = true;
  /// Select tests whose entry (test function) changed.
  bool selectChangedTests = true;
  /// Also select every test of a test file added, renamed or changed where
  /// no entity holds the change (ChangeSet::isWholeFileChange).
  bool selectChangedTestFiles = true;
  /// Select tests without evidence.
  bool selectMissing = true;
  /// Select tests a process of which left incomplete evidence.
  bool selectIncomplete = true;
  /// Select tests whose evidence is stale.
  bool selectStale = true;
  /// Select tests whose evidence is unverified rather than trusting it.
  bool selectUnverified = false;
  /// Select tests a changed non-Python file is routed to.
  bool selectReferenced = true;
  /// Count a static callee of a sampled caller as executed.
  bool sampledCallers = true;
  /// Static hops searched for changed code no evidence reaches; 0 disables
  /// the static fallback.
  unsigned staticHops = 2;
  /// Fall back to tests of the same package when nothing else reaches a
  /// change.
  bool samePackage = true;
  /// Select tests whose own function statically reaches changed code.
  bool testEntries = true;
};

/// What a selection decided, for statistics and the plan.
struct SelectionStats {
  /// Tests decided by each rule, indexed by SelectionRule.
  std::array<uint64_t, kNumSelectionRules> byRule{};
  /// Changes (not cosmetic) considered, and those no rule routed anywhere.
  uint64_t changes = 0, unreachedChanges = 0;
  /// Tests selected in all.
  uint64_t selected = 0;
};

/// Marks every test of \p module selected or skipped from \p graph (the
/// module's evidence) and its changes. Warns about changes no test reaches;
/// fails only on malformed inputs it cannot interpret safely.
LogicalResult selectAffectedTests(Module &module, const EvidenceGraph &graph,
                                  const SelectOptions &options,
                                  DiagnosticEngine &diag,
                                  SelectionStats *stats = nullptr);

} // namespace fastci

#endif // FASTCI_SELECT_SELECTOR_H
