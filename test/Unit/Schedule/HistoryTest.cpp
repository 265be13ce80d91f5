//===- HistoryTest.cpp - History readers, matching and merging ------------===//
//
// The readers on well-formed and broken buffers (each error at its line and
// column), JUnit name matching, merging with deduplication, and costs.
//
//===----------------------------------------------------------------------===//
#include "fastci/History/History.h"
#include "fastci/History/CSV.h"
#include "fastci/History/HistoryReaders.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

/// A diagnostic engine writing to a string, with one buffer added.
struct Reader {
  std::string output;
  llvm::raw_string_ostream os{output};
  DiagnosticEngine diag{&os};
  unsigned add(llvm::StringRef text, llvm::StringRef name = "in") {
    return diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name));
  }
};

TEST(HistoryTest, CSVQuotingAndLineEnds) {
  Reader reader;
  std::vector<CSVRow> rows;
  unsigned id = reader.add("a,\"b,\"\"c\"\"\"\r\n\r\n\"x\ny\",\n");
  ASSERT_TRUE(succeeded(parseCSV(id, reader.diag, rows)));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fields[1].value, "b,\"c\"");
  EXPECT_EQ(rows[1].fields[0].value, "x\ny");
  EXPECT_EQ(rows[1].fields[1].value, "");
}

TEST(HistoryTest, CSVErrorsAreLocated) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"a,b\n\"c,d\n", "in:2:1: error: unterminated quoted CSV field"},
      {"a,b\n\"c\"x,d\n", "in:2:4: error: expected ',' or a line end after a "
                          "quoted field"},
      {"a,b\nc\n", "in:2:1: error: CSV record has 1 fields, expected 2"},
      {"a,b\nc\"d,e\n", "in:2:2: error: quote inside an unquoted CSV field"},
  };
  for (const Case &c : cases) {
    Reader reader;
    std::vector<CSVRow> rows;
    EXPECT_TRUE(failed(parseCSV(reader.add(c.text), reader.diag, rows)));
    EXPECT_EQ(llvm::StringRef(reader.output).split('\n').first, c.message);
  }
}

TEST(HistoryTest, ISO8601) {
  EXPECT_EQ(parseISO8601("1970-01-01T00:00:00"), 0);
  EXPECT_EQ(parseISO8601("2024-03-01T12:00:00.123456"), 1709294400);
  EXPECT_EQ(parseISO8601("2024-03-01T13:30:00+01:30"), 1709294400);
  EXPECT_EQ(parseISO8601("2024-03-01 12:00:00Z"), 1709294400);
  EXPECT_FALSE(parseISO8601("2024-13-01T00:00:00"));
  EXPECT_FALSE(parseISO8601("yesterday"));
}

TEST(HistoryTest, JUnitNamesMatchNodeIds) {
  Module module;
  module.addTest("tests/unit/test_attn.py::TestAttn::test_fwd[bf16]");
  module.addTest("tests/test_top.py::test_a");
  module.addTest("other/test_top.py::test_a");
  TestMatcher matcher(module);
  HistoryRecord record;
  record.junitClassName = "tests.unit.test_attn.TestAttn";
  record.junitName = "test_fwd[bf16]";
  EXPECT_EQ(matcher.match(record), 0u);
  // A report written from tests/ drops the prefix: suffix match.
  record.junitClassName = "unit.test_attn.TestAttn";
  EXPECT_EQ(matcher.match(record), 0u);
  // test_top.py::test_a is a suffix of two tests: ambiguous, no match.
  record.junitClassName = "test_top";
  record.junitName = "test_a";
  EXPECT_EQ(matcher.match(record), kNoTest);
  EXPECT_EQ(matcher.lookup("tests/test_top.py::test_a"), 1u);
}

TEST(HistoryTest, MergeSortsAndDeduplicates) {
  Module module;
  TestId t = module.addTest("t");
  std::vector<HistoryRecord> records(4);
  records[0] = {"t", "", "", "r2", 20, OutcomeKind::Fail, 3, 2, {}};
  records[1] = {"t", "", "", "r1", 10, OutcomeKind::Pass, 5, std::nullopt, {}};
  records[2] = {"t", "", "", "r2", 20, OutcomeKind::Fail, 3.1, 4, {}};
  records[3] = {"gone", "", "", "r1", 10, OutcomeKind::Pass, 1, {}, {}};
  HistoryMergeStats stats = mergeHistory(module, records);
  EXPECT_EQ(stats.merged, 2u);
  EXPECT_EQ(stats.duplicates, 1u);
  EXPECT_EQ(stats.unknownTests, 1u);
  EXPECT_EQ(stats.unknownNames, (std::vector<std::string>{"gone"}));
  ASSERT_EQ(module.getTest(t).history.size(), 2u);
  EXPECT_EQ(module.getTest(t).history[0].revision, "r1");
  EXPECT_EQ(stats.observedGpus[t], 4);
}

