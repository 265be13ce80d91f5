//===- CSV.cpp - A small, strict RFC 4180 reader --------------------------===//
//
// A single forward scan over the buffer: each field is either quoted (ends at
// a lone quote, which must be followed by a separator or a line end) or bare
// (ends at a separator or a line end). The scan never backtracks, so it is
// linear in the input however it is malformed.
//
//===----------------------------------------------------------------------===//
#include "fastci/History/CSV.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace fastci;

namespace {
/// Scans one buffer; `pos` only moves forward.
class CSVScanner {
public:
  CSVScanner(llvm::StringRef text, DiagnosticEngine &diag, Severity severity)
      : text(text), diag(diag), severity(severity) {}

  LogicalResult scan(std::vector<CSVRow> &rows);

private:
  bool atEnd() const { return pos >= text.size(); }
  bool atLineEnd() const {
    return text[pos] == '\n' || (text[pos] == '\r' && pos + 1 < text.size() &&
                                 text[pos + 1] == '\n');
  }
  llvm::SMLoc locAt(size_t offset) const {
    return llvm::SMLoc::getFromPointer(text.data() + offset);
  }
  LogicalResult emitError(size_t offset, const llvm::Twine &message) {
    diag.emit(severity, locAt(offset), message);
    return failure();
  }
  /// Consumes a line end at `pos` if there is one.
  void skipLineEnd() {
    if (text[pos] == '\r')
      ++pos;
    ++pos;
  }
  LogicalResult scanField(CSVField &field);
  LogicalResult scanRow(CSVRow &row);

  llvm::StringRef text;
  DiagnosticEngine &diag;
  Severity severity;
  size_t pos = 0;
};
} // namespace

LogicalResult CSVScanner::scanField(CSVField &field) {
  size_t start = pos;
  field.loc = locAt(start);
  if (atEnd() || text[pos] != '"') {
    while (!atEnd() && text[pos] != ',' && !atLineEnd()) {
      if (text[pos] == '"')
        return emitError(pos, "quote inside an unquoted CSV field");
      if (text[pos] == '\0')
        return emitError(pos, "NUL byte in CSV input");
      if (text[pos] == '\r')
        return emitError(pos, "carriage return not followed by a line feed");
      field.value.push_back(text[pos++]);
    }
    return success();
  }
  ++pos; // Opening quote.
  while (true) {
    if (atEnd())
      return emitError(start, "unterminated quoted CSV field");
    char c = text[pos++];
    if (c == '\0')
      return emitError(pos - 1, "NUL byte in CSV input");
    if (c != '"') {
      field.value.push_back(c);
      continue;
    }
    if (!atEnd() && text[pos] == '"') {
      field.value.push_back('"');
      ++pos;
      continue;
    }
    break;
  }
  if (!atEnd() && text[pos] != ',' && !atLineEnd())
    return emitError(pos, "expected ',' or a line end after a quoted field");
  return success();
}

LogicalResult CSVScanner::scanRow(CSVRow &row) {
  row.loc = locAt(pos);
  while (true) {
    CSVField &field = row.fields.emplace_back();
    if (failed(scanField(field)))
      return failure();
    if (atEnd())
      return success();
    if (atLineEnd()) {
      skipLineEnd();
      return success();
    }
    ++pos; // The separator.
  }
}

LogicalResult CSVScanner::scan(std::vector<CSVRow> &rows) {
  while (!atEnd()) {
    if (atLineEnd()) {
      skipLineEnd();
      continue;
    }
    CSVRow row;
    if (failed(scanRow(row)))
      return failure();
    if (!rows.empty() && row.fields.size() != rows.front().fields.size()) {
      size_t offset = row.loc.getPointer() - text.data();
      return emitError(offset, "CSV record has " +
                                   llvm::Twine(row.fields.size()) +
                                   " fields, expected " +
                                   llvm::Twine(rows.front().fields.size()));
    }
    rows.push_back(std::move(row));
  }
  return success();
}

LogicalResult fastci::parseCSV(unsigned bufferId, DiagnosticEngine &diag,
                               std::vector<CSVRow> &rows, Severity severity) {
  llvm::StringRef text =
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
  return CSVScanner(text, diag, severity).scan(rows);
}
