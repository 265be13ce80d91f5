//===- EvidenceMerger.h - Merging evidence into a Module --------*- C++ -*-===//
//
// mergeEvidence() ingests every evidence file under a directory into a
// Module: it reads files in parallel and merges them in sorted path order, so
// the result is the same whatever the thread count; it maps frames onto the
// module's entities (through a snapshot of the recorded revision when one is
// available), unions the samples of every run of a test per (rank, revision,
// rate) into one EvidenceRecord, and marks every test with how far its
// evidence can be trusted. The rules are in docs/Evidence.md.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_EVIDENCE_EVIDENCEMERGER_H
#define FASTCI_EVIDENCE_EVIDENCEMERGER_H

#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/IR/Module.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include <cstdint>
#include <optional>
#include <string>

namespace fastci {

/// How far a test's (or a record's) evidence can be trusted. Ordered from
/// best to worst; a test takes the worst state of its records.
enum class EvidenceState : uint8_t {
  /// Recorded at the module's revision, or verified against a snapshot.
  Fresh,
  /// Recorded at another (or an unknown) revision with no snapshot to check
  /// it against; frames were mapped by line onto the current code.
  Unverified,
  /// Some sampled code changed (other body hash) or vanished since.
  Stale,
  /// The test has no evidence at all.
  Missing,
};

/// The attribute value naming \p state (`fresh`, `unverified`, ...).
llvm::StringRef stringifyEvidenceState(EvidenceState state);
/// The state named \p name, if any.
std::optional<EvidenceState> parseEvidenceState(llvm::StringRef name);
/// The state a test's `evidence` attribute records (Missing when absent).
EvidenceState getEvidenceState(const Test &test);

/// What mergeEvidence reads and how.
struct MergeEvidenceOptions {
  /// The directory to ingest, recursively.
  std::string directory;
  /// The test id of py-spy files; empty to take it from the directory name.
  std::string pyspyTestId;
  /// The repository root to strip from absolute frame paths when a file does
  /// not name its own; empty for the module's `root` attribute.
  std::string root;
  /// Add tests that only evidence names (marked `from_evidence`); when false
  /// their evidence is dropped with a warning.
  bool addUnknownTests = true;
  /// Calling-context depth recorded for EvidenceGraph (at least 1).
  unsigned contextDepth = 3;
};

/// Figures about one merge, for pass statistics and benchmarks.
struct MergeEvidenceStats {
  uint64_t files = 0, skippedFiles = 0;
  uint64_t lines = 0, malformedLines = 0;
  uint64_t samples = 0, staleSamples = 0;
  uint64_t records = 0, addedTests = 0;
  /// Tests whose evidence was dropped: they existed when recorded and no
  /// longer do (docs/Evidence.md, "Unknown tests").
  uint64_t goneTests = 0;
};

/// Merges the evidence under \p options.directory into \p module. Bad files
/// and lines are warnings; a missing directory or unreadable snapshot is an
/// error (and a failure).
LogicalResult mergeEvidence(Module &module, const MergeEvidenceOptions &options,
                            DiagnosticEngine &diag,
                            MergeEvidenceStats *stats = nullptr);

} // namespace fastci

#endif // FASTCI_EVIDENCE_EVIDENCEMERGER_H
