//===- IRAttrs.h - Attribute names of the module snapshot -------*- C++ -*-===//
//
// Module attributes that describe the snapshot itself rather than any pass's
// result; whoever produces the snapshot (the `fastci` driver, a test's .fir
// file) sets them. Declared once so that readers share one spelling; the
// verifier checks their kinds. docs/IR.md has the table of writers and
// readers of every attribute.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_IR_IRATTRS_H
#define FASTCI_IR_IRATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::ir::attr {

/// String, on the module: the revision (commit) the snapshot describes. Read
/// by merge-evidence, which compares it with each record's revision.
inline constexpr llvm::StringLiteral kRevision = "revision";

} // namespace fastci::ir::attr

#endif // FASTCI_IR_IRATTRS_H