TEST(HistoryTest, MeasuredCostIsTheRecentMedian) {
  std::vector<Outcome> history = {{"", 0, OutcomeKind::Pass, 100},
                                  {"", 1, OutcomeKind::Pass, 10},
                                  {"", 2, OutcomeKind::Skip, 0},
                                  {"", 3, OutcomeKind::Fail, 30},
                                  {"", 4, OutcomeKind::Pass, 20}};
  // The 3 most recent timed runs: 20, 30, 10 → median 20.
  std::optional<MeasuredCost> cost = measureCost(history, 3, 2);
  ASSERT_TRUE(cost);
  EXPECT_EQ(cost->cost.seconds, 20);
  EXPECT_EQ(cost->cost.gpuSeconds, 40);
  EXPECT_EQ(cost->runs, 3u);
  // Four runs: 10, 20, 30, 100 → (20 + 30) / 2.
  EXPECT_EQ(measureCost(history, 10, 1)->cost.seconds, 25);
  EXPECT_FALSE(measureCost({}, 3, 1));
}

TEST(HistoryTest, JUnitReport) {
  Reader reader;
  unsigned id = reader.add(R"(<?xml version="1.0"?>
<testsuites><testsuite name="pytest" timestamp="1970-01-01T00:01:40">
<properties><property name="revision" value="abc"/></properties>
<testcase classname="tests.test_a" name="test_x" time="1.5"/>
<testcase classname="tests.test_a" name="test_y" time="2"><failure message="boom"/></testcase>
<testcase classname="tests.test_a" name="test_z" time="0"><skipped/></testcase>
</testsuite></testsuites>)");
  std::vector<HistoryRecord> records;
  int64_t runTime = 0;
  ASSERT_TRUE(succeeded(readJUnitXML(id, reader.diag, 7, records, runTime)));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(runTime, 100);
  EXPECT_EQ(records[0].revision, "abc");
  EXPECT_EQ(records[0].duration, 1.5);
  EXPECT_EQ(records[1].kind, OutcomeKind::Fail);
  EXPECT_EQ(records[2].kind, OutcomeKind::Skip);
}

TEST(HistoryTest, BrokenJUnitIsLocated) {
  Reader reader;
  unsigned id = reader.add(
      "<testsuite>\n  <testcase name=\"a\">\n</testsuite>\n", "bad.xml");
  std::vector<HistoryRecord> records;
  int64_t runTime;
  EXPECT_TRUE(failed(
      readJUnitXML(id, reader.diag, 0, records, runTime, Severity::Warning)));
  EXPECT_TRUE(records.empty());
  EXPECT_EQ(llvm::StringRef(reader.output).split('\n').first,
            "bad.xml:3:3: warning: malformed XML: Start-end tags mismatch");
}

TEST(HistoryTest, ResultsJSON) {
  Reader reader;
  unsigned id = reader.add(R"({"results": [
  {"test": "t", "outcome": "failed", "timestamp": 5, "duration": 2, "gpus": 2},
  {"test": "t", "outcome": "pass", "timestamp": "1970-01-01T00:00:09Z",
   "revision": "r"}
]})");
  std::vector<HistoryRecord> records;
  ASSERT_TRUE(succeeded(readResultsJSON(id, reader.diag, records)));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, OutcomeKind::Fail);
  EXPECT_EQ(records[0].gpus, 2);
  EXPECT_EQ(records[1].time, 9);
  EXPECT_EQ(reader.diag.getLineAndColumn(records[1].loc),
            std::make_pair(3u, 3u));
}

TEST(HistoryTest, ResultsJSONErrorsAreLocated) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"[\n  {\"test\": \"t\",\n", "in:3:1: error: malformed JSON: "},
      {"[{\"test\": \"t\", \"outcome\": \"pass\", \"timestamp\": 1},\n"
       " {\"test\": \"t\", \"outcome\": \"meh\", \"timestamp\": 1}]",
       "in:2:2: error: unknown outcome 'meh' (expected pass, fail, error or "
       "skip)"},
      {"[{\"test\": \"t\", \"outcome\": \"pass\"}]",
       "in:1:2: error: result has no 'timestamp'"},
      {"{\"runs\": []}", "in:1:1: error: expected an array of results or an "
                         "object with a \"results\" array"},
  };
  for (const Case &c : cases) {
    Reader reader;
    std::vector<HistoryRecord> records;
    EXPECT_TRUE(
        failed(readResultsJSON(reader.add(c.text), reader.diag, records)));
    EXPECT_TRUE(llvm::StringRef(reader.output).starts_with(c.message))
        << reader.output;
    EXPECT_TRUE(records.empty());
  }
}

TEST(HistoryTest, ResultsCSV) {
  Reader reader;
  unsigned id = reader.add("Outcome,test,timestamp,extra,gpus\r\n"
                           "pass,\"a::b[1,2]\",3,x,\r\n"
                           "skip,c,4,y,8\r\n");
  std::vector<HistoryRecord> records;
  ASSERT_TRUE(succeeded(readResultsCSV(id, reader.diag, records)));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].test, "a::b[1,2]");
  EXPECT_FALSE(records[0].gpus);
  EXPECT_EQ(records[1].gpus, 8);

  Reader bad;
  EXPECT_TRUE(failed(
      readResultsCSV(bad.add("test,outcome\nx,pass\n"), bad.diag, records)));
  EXPECT_EQ(llvm::StringRef(bad.output).split('\n').first,
            "in:1:1: error: CSV header has no 'timestamp' column");
}

} // namespace
