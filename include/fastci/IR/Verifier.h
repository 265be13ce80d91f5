//===- Verifier.h - Structural checks of a Module ---------------*- C++ -*-===//
//
// The verifier checks the invariants every pass may rely on: symbols are
// unique, every reference resolves, line ranges are ordered and parents
// enclose their children, costs are non-negative, evidence names known tests
// and stacks, and attribute values are well formed. It runs after parsing and
// after each pass unless disabled.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_IR_VERIFIER_H
#define FASTCI_IR_VERIFIER_H

#include "fastci/IR/Module.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"

namespace fastci {

/// Reports every invariant \p module violates; fails if there was any.
LogicalResult verifyModule(const Module &module, DiagnosticEngine &diag);

} // namespace fastci

#endif // FASTCI_IR_VERIFIER_H
