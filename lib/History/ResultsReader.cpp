//===- ResultsReader.cpp - CI job results as JSON or CSV ------------------===//
//
// Both formats carry the same columns, so both readers feed one
// RecordBuilder that validates a field wherever it came from and reports a
// bad value at the record it belongs to. llvm::json keeps no source
// positions, so the JSON reader recovers each record's position with a scan
// of its own (the text is known to be valid JSON by then).
//
//===----------------------------------------------------------------------===//
#include "fastci/History/CSV.h"
#include "fastci/History/HistoryReaders.h"
#include "fastci/Support/JSONScan.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

//===----------------------------------------------------------------------===//
// Timestamps
//===----------------------------------------------------------------------===//

/// Days from 1970-01-01 to the proleptic Gregorian date y-m-d (Howard
/// Hinnant's days_from_civil).
static int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = static_cast<unsigned>(y - era * 400);
  unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

/// Consumes exactly \p digits decimal digits from the front of \p text.
static std::optional<unsigned> consumeDigits(llvm::StringRef &text,
                                             size_t digits) {
  if (text.size() < digits)
    return std::nullopt;
  unsigned value = 0;
  for (char c : text.take_front(digits)) {
    if (!llvm::isDigit(c))
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  text = text.drop_front(digits);
  return value;
}

std::optional<int64_t> fastci::parseISO8601(llvm::StringRef text) {
  text = text.trim();
  auto year = consumeDigits(text, 4);
  if (!year || !text.consume_front("-"))
    return std::nullopt;
  auto month = consumeDigits(text, 2);
  if (!month || !text.consume_front("-"))
    return std::nullopt;
  auto day = consumeDigits(text, 2);
  if (!day || !(text.consume_front("T") || text.consume_front(" ")))
    return std::nullopt;
  auto hour = consumeDigits(text, 2);
  if (!hour || !text.consume_front(":"))
    return std::nullopt;
  auto minute = consumeDigits(text, 2);
  if (!minute || !text.consume_front(":"))
    return std::nullopt;
  auto second = consumeDigits(text, 2);
  if (!second)
    return std::nullopt;
  // Sub-second precision does not matter for ordering CI runs.
  if (text.consume_front(".")) {
    if (text.empty() || !llvm::isDigit(text.front()))
      return std::nullopt;
    text = text.drop_while(llvm::isDigit);
  }
  int64_t offset = 0;
  if (!text.empty() && !text.consume_front("Z")) {
    int sign = text.front() == '-' ? -1 : 1;
    if (!text.consume_front("+") && !text.consume_front("-"))
      return std::nullopt;
    auto offsetHours = consumeDigits(text, 2);
    text.consume_front(":");
    auto offsetMinutes = consumeDigits(text, 2);
    if (!offsetHours || !offsetMinutes || *offsetHours > 23 ||
        *offsetMinutes > 59)
      return std::nullopt;
    offset = sign * (*offsetHours * 3600 + *offsetMinutes * 60);
  }
  if (!text.empty() || *month < 1 || *month > 12 || *day < 1 || *day > 31 ||
      *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  return daysFromCivil(*year, *month, *day) * 86400 + *hour * 3600 +
         *minute * 60 + *second - offset;
}

//===----------------------------------------------------------------------===//
// RecordBuilder
//===----------------------------------------------------------------------===//

namespace {
/// The columns of a results file.
enum class Column { Test, Revision, Timestamp, Outcome, Duration, Gpus };

/// Builds one record field by field, reporting bad values at the record.
class RecordBuilder {
public:
  RecordBuilder(DiagnosticEngine &diag, Severity severity, llvm::SMLoc loc)
      : diag(diag), severity(severity) {
    record.loc = loc;
  }

  /// Sets \p column from its textual spelling.
  LogicalResult setText(Column column, llvm::StringRef value, llvm::SMLoc loc);
  /// Sets a numeric \p column from a JSON number.
  LogicalResult setNumber(Column column, double value, llvm::SMLoc loc);
  /// Checks that the required columns were set and returns the record.
  LogicalResult finish(HistoryRecord &result);

private:
  LogicalResult emitError(llvm::SMLoc loc, const llvm::Twine &message) {
    diag.emit(severity, loc, message);
    return failure();
  }

  DiagnosticEngine &diag;
  Severity severity;
  HistoryRecord record;
  bool hasOutcome = false, hasTimestamp = false;
};
} // namespace

static std::optional<Column> parseColumn(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Column>>(name)
      .Case("test", Column::Test)
      .Case("revision", Column::Revision)
      .Case("timestamp", Column::Timestamp)
      .Case("outcome", Column::Outcome)
      .Case("duration", Column::Duration)
      .Case("gpus", Column::Gpus)
      .Default(std::nullopt);
}

static llvm::StringRef getColumnName(Column column) {
  switch (column) {
  case Column::Test:
    return "test";
  case Column::Revision:
    return "revision";
  case Column::Timestamp:
    return "timestamp";
  case Column::Outcome:
    return "outcome";
  case Column::Duration:
    return "duration";
  case Column::Gpus:
    return "gpus";
  }
  llvm_unreachable("unknown column");
}

LogicalResult RecordBuilder::setNumber(Column column, double value,
                                       llvm::SMLoc loc) {
  switch (column) {
  case Column::Timestamp:
    if (!(value >= -1e15 && value <= 1e15))
      return emitError(loc, "'timestamp' is out of range");
    record.time = static_cast<int64_t>(value);
    hasTimestamp = true;
    return success();
  case Column::Duration:
    if (!(value >= 0) || value > 1e12)
      return emitError(loc, "'duration' must be a non-negative number of "
                            "seconds");
    record.duration = value;
    return success();
  case Column::Gpus:
    if (!(value >= 0 && value <= 1e6) || value != static_cast<int64_t>(value))
      return emitError(loc, "'gpus' must be a non-negative integer");
    record.gpus = static_cast<int64_t>(value);
    return success();
  default:
    return emitError(loc, "'" + getColumnName(column) + "' must be a string");
  }
}

LogicalResult RecordBuilder::setText(Column column, llvm::StringRef value,
                                     llvm::SMLoc loc) {
  switch (column) {
  case Column::Test:
    if (value.empty())
      return emitError(loc, "'test' is empty");
    record.test = value.str();
    return success();
  case Column::Revision:
    record.revision = value.str();
    return success();
  case Column::Outcome: {
    std::optional<OutcomeKind> kind = parseOutcomeKind(value);
    if (!kind)
      return emitError(loc, "unknown outcome '" + value +
                                "' (expected pass, fail, error or skip)");
    record.kind = *kind;
    hasOutcome = true;
    return success();
  }
  case Column::Timestamp: {
    int64_t seconds;
    if (!value.getAsInteger(10, seconds))
      return setNumber(column, static_cast<double>(seconds), loc);
    std::optional<int64_t> time = parseISO8601(value);
    if (!time)
      return emitError(loc, "'timestamp' is neither epoch seconds nor an ISO "
                            "8601 date-time: '" +
                                value + "'");
    record.time = *time;
    hasTimestamp = true;
    return success();
  }
  case Column::Duration:
  case Column::Gpus: {
    double number;
    if (value.getAsDouble(number))
      return emitError(loc, "'" + getColumnName(column) +
                                "' is not a number: '" + value + "'");
    return setNumber(column, number, loc);
  }
  }
  llvm_unreachable("unknown column");
}

LogicalResult RecordBuilder::finish(HistoryRecord &result) {
  if (record.test.empty())
    return emitError(record.loc, "result has no 'test'");
  if (!hasOutcome)
    return emitError(record.loc, "result has no 'outcome'");
  if (!hasTimestamp)
    return emitError(record.loc, "result has no 'timestamp'");
  result = std::move(record);
  return success();
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// Byte offsets where the elements of the records array start: the top-level
/// array, or the array under the top-level key "results". \p text must be
/// valid JSON. An element starts at the first non-space byte after the
/// array's `[` or after a `,` directly inside it.
static std::vector<size_t> findRecordOffsets(llvm::StringRef text) {
  std::vector<size_t> offsets;
  llvm::SmallVector<char, 16> stack;
  size_t recordsDepth = 0; // Nesting depth of the records array; 0: not seen.
  bool atElementStart = false;
  llvm::StringRef lastTopLevelString;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      continue;
    if (atElementStart && c != ']')
      offsets.push_back(pos);
    atElementStart = false;
    switch (c) {
    case '"': {
      size_t start = pos + 1;
      for (++pos; pos < text.size() && text[pos] != '"'; ++pos)
        pos += text[pos] == '\\';
      if (stack.size() == 1)
        lastTopLevelString = text.slice(start, pos);
      break;
    }
    case '[':
    case '{':
      stack.push_back(c);
      if (c == '[' && !recordsDepth &&
          (stack.size() == 1 ||
           (stack.size() == 2 && lastTopLevelString == "results")))
        recordsDepth = stack.size();
      atElementStart = c == '[' && stack.size() == recordsDepth;
      break;
    case ']':
    case '}':
      stack.pop_back();
      if (stack.size() < recordsDepth)
        return offsets;
      break;
    case ',':
      atElementStart = recordsDepth && stack.size() == recordsDepth;
      break;
    }
  }
  return offsets;
}

/// How deep containers may nest in a results file. Records are flat objects
/// in at most two levels of containers; llvm::json::parse recurses, so
/// anything much deeper is refused before it can exhaust the stack.
static constexpr size_t kMaxJSONDepth = 64;

/// The offset of the first bracket nested deeper than kMaxJSONDepth, if any.
/// Brackets inside strings do not count.
static std::optional<size_t> findExcessiveNesting(llvm::StringRef text) {
  size_t depth = 0;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    switch (text[pos]) {
    case '"':
      for (++pos; pos < text.size() && text[pos] != '"'; ++pos)
        pos += text[pos] == '\\';
      break;
    case '[':
    case '{':
      if (++depth > kMaxJSONDepth)
        return pos;
      break;
    case ']':
    case '}':
      depth -= depth > 0;
      break;
    }
  }
  return std::nullopt;
}

/// The `[line:col, byte=N]: message` that llvm::json::ParseError logs, split
/// into the byte offset and the message.
static std::pair<size_t, std::string> splitParseError(llvm::Error error) {
  std::string text = llvm::toString(std::move(error));
  llvm::StringRef rest(text);
  size_t offset = 0;
  if (rest.consume_front("[")) {
    size_t byte = rest.find("byte=");
    size_t close = rest.find("]: ");
    if (byte != llvm::StringRef::npos && close != llvm::StringRef::npos &&
        !rest.slice(byte + 5, close).getAsInteger(10, offset))
      return {offset, rest.drop_front(close + 3).str()};
  }
  return {0, text};
}

LogicalResult fastci::readResultsJSON(unsigned bufferId, DiagnosticEngine &diag,
                                      std::vector<HistoryRecord> &records,
                                      Severity severity) {
  llvm::StringRef text =
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
  auto locAt = [&](size_t offset) {
    return llvm::SMLoc::getFromPointer(text.data() +
                                       std::min(offset, text.size()));
  };
  if (std::optional<size_t> offset = findExcessiveNesting(text)) {
    diag.emit(severity, locAt(*offset),
              "JSON nested deeper than " + llvm::Twine(kMaxJSONDepth) +
                  " levels");
    return failure();
  }
  llvm::Expected<llvm::json::Value> root = llvm::json::parse(text);
  if (!root) {
    auto [offset, message] = splitParseError(root.takeError());
    diag.emit(severity, locAt(offset), "malformed JSON: " + message);
    return failure();
  }
  if (std::optional<DuplicateJSONKey> dup = findDuplicateJSONKey(text)) {
    diag.emit(severity, locAt(dup->offset),
              "duplicate key '" + dup->key + "' in JSON results");
    return failure();
  }
  const llvm::json::Array *array = root->getAsArray();
  if (const llvm::json::Object *object = root->getAsObject())
    array = object->getArray("results");
  if (!array) {
    diag.emit(severity, locAt(0),
              "expected an array of results or an object "
              "with a \"results\" array");
    return failure();
  }

  std::vector<size_t> offsets = findRecordOffsets(text);
  std::vector<HistoryRecord> fileRecords;
  for (auto [index, element] : llvm::enumerate(*array)) {
    llvm::SMLoc loc = locAt(index < offsets.size() ? offsets[index] : 0);
    const llvm::json::Object *object = element.getAsObject();
    if (!object) {
      diag.emit(severity, loc, "result is not a JSON object");
      return failure();
    }
    RecordBuilder builder(diag, severity, loc);
    // Fields are visited in key order so the first error reported does not
    // depend on llvm::json's hash order.
    std::vector<std::pair<std::string, const llvm::json::Value *>> fields;
    for (const auto &[key, value] : *object)
      fields.emplace_back(key.str(), &value);
    llvm::sort(fields);
    for (const auto &[key, value] : fields) {
      std::optional<Column> column = parseColumn(key);
      if (!column)
        continue;
      LogicalResult result = success();
      if (std::optional<llvm::StringRef> str = value->getAsString())
        result = builder.setText(*column, *str, loc);
      else if (std::optional<double> number = value->getAsNumber())
        result = builder.setNumber(*column, *number, loc);
      else if (value->kind() == llvm::json::Value::Null)
        continue;
      else {
        diag.emit(severity, loc, "'" + key + "' must be a string or a number");
        result = failure();
      }
      if (failed(result))
        return failure();
    }
    if (failed(builder.finish(fileRecords.emplace_back())))
      return failure();
  }
  llvm::append_range(records, std::move(fileRecords));
  return success();
}

//===----------------------------------------------------------------------===//
// CSV
//===----------------------------------------------------------------------===//

LogicalResult fastci::readResultsCSV(unsigned bufferId, DiagnosticEngine &diag,
                                     std::vector<HistoryRecord> &records,
                                     Severity severity) {
  std::vector<CSVRow> rows;
  if (failed(parseCSV(bufferId, diag, rows, severity)))
    return failure();
  if (rows.empty()) {
    llvm::StringRef text =
        diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
    diag.emit(severity, llvm::SMLoc::getFromPointer(text.data()),
              "CSV results have no header row");
    return failure();
  }

  const CSVRow &header = rows.front();
  std::vector<std::optional<Column>> columns;
  for (const CSVField &field : header.fields) {
    std::optional<Column> column =
        parseColumn(llvm::StringRef(field.value).trim().lower());
    // Two columns of one name would leave a record's value to column order.
    if (column && llvm::is_contained(columns, column)) {
      diag.emit(severity, field.loc,
                "duplicate column '" + getColumnName(*column) + "'");
      return failure();
    }
    columns.push_back(column);
  }
  for (Column required : {Column::Test, Column::Outcome, Column::Timestamp})
    if (!llvm::is_contained(columns, required)) {
      diag.emit(severity, header.loc,
                "CSV header has no '" + getColumnName(required) + "' column");
      return failure();
    }

  std::vector<HistoryRecord> fileRecords;
  for (const CSVRow &row : llvm::ArrayRef(rows).drop_front()) {
    RecordBuilder builder(diag, severity, row.loc);
    for (auto [column, field] : llvm::zip_equal(columns, row.fields)) {
      // An empty cell is a missing value, which finish() checks.
      if (!column || field.value.empty())
        continue;
      if (failed(builder.setText(*column, field.value, field.loc)))
        return failure();
    }
    if (failed(builder.finish(fileRecords.emplace_back())))
      return failure();
  }
  llvm::append_range(records, std::move(fileRecords));
  return success();
}
