//===- EvidenceAttrs.h - Attribute names merge-evidence writes --*- C++ -*-===//
//
// The attribute names merge-evidence sets on evidence records and on the
// module, declared once so that their readers (EvidenceGraph,
// select-affected, mark-changed, emit-plan) share one spelling.
// docs/Evidence.md describes each value.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_EVIDENCE_EVIDENCEATTRS_H
#define FASTCI_EVIDENCE_EVIDENCEATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::evidence::attr {

/// String, on a record: "exact" when every process merged into it ran the
/// exact function recorder, "sampled" otherwise. Read by EvidenceGraph.
inline constexpr llvm::StringLiteral kCoverage = "coverage";

/// Symbol list, on a record: entities whose code started at test time in
/// the record's processes (never module or class bodies). EvidenceGraph
/// folds them into the test's entity uses.
inline constexpr llvm::StringLiteral kFunctions = "functions";

/// Symbol list, on a record: entities executed while a module body was
/// executing during the test (module and class bodies, decorators,
/// functions module bodies call). Read by EvidenceGraph.
inline constexpr llvm::StringLiteral kImportFunctions = "import_functions";

/// Symbol list, on a record: repository modules loaded in the record's
/// child processes and modules imported during the test in the main
/// process. Read by EvidenceGraph for the import-time rule.
inline constexpr llvm::StringLiteral kImports = "imports";

/// String list, on a record: repository-relative paths of non-.py files
/// the test's processes opened for reading. Read by EvidenceGraph and
/// mark-changed (rule `reads-file`).
inline constexpr llvm::StringLiteral kReads = "reads";

/// Dictionary of symbol lists, on the module: for each repository module,
/// the entities executed while its body ran, over every process and test.
/// Read by EvidenceGraph for the import-time rule.
inline constexpr llvm::StringLiteral kImportTimeEntities =
    "import_time_entities";

} // namespace fastci::evidence::attr

#endif // FASTCI_EVIDENCE_EVIDENCEATTRS_H
