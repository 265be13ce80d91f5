//===- JUnitReader.cpp - pytest --junitxml reports as history -------------===//
//
// pugixml does the XML; this file maps pytest's report layout onto history
// records and turns pugixml's byte offsets into source locations, so a broken
// report is reported where it breaks.
//
//===----------------------------------------------------------------------===//
#include "fastci/History/HistoryReaders.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MemoryBuffer.h"
#include <pugixml.hpp>

using namespace fastci;

/// How deep <testsuite> elements may nest.
static constexpr unsigned kMaxSuiteDepth = 16;

namespace {
/// Reads one report; errors are reported with `severity` and fail the file.
class JUnitReader {
public:
  JUnitReader(llvm::StringRef text, DiagnosticEngine &diag, Severity severity)
      : text(text), diag(diag), severity(severity) {}

  LogicalResult read(int64_t fallbackTime, std::vector<HistoryRecord> &records,
                     int64_t &runTime);

private:
  llvm::SMLoc locAt(ptrdiff_t offset) const {
    offset = std::clamp<ptrdiff_t>(offset, 0, text.size());
    return llvm::SMLoc::getFromPointer(text.data() + offset);
  }
  llvm::SMLoc locOf(pugi::xml_node node) const {
    return locAt(node.offset_debug());
  }
  LogicalResult emitError(llvm::SMLoc loc, const llvm::Twine &message) {
    diag.emit(severity, loc, message);
    return failure();
  }
  LogicalResult readSuite(pugi::xml_node suite, int64_t fallbackTime,
                          unsigned depth, std::vector<HistoryRecord> &records);
  LogicalResult readCase(pugi::xml_node testcase, const HistoryRecord &run,
                         std::vector<HistoryRecord> &records);

  llvm::StringRef text;
  DiagnosticEngine &diag;
  Severity severity;
  int64_t lastTime = 0;
};
} // namespace

/// The revision a suite declares in its `<properties>`, searching enclosing
/// `<testsuites>` too; empty when none does.
static std::string findRevision(pugi::xml_node suite) {
  for (pugi::xml_node node = suite; node; node = node.parent())
    for (pugi::xml_node property :
         node.child("properties").children("property")) {
      llvm::StringRef name = property.attribute("name").value();
      if (name == "revision" || name == "commit" || name == "git_commit" ||
          name == "sha")
        return property.attribute("value").value();
    }
  return {};
}

LogicalResult JUnitReader::readCase(pugi::xml_node testcase,
                                    const HistoryRecord &run,
                                    std::vector<HistoryRecord> &records) {
  HistoryRecord record = run;
  record.loc = locOf(testcase);
  record.junitClassName = testcase.attribute("classname").value();
  record.junitName = testcase.attribute("name").value();
  if (record.junitName.empty())
    return emitError(record.loc, "<testcase> has no 'name' attribute");

  if (pugi::xml_attribute time = testcase.attribute("time")) {
    double seconds;
    if (llvm::StringRef(time.value()).trim().getAsDouble(seconds) ||
        !(seconds >= 0))
      return emitError(record.loc, "<testcase> 'time' is not a non-negative "
                                   "number: '" +
                                       llvm::Twine(time.value()) + "'");
    record.duration = seconds;
  }
  // pytest writes at most one of these; an error (setup/teardown) outranks
  // a failure, which outranks a skip.
  if (testcase.child("error"))
    record.kind = OutcomeKind::Error;
  else if (testcase.child("failure"))
    record.kind = OutcomeKind::Fail;
  else if (testcase.child("skipped"))
    record.kind = OutcomeKind::Skip;
  else
    record.kind = OutcomeKind::Pass;
  records.push_back(std::move(record));
  return success();
}

