//===- EvidenceAttrs.h - Attribute names merge-evidence writes --*- C++ -*-===//
//
// The attribute names merge-evidence (lib/Evidence) sets on tests, evidence
// records and the module, declared once so that every reader (selection,
// pruning, emit-plan, plugins) shares one spelling. Each comment gives the
// value kind, where it is set, what it means and who reads it; the verifier
// checks the kinds (passes/DeclaredAttrs.cpp registers them). docs/IR.md has
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
/// String list (symbols), on stale tests and records: the code (at the
/// recorded revision) that changed since. Read by select-affected for its
/// reason.
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
/// String (`exact` | `sampled`), on records: "exact" when every process
/// merged into the record ran the exact function recorder, else "sampled"
/// (selection must read the record as samples only). Read by
/// select-affected.
inline constexpr llvm::StringLiteral kCoverage = "coverage";
/// Symbol list sorted by symbol, on records: function entities whose code
/// started at test time in the record's processes (first execution per code
/// object). Never module or class entities. Read by EvidenceGraph.
inline constexpr llvm::StringLiteral kFunctions = "functions";
/// Symbol list sorted, on records: entities executed while a module body ran
/// during the test (module and class bodies, decorators, functions a module
/// body calls), and module or class code run at test time (a script's
/// body). Read by EvidenceGraph and select-affected.
inline constexpr llvm::StringLiteral kImportFunctions = "import_functions";
/// Symbol list sorted, on records: repository module entities loaded in the
/// record's child processes, and imported during the test in the main
/// process. Read by select-affected.
inline constexpr llvm::StringLiteral kImports = "imports";
/// String list sorted, on records: repository-relative paths of non-.py
/// files the test's processes opened for reading. Read by select-affected.
inline constexpr llvm::StringLiteral kReads = "reads";
/// String list sorted, on records whose every process recorded it (sampler
/// 2.1): the top-level modules outside the repository and the standard
/// library the test's processes had imported or tried to import by its end.
/// Absent: unknown (any package). Read by mark-changed (dependency pins).
inline constexpr llvm::StringLiteral kExternalImports = "external_imports";
/// Int, on records: samples whose stack passed through a module or class
/// body (left out of the record's body; their entities are
/// import_functions).
inline constexpr llvm::StringLiteral kImportSamples = "import_samples";
/// Int, on the module: records dropped because their test has records of a
/// newer revision (newest-record-wins, by the files' recording time).
inline constexpr llvm::StringLiteral kEvidenceSuperseded =
    "evidence_superseded";
/// Dict from module symbol to a sorted symbol list, on the module: the
/// entities executed while that module's body ran (nested imports go to the
/// innermost importing module), over every process and test, including
/// pytest's collection. Read by select-affected.
inline constexpr llvm::StringLiteral kImportTimeEntities =
    "import_time_entities";
/// Dict from normalized distribution name to a sorted string list, on the
/// module: the top-level modules that installed distribution provides, for
/// the external_imports of the evidence. Read by mark-changed.
inline constexpr llvm::StringLiteral kDistributionModules =
    "distribution_modules";
/// Dict from normalized distribution name to a sorted string list, on the
/// module: the distributions it requires (installed or not). Read by
/// mark-changed: a changed pin may move what the distribution requires.
inline constexpr llvm::StringLiteral kDistributionRequires =
    "distribution_requires";
/// Dict from normalized distribution name to a one-string list (its
/// version), on the module: every distribution installed where pytest's
/// process recorded. Read by mark-changed: a newly required distribution
/// absent there may act in every process.
inline constexpr llvm::StringLiteral kDistributionVersions =
    "distribution_versions";
/// String, on the module: the interpreter (sys.executable) that recorded
/// most of the evidence files. Read by emit-plan and the plan interpreter.
inline constexpr llvm::StringLiteral kEvidencePython = "evidence_python";

} // namespace fastci::evidence::attr

#endif // FASTCI_EVIDENCE_EVIDENCEATTRS_H
