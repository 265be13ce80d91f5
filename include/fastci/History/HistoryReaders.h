//===- HistoryReaders.h - JUnit XML, JSON and CSV history readers -*- C++
//-*-===//
//
// Readers for the three places CI history comes from. Each parses one buffer
// registered with the DiagnosticEngine, so every problem is reported as
// `file:line:col: <severity>: message`, and appends HistoryRecords. A reader
// that fails appends nothing: a file is used whole or not at all.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_HISTORY_HISTORYREADERS_H
#define FASTCI_HISTORY_HISTORYREADERS_H

#include "fastci/History/History.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include <vector>

namespace fastci {

/// Reads a pytest `--junitxml` report: every `<testcase>` of every
/// `<testsuite>` becomes a record (`<failure>` → fail, `<error>` → error,
/// `<skipped>` → skip, else pass; `time` → duration). The run's time is the
/// suite's `timestamp` attribute (ISO 8601, UTC assumed), else
/// \p fallbackTime; its revision is a suite property named `revision`,
/// `commit`, `git_commit` or `sha`, else empty. On success \p runTime is the
/// time the records carry.
LogicalResult readJUnitXML(unsigned bufferId, DiagnosticEngine &diag,
                           int64_t fallbackTime,
                           std::vector<HistoryRecord> &records,
                           int64_t &runTime,
                           Severity severity = Severity::Error);

/// Reads CI job results as JSON: an array of objects, or an object whose
/// `results` member is one. Each object has `test` (string), `outcome`
/// (string, see parseOutcomeKind) and optionally `revision` (string),
/// `timestamp` (epoch seconds or ISO 8601 string), `duration` (seconds) and
/// `gpus` (integer).
LogicalResult readResultsJSON(unsigned bufferId, DiagnosticEngine &diag,
                              std::vector<HistoryRecord> &records,
                              Severity severity = Severity::Error);

/// Reads CI job results as CSV with a header row naming the same columns as
/// readResultsJSON, in any order; unknown columns are ignored.
LogicalResult readResultsCSV(unsigned bufferId, DiagnosticEngine &diag,
                             std::vector<HistoryRecord> &records,
                             Severity severity = Severity::Error);

/// Parses an ISO 8601 date-time (`2024-05-01T12:30:00`, optional fraction,
/// `Z` or `±hh:mm` offset; no offset means UTC) into epoch seconds.
std::optional<int64_t> parseISO8601(llvm::StringRef text);

} // namespace fastci

#endif // FASTCI_HISTORY_HISTORYREADERS_H
