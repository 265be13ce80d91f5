//===- SelectAttrs.h - Attribute names select-affected writes ---*- C++ -*-===//
//
// The attribute names select-affected sets that are new in this revision of
// the contract between passes, declared once so that emit-plan, the driver
// and plugins share one spelling. docs/Selection.md describes each value.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SELECT_SELECTATTRS_H
#define FASTCI_SELECT_SELECTATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::select::attr {

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
