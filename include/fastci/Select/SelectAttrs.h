//===- SelectAttrs.h - Attribute names the selection passes write -*- C++ -*-=//
//
// The attribute names select-affected and prune-context-equiv (lib/Select)
// set on tests and the module, declared once so that every reader
// (lower-workload, score-risk, schedule, emit-plan, plugins) shares one
// spelling. Each comment gives the value kind, where it is set, what it means
// and who reads it; the verifier checks the kinds (passes/Attributes.cpp
// registers them). docs/IR.md has the table of writers and readers,
// docs/Selection.md the meaning.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SELECT_SELECTATTRS_H
#define FASTCI_SELECT_SELECTATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::select::attr {

/// Bool, on tests (select-affected): true when the test runs. Read by
/// prune-context-equiv, lower-workload, score-risk, schedule, emit-plan.
inline constexpr llvm::StringLiteral kSelected = "selected";
/// String (a SelectionRule: `policy-all`, `executes`, ...), on tests
/// (select-affected): the deciding rule. Read by prune-context-equiv
/// (fallback rules are kept), emit-plan.
inline constexpr llvm::StringLiteral kRule = "rule";
/// String, on tests (select-affected): a sentence saying why. Read by
/// emit-plan and `fastci plan --explain`.
inline constexpr llvm::StringLiteral kReason = "reason";
/// Dict, on the module (select-affected): the figures of the selection; its
/// presence tells later passes that selection ran. Read by emit-plan.
inline constexpr llvm::StringLiteral kSelectionSummary = "selection";
/// String list, on the module (select-affected): changed code no rule could
/// route to any test. Read by emit-plan.
inline constexpr llvm::StringLiteral kUnreached = "unreached_changes";

/// Bool, on tests (prune-context-equiv): true when other kept tests cover
/// every (changed entity, context) pair of this one. Read by lower-workload,
/// schedule, emit-plan.
inline constexpr llvm::StringLiteral kPruned = "pruned";
/// List of test names (strings), on pruned tests (prune-context-equiv): the
/// kept tests that cover them. Read by emit-plan.
inline constexpr llvm::StringLiteral kPrunedBy = "pruned_by";
/// Dict (changed entity symbol -> kept test), on pruned tests
/// (prune-context-equiv): the witness of each pair. Read by emit-plan and
/// `fastci plan --explain`.
inline constexpr llvm::StringLiteral kWitnesses = "witnesses";
/// Dict, on the module (prune-context-equiv): the figures of the pruning.
/// Read by emit-plan.
inline constexpr llvm::StringLiteral kPruningSummary = "pruning";

/// String, on a test the evidence recorded (`path::test_f[a]`) whose
/// static item (`path::test_f`, a parametrized function, or an enclosing
/// file or class item) is selected too: the static item runs it, so a plan
/// may leave it out. Read by emit-plan.
inline constexpr llvm::StringLiteral kEnclosedBy = "enclosed_by";

/// Int, on a static test that evidence tests stand for: how many. Such a
/// test is never `missing-evidence`; it runs only when a rule that needs
/// its static view (changed test, test entry, parse error) selects it.
inline constexpr llvm::StringLiteral kEvidenceTests = "evidence_tests";

} // namespace fastci::select::attr

#endif // FASTCI_SELECT_SELECTATTRS_H
