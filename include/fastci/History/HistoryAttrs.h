//===- HistoryAttrs.h - Attribute names load-history writes -----*- C++ -*-===//
//
// The attribute names load-history (lib/History) sets on tests, declared
// once so that readers (emit-plan, plugins) share one spelling. Each comment
// gives the value kind, what it means and who reads it; the verifier checks
// the kinds (passes/Attributes.cpp registers them). docs/IR.md has the table
// of writers and readers.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_HISTORY_HISTORYATTRS_H
#define FASTCI_HISTORY_HISTORYATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::history::attr {

/// String (`declared` | `history` | `evidence`), on tests: where
/// cost.seconds came from. Read by emit-plan.
inline constexpr llvm::StringLiteral kCostSource = "cost_source";
/// Int, on tests with measured cost: the runs the duration is the median of.
inline constexpr llvm::StringLiteral kCostRuns = "cost_runs";

} // namespace fastci::history::attr

#endif // FASTCI_HISTORY_HISTORYATTRS_H