LogicalResult JUnitReader::readSuite(pugi::xml_node suite, int64_t fallbackTime,
                                     unsigned depth,
                                     std::vector<HistoryRecord> &records) {
  // Some tools nest suites a level or two; bound the recursion so a
  // pathological report cannot exhaust the stack.
  if (depth > kMaxSuiteDepth)
    return emitError(locOf(suite), "<testsuite> nested more than " +
                                       llvm::Twine(kMaxSuiteDepth) +
                                       " levels deep");
  HistoryRecord run;
  run.revision = findRevision(suite);
  run.time = fallbackTime;
  if (pugi::xml_attribute stamp = suite.attribute("timestamp")) {
    std::optional<int64_t> time = parseISO8601(stamp.value());
    if (!time)
      return emitError(locOf(suite), "<testsuite> 'timestamp' is not an ISO "
                                     "8601 date-time: '" +
                                         llvm::Twine(stamp.value()) + "'");
    run.time = *time;
  }
  lastTime = run.time;
  for (pugi::xml_node child : suite.children()) {
    llvm::StringRef name = child.name();
    if (name == "testcase" && failed(readCase(child, run, records)))
      return failure();
    if (name == "testsuite" &&
        failed(readSuite(child, run.time, depth + 1, records)))
      return failure();
  }
  return success();
}

/// Finds the first element that repeats an attribute, which XML forbids but
/// pugixml accepts, keeping both: `name="a" name="b"` would otherwise name a
/// test silently by its first spelling. Walks iteratively, as deep as the
/// document goes. Returns the element and sets \p name, or a null node.
static pugi::xml_node findDuplicateAttribute(const pugi::xml_document &doc,
                                             llvm::StringRef &name) {
  pugi::xml_node node = doc.first_child();
  while (node) {
    llvm::SmallVector<llvm::StringRef, 8> seen;
    for (pugi::xml_attribute attr : node.attributes()) {
      if (llvm::is_contained(seen, llvm::StringRef(attr.name()))) {
        name = attr.name();
        return node;
      }
      seen.push_back(attr.name());
    }
    if (node.first_child()) {
      node = node.first_child();
      continue;
    }
    while (node && !node.next_sibling())
      node = node.parent();
    if (node)
      node = node.next_sibling();
  }
  return pugi::xml_node();
}

LogicalResult JUnitReader::read(int64_t fallbackTime,
                                std::vector<HistoryRecord> &records,
                                int64_t &runTime) {
  pugi::xml_document doc;
  // pugixml's parser and destructor are iterative, so deeply nested input
  // cannot exhaust the stack there; readSuite bounds its own recursion.
  pugi::xml_parse_result parsed = doc.load_buffer(
      text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed)
    return emitError(locAt(parsed.offset),
                     "malformed XML: " + llvm::Twine(parsed.description()));
  llvm::StringRef repeated;
  if (pugi::xml_node node = findDuplicateAttribute(doc, repeated))
    return emitError(locOf(node), "duplicate attribute '" + repeated +
                                      "' on <" + node.name() + ">");

  pugi::xml_node root = doc.document_element();
  llvm::StringRef rootName = root.name();
  llvm::SmallVector<pugi::xml_node> suites;
  if (rootName == "testsuite")
    suites.push_back(root);
  else if (rootName == "testsuites")
    for (pugi::xml_node suite : root.children("testsuite"))
      suites.push_back(suite);
  else
    return emitError(locOf(root), "expected a JUnit report (<testsuites> or "
                                  "<testsuite>), found <" +
                                      rootName + ">");

  for (pugi::xml_node suite : suites)
    if (failed(readSuite(suite, fallbackTime, /*depth=*/0, records)))
      return failure();
  runTime = lastTime;
  return success();
}

LogicalResult fastci::readJUnitXML(unsigned bufferId, DiagnosticEngine &diag,
                                   int64_t fallbackTime,
                                   std::vector<HistoryRecord> &records,
                                   int64_t &runTime, Severity severity) {
  llvm::StringRef text =
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
  std::vector<HistoryRecord> fileRecords;
  runTime = fallbackTime;
  if (failed(JUnitReader(text, diag, severity)
                 .read(fallbackTime, fileRecords, runTime)))
    return failure();
  llvm::append_range(records, std::move(fileRecords));
  return success();
}
