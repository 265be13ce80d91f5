//===- EvidenceAttrs.h - Attribute names merge-evidence writes --*- C++ -*-===//
//
// The attribute names merge-evidence (lib/Evidence) sets on tests, evidence
// records and the module, declared once so that every reader (selection,
// pruning, emit-plan, plugins) shares one spelling. Each comment gives the
// value kind, where it is set, what it means and who reads it; the verifier
// checks the kinds (passes/Attributes.cpp registers them). docs/IR.md has
// the table of writers and readers, docs/Evidence.md the meaning.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_EVIDENCE_EVIDENCEATTRS_H
#define FASTCI_EVIDENCE_EVIDENCEATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::evidence::attr {

/// String (`fresh` | `unverified` | `stale` | `missing`), on tests and
/// evidence records: the EvidenceState. Read by select-affected,
/// prune-context-equiv and emit-plan.
inline constexpr llvm::StringLiteral kState = "evidence";
/// Symbol list, on stale tests and records: the code (at the recorded
/// revision) that changed since. Read by select-affected for its reason.
inline constexpr llvm::StringLiteral kStaleEntities = "stale_entities";
/// Int, on stale tests and records: samples whose stack passes through stale
/// code. Read by select-affected for its reason.
inline constexpr llvm::StringLiteral kStaleSamples = "stale_samples";
/// Bool, on tests only evidence names (no static item): true. Read by
/// emit-plan and docs.
inline constexpr llvm::StringLiteral kFromEvidence = "from_evidence";
/// Int, on the module: the calling-context depth EvidenceGraph uses. Read by
/// EvidenceGraph (select-affected, prune-context-equiv).
inline constexpr llvm::StringLiteral kContextDepth = "evidence_context_depth";
/// Int, on records: the evidence files merged into the record.
inline constexpr llvm::StringLiteral kFiles = "files";
/// Int list, on records merged from several processes: their pids.
inline constexpr llvm::StringLiteral kPids = "pids";
/// Int, on records: samples whose every frame is outside the repository.
inline constexpr llvm::StringLiteral kExternalSamples = "external_samples";
/// Number, on records: wall time of the recorded test in seconds.
inline constexpr llvm::StringLiteral kWallSeconds = "wall_seconds";
/// Bool, on records: false when a process ended without its footer.
inline constexpr llvm::StringLiteral kComplete = "complete";

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
