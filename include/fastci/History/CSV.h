//===- CSV.h - A small, strict RFC 4180 reader ------------------*- C++ -*-===//
//
// CI systems export job results as CSV. This reader accepts what RFC 4180
// allows (quoted fields with embedded commas, quotes and newlines; LF or CRLF
// line ends) and nothing else, and remembers where every field started so that
// a bad value can be reported at its exact position.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_HISTORY_CSV_H
#define FASTCI_HISTORY_CSV_H

#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/Support/SMLoc.h"
#include <string>
#include <vector>

namespace fastci {

/// One field: its unquoted value and where its first byte is.
struct CSVField {
  /// The value with quotes removed and doubled quotes collapsed.
  std::string value;
  /// The position of the field's first byte (its opening quote if quoted).
  llvm::SMLoc loc;
};

/// One record (line) of a CSV file.
struct CSVRow {
  /// The fields, in column order.
  std::vector<CSVField> fields;
  /// The position of the record's first byte.
  llvm::SMLoc loc;
};

/// Parses buffer \p bufferId of \p diag's SourceMgr as CSV into \p rows.
/// Blank lines are skipped. Reports the first malformation (unterminated
/// quote, text after a closing quote, a NUL byte, a record whose field count
/// differs from the first record's) with \p severity and fails; callers that
/// skip bad files report at Warning.
LogicalResult parseCSV(unsigned bufferId, DiagnosticEngine &diag,
                       std::vector<CSVRow> &rows,
                       Severity severity = Severity::Error);

} // namespace fastci

#endif // FASTCI_HISTORY_CSV_H
