//===- EvidenceAttrs.h - Attribute names merge-evidence writes ---*- C++ -*-===//
//
// The attributes merge-evidence (lib/Evidence/EvidenceMerger.cpp) writes on
// evidence records and on the module, declared once for the passes that read
// them (EvidenceGraph, select-affected, prune-context-equiv). CONTRACTS.md's
// Evidence section and docs/Evidence.md describe their meaning.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_EVIDENCE_EVIDENCEATTRS_H
#define FASTCI_EVIDENCE_EVIDENCEATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::evidence::attr {

/// Record, string: "exact" when every process merged into the record ran the
/// exact function recorder, else "sampled" (selection must read the record
/// as samples only). Read by select-affected.
inline constexpr llvm::StringLiteral kCoverage = "coverage";
/// Record, list of symbol refs sorted by symbol: function entities whose
/// code started at test time in the record's processes (first execution per
/// code object). Never module or class entities. Read by EvidenceGraph.
inline constexpr llvm::StringLiteral kFunctions = "functions";
/// Record, list of symbol refs sorted: entities executed while a module body
/// ran during the test (module and class bodies, decorators, functions a
/// module body calls), and module/class code run at test time. Read by
/// EvidenceGraph / select-affected.
inline constexpr llvm::StringLiteral kImportFunctions = "import_functions";
/// Record, list of symbol refs sorted: repository module entities loaded in
/// the record's child processes, and imported during the test in the main
/// process. Read by select-affected.
inline constexpr llvm::StringLiteral kImports = "imports";
/// Record, list of strings sorted: repository-relative paths of non-.py
/// files the test's processes opened for reading. Read by select-affected.
inline constexpr llvm::StringLiteral kReads = "reads";
/// Record, integer: samples whose stack passed through a module or class
/// body (not in the record's body; their entities are import_functions).
inline constexpr llvm::StringLiteral kImportSamples = "import_samples";
/// Module, integer: records dropped because their test has records of a
/// newer revision (newest-record-wins, by the files' recording time).
inline constexpr llvm::StringLiteral kEvidenceSuperseded = "evidence_superseded";
/// Module, dictionary from module symbol to a sorted list of symbol refs:
/// the entities executed while that module's body ran (nested imports go to
/// the innermost importing module), over every process and test, including
/// pytest's collection. Read by select-affected.
inline constexpr llvm::StringLiteral kImportTimeEntities = "import_time_entities";
/// Module, string: the interpreter (sys.executable) that recorded most of
/// the evidence files. Read by emit-plan / the plan interpreter.
inline constexpr llvm::StringLiteral kEvidencePython = "evidence_python";

} // namespace fastci::evidence::attr

#endif // FASTCI_EVIDENCE_EVIDENCEATTRS_H
