//===- EvidenceReaderTest.cpp - Reading evidence files --------------------===//
//
// Checks the reader on well-formed FastCI and py-spy input (stack reduction,
// prefix reuse between lines, counts), and that every kind of bad input
// becomes a located problem while the rest of the file is kept.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceReader.h"
#include "TestModule.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::test;

namespace {

class EvidenceReaderTest : public ::testing::Test {
protected:
  EvidenceReaderTest()
      : module(buildTestModule()), index(*module), resolver(*module, index) {}

  EvidenceFile read(llvm::StringRef text, llvm::StringRef pyspyTestId = "",
                    FrameCache *cache = nullptr) {
    EvidenceReadOptions options{
        [&](llvm::StringRef) -> const FrameResolver & { return resolver; },
        "/repo", pyspyTestId};
    options.frameCache = cache;
    return readEvidence(text, options);
  }

  /// Everything reading produced, as text, to compare two reads.
  std::string dump(const EvidenceFile &file) {
    std::string out;
    for (const EvidenceProblem &problem : file.problems)
      out += std::to_string(problem.offset) + ":" +
             std::to_string(problem.line) + ":" +
             std::to_string(problem.column) + ": " + problem.message + "\n";
    for (const ResolvedFrame &frame : file.frames)
      out += "frame " + std::to_string(int(frame.kind)) + " " +
             std::to_string(frame.entity) + " " + frame.name + "\n";
    for (size_t i = 0; i < file.nodes.size(); ++i)
      out += "node " + std::to_string(file.nodes[i].parent) + " " +
             std::to_string(file.nodes[i].frame) + " " +
             std::to_string(file.counts[i]) + "\n";
    for (const std::string &symbol : file.staleSymbols)
      out += "stale " + symbol + "\n";
    out += "lines " + std::to_string(file.lines) + " " +
           std::to_string(file.malformedLines) + " samples " +
           std::to_string(file.samples) + " " +
           std::to_string(file.externalSamples) + " pid " +
           std::to_string(file.header.pid) + "\n";
    return out;
  }

  /// The reduced stacks of \p file with counts, as `a;b;c=N` strings, in
  /// trie order.
  std::vector<std::string> stacks(const EvidenceFile &file) {
    std::vector<std::string> result;
    for (size_t i = 0; i < file.nodes.size(); ++i) {
      if (!file.counts[i])
        continue;
      std::vector<std::string> names;
      for (uint32_t node = i; node != EvidenceFile::kRoot;
           node = file.nodes[node].parent) {
        const ResolvedFrame &frame = file.frames[file.nodes[node].frame];
        names.insert(names.begin(),
                     frame.kind == ResolvedFrame::Kind::Entity
                         ? module->getEntity(frame.entity).symbol.str()
                         : "leaf:" + frame.name);
      }
      std::string line;
      for (const std::string &name : names)
        line += (line.empty() ? "" : ";") + name;
      result.push_back(line + "=" + std::to_string(file.counts[i]));
    }
    return result;
  }

  static std::vector<std::string> messages(const EvidenceFile &file) {
    std::vector<std::string> result;
    for (const EvidenceProblem &problem : file.problems)
      result.push_back(std::to_string(problem.line) + ":" +
                       std::to_string(problem.column) + ": " + problem.message);
    return result;
  }

  std::unique_ptr<Module> module;
  LineIndex index;
  FrameResolver resolver;
};

constexpr llvm::StringLiteral kHeader = "# fastci-evidence: 1\n"
                                        "# test-id: tests/test_a.py::test_x\n"
                                        "# pid: 42\n"
                                        "# rank: 1\n"
                                        "# rate: 50\n"
                                        "# revision: rev2\n"
                                        "# root: /repo\n"
                                        "# complete: false\n";

TEST_F(EvidenceReaderTest, ReadsHeaderAndReducesStacks) {
  std::string text =
      kHeader.str() +
      // The runner above the first repository frame is dropped.
      "/usr/lib/python3.11/site-packages/_pytest/main.py:main:10;"
      "tests/test_a.py:test_x:6;pkg/mod.py:outer:11 5\n"
      // Only the first library frame below a repository frame is kept.
      "/usr/lib/python3.11/site-packages/_pytest/main.py:main:10;"
      "tests/test_a.py:test_x:6;pkg/mod.py:outer:11;"
      "/v/site-packages/torch/distributed/distributed_c10d.py:all_reduce:7;"
      "/v/site-packages/torch/distributed/distributed_c10d.py:_check:9 3\n"
      // A library calling back into the repository.
      "tests/test_a.py:test_x:7;/v/site-packages/torch/nn/module.py:"
      "Module.__call__:1;/repo/pkg/mod.py:outer.%3Clocals%3E.inner:13 2\n"
      // Outside the repository entirely.
      "/usr/lib/python3.11/threading.py:Thread.run:1 4\n";
  EvidenceFile file = read(text);
  EXPECT_FALSE(file.skipped);
  EXPECT_EQ(messages(file), std::vector<std::string>{});
  EXPECT_EQ(file.format, EvidenceFormat::FastCI);
  EXPECT_EQ(file.header.testId, "tests/test_a.py::test_x");
  EXPECT_EQ(file.header.pid, 42);
  EXPECT_EQ(file.header.rank, 1);
  EXPECT_EQ(file.header.rate, 50);
  EXPECT_EQ(file.header.revision, "rev2");
  EXPECT_FALSE(file.header.complete);
  EXPECT_EQ(file.lines, 4u);
  EXPECT_EQ(file.samples, 14u);
  EXPECT_EQ(file.externalSamples, 4u);
  EXPECT_EQ(stacks(file),
            (std::vector<std::string>{
                "tests.test_a.test_x;pkg.mod.outer=5",
                "tests.test_a.test_x;pkg.mod.outer;"
                "leaf:torch.distributed.distributed_c10d.all_reduce=3",
                "tests.test_a.test_x;leaf:torch.nn.module.Module.__call__;"
                "pkg.mod.outer.<locals>.inner=2"}));
}

TEST_F(EvidenceReaderTest, SharedPrefixesGiveTheSameStacksAsFreshReads) {
  // Lines that share prefixes (the sorted order writers produce) and lines
  // that diverge inside a frame must both be read correctly.
  std::string shared = kHeader.str() +
                       "tests/test_a.py:test_x:6;pkg/mod.py:outer:11 1\n"
                       "tests/test_a.py:test_x:6;pkg/mod.py:outer:13 2\n"
                       "tests/test_a.py:test_x:6;pkg/mod.py:outer:13;"
                       "pkg/mod.py:C.m:45 4\n"
                       "tests/test_a.py:test_x:6 8\n";
  EvidenceFile file = read(shared);
  EXPECT_EQ(stacks(file),
            (std::vector<std::string>{"tests.test_a.test_x=8",
                                      "tests.test_a.test_x;pkg.mod.outer=1",
                                      "tests.test_a.test_x;pkg.mod.outer."
                                      "<locals>.inner=2",
                                      "tests.test_a.test_x;pkg.mod.outer."
                                      "<locals>.inner;pkg.mod.C.m=4"}));
}

TEST_F(EvidenceReaderTest, MalformedLinesAreSkippedWithLocations) {
  std::string text = kHeader.str() +
                     "tests/test_a.py:test_x:6\n"          // 9: no count
                     "tests/test_a.py:test_x:6 x1\n"       // 10: bad count
                     "tests/test_a.py:test_x 1\n"          // 11: bad frame
                     "tests/test_a.py:test_x:six 1\n"      // 12: bad line
                     "tests/test_a.py:test_x:6;;a:b:1 1\n" // 13: empty
                     "tests/test_a.py:te\xffst:6 1\n"      // 14: not UTF-8
                     "tests/test_a.py:te\x01st:6 1\n"      // 15: control
                     "tests/test_%zz.py:test_x:6 1\n"      // 16: escape
                     "\n"                                  // 17: empty
                     "# late: header\n"                    // 18
                     "tests/test_a.py:test_x:6 7\n"        // 19: good
                     "tests/test_a.py:test_x:6 12";        // 20: truncated
  EvidenceFile file = read(text);
  EXPECT_FALSE(file.skipped);
  EXPECT_EQ(messages(file),
            (std::vector<std::string>{
                "9:25: expected 'stack count', found no sample count; line "
                "ignored",
                "10:26: sample count 'x1' is not a non-negative integer; line "
                "ignored",
                "11:1: frame 'tests/test_a.py:test_x' is not "
                "'path:qualname:line'; line ignored",
                "12:24: frame line 'six' is not a line number; line ignored",
                "13:26: empty frame; line ignored",
                "14:19: invalid UTF-8; line ignored",
                "15:19: control character in stack line; ignored",
                "16:12: malformed '%' escape in frame; line ignored",
                "17:1: empty line; ignored",
                "18:1: header line after stack lines; ignored",
                "20:28: last line has no newline (truncated file?); ignored"}));
  EXPECT_EQ(file.malformedLines, 11u);
  EXPECT_EQ(stacks(file), (std::vector<std::string>{"tests.test_a.test_x=7"}));
}

TEST_F(EvidenceReaderTest, HeaderProblemsSkipTheFile) {
  auto problemOf = [&](llvm::StringRef text) {
    EvidenceFile file = read(text);
    EXPECT_TRUE(file.skipped);
    return messages(file).empty() ? std::string() : messages(file).front();
  };
  EXPECT_EQ(problemOf("# fastci-evidence: 3\n# test-id: t\na:b:1 1\n"),
            "1:20: evidence format version 3 was written by a newer FastCI "
            "(this reader knows versions 1 to 2); skipped, the test has no "
            "evidence from it");
  EXPECT_EQ(problemOf("# fastci-evidence: 2x\n# test-id: t\na:b:1 1\n"),
            "1:20: unsupported evidence format version '2x' (this reader "
            "knows versions 1 to 2); skipped");
  EXPECT_EQ(problemOf("# fastci-evidence: 1\n# pid: 3\na:b:1 1\n"),
            "1:1: evidence header has no 'test-id'; skipped");
  EXPECT_EQ(problemOf("# some other file\n"),
            "1:1: not a FastCI evidence file: the first line must be "
            "'# fastci-evidence: 2'; skipped");
  EXPECT_EQ(problemOf(""), "1:1: empty evidence file; skipped");
}

TEST_F(EvidenceReaderTest, CompactRecordsResolveToEntities) {
  EvidenceFile file = read("# fastci-evidence: 2\n"
                           "# test-id: t\n"
                           "# coverage: exact\n"
                           "# time: 12.5\n"
                           "# import-samples: 4\n"
                           "@f tests/test_a.py:test_x:6\n"
                           "@f tests/test_a.py:test_x:7\n"
                           "@i tests/test_a.py tests/test_a.py:<module>:0\n"
                           "@m tests/test_a.py\n"
                           "@r configs/a.yaml\n"
                           "tests/test_a.py:test_x:7 2\n");
  EXPECT_FALSE(file.skipped);
  EXPECT_EQ(file.header.version, 2u);
  EXPECT_TRUE(file.header.exactCoverage);
  EXPECT_EQ(file.header.time, 12.5);
  EXPECT_EQ(file.header.importSamples, 4u);
  // Two frames of one function are one entity.
  ASSERT_EQ(file.functions.size(), 1u);
  ASSERT_EQ(file.importFunctions.size(), 1u);
  EXPECT_EQ(file.importFunctions[0].first, file.importFunctions[0].second);
  ASSERT_EQ(file.imports.size(), 1u);
  EXPECT_EQ(file.imports[0], file.importFunctions[0].first);
  EXPECT_EQ(file.reads, (std::vector<std::string>{"configs/a.yaml"}));
  EXPECT_EQ(stacks(file), (std::vector<std::string>{"tests.test_a.test_x=2"}));
}

TEST_F(EvidenceReaderTest, CorruptCompactRecordSkipsTheFile) {
  EvidenceFile file = read("# fastci-evidence: 2\n"
                           "# test-id: t\n"
                           "@f tests/test_a.py:test_x:6\n"
                           "@q later-kind\n");
  EXPECT_TRUE(file.skipped);
  EXPECT_TRUE(file.corrupt);
  EXPECT_EQ(file.header.testId, "t");
}

TEST_F(EvidenceReaderTest, BadHeaderValuesAreIgnored) {
  EvidenceFile file = read("# fastci-evidence: 1\n"
                           "# test-id: t\n"
                           "# pid: many\n"
                           "# rate: -5\n"
                           "# complete: maybe\n"
                           "#nonsense\n");
  EXPECT_FALSE(file.skipped);
  EXPECT_EQ(messages(file),
            (std::vector<std::string>{
                "3:8: header 'pid' is not an integer; ignored",
                "4:9: header 'rate' is not a non-negative number; ignored",
                "5:13: header 'complete' is not 'true' or 'false'; ignored",
                "6:1: header line is not '# key: value'; ignored"}));
}

TEST_F(EvidenceReaderTest, ReadsPySpyRaw) {
  EvidenceFile file =
      read("process 77:\"python -m pytest\";thread (0x7f);"
           "main (/usr/lib/python3.11/site-packages/_pytest/main.py:10);"
           "test_x (/repo/tests/test_a.py:6);outer (/repo/pkg/mod.py:11) 3\n"
           "test_x (/repo/tests/test_a.py:6);"
           "all_reduce "
           "(/v/site-packages/torch/distributed/distributed_c10d.py:7) 2\n"
           "test_x (/repo/tests/test_a.py) 1\n"
           "not a frame 1\n",
           "tests/test_a.py::test_x");
  EXPECT_EQ(file.format, EvidenceFormat::PySpyRaw);
  EXPECT_EQ(file.header.testId, "tests/test_a.py::test_x");
  EXPECT_EQ(file.header.pid, 77);
  EXPECT_EQ(messages(file),
            (std::vector<std::string>{"4:1: frame 'not a frame' is not 'name "
                                      "(file:line)'; line ignored"}));
  EXPECT_EQ(stacks(file),
            (std::vector<std::string>{
                "tests.test_a.test_x;pkg.mod.outer=3",
                "tests.test_a.test_x;"
                "leaf:torch.distributed.distributed_c10d.all_reduce=2",
                // No line: the file's module.
                "tests.test_a=1"}));
}

TEST_F(EvidenceReaderTest, FrameCacheIsSharedAcrossFilesWithoutChangingThem) {
  std::string a = kHeader.str() +
                  "tests/test_a.py:test_x:6;pkg/mod.py:outer:11;"
                  "/v/site-packages/torch/nn/functional.py:linear:7 5\n"
                  "tests/test_a.py:test_x:6;pkg/mod.py:outer:13 2\n"
                  "tests/test_a.py:test_x:6;pkg/mod.py:outer:bad 1\n";
  // Another file using some of the same frames first, in another order.
  std::string b = kHeader.str() +
                  "tests/test_a.py:test_x:7;pkg/mod.py:outer:13 4\n"
                  "tests/test_a.py:test_x:7;pkg/mod.py:C.m:43 1\n"
                  "tests/test_a.py:test_x:7;pkg/mod.py:outer:11 3\n";
  std::string c = "process 77:\"python\";test_x (/repo/tests/test_a.py:6) 1\n";
  std::string freshA = dump(read(a)), freshB = dump(read(b)),
              freshC = dump(read(c, "t"));

  FrameCache cache;
  EXPECT_EQ(dump(read(b, "", &cache)), freshB);
  EXPECT_EQ(dump(read(a, "", &cache)), freshA);
  EXPECT_EQ(dump(read(a, "", &cache)), freshA);
  EXPECT_EQ(dump(read(b, "", &cache)), freshB);
  // py-spy frames are another context; the pid still comes from the cache.
  EXPECT_EQ(dump(read(c, "t", &cache)), freshC);
  EXPECT_EQ(dump(read(c, "t", &cache)), freshC);
  // Each distinct frame text once: 6 FastCI texts (the malformed one is not
  // kept), 2 py-spy texts.
  EXPECT_EQ(cache.size(), 8u);
}

TEST_F(EvidenceReaderTest, InvalidTextAfterASharedPrefixIsFound) {
  // Each second line shares the first's bytes up to the middle of a
  // multi-byte character, which the second line then breaks.
  EvidenceFile file =
      read(kHeader.str() + "pkg/mod.py:outer:11;x/\xC3\xA9.py:f:1 1\n"
                           "pkg/mod.py:outer:11;x/\xC3(.py:f:1 1\n"
                           "pkg/mod.py:outer:11;y/\xE2\x82\xAC.py:f:1 1\n"
                           "pkg/mod.py:outer:11;y/\xE2\x82x.py:f:1 1\n"
                           "pkg/mod.py:outer:11;y/\xE2\x82\xAC.py:f:1 1\n"
                           "pkg/mod.py:outer:11;y/\xE2\x82\xAC.py:f:1\x01 1\n");
  EXPECT_EQ(messages(file),
            (std::vector<std::string>{
                "10:23: invalid UTF-8; line ignored",
                "12:23: invalid UTF-8; line ignored",
                "14:33: control character in stack line; ignored"}));
  EXPECT_EQ(file.lines, 6u);
  EXPECT_EQ(file.malformedLines, 3u);
}

TEST_F(EvidenceReaderTest, CountsAndLineNumbersAreCheckedForRange) {
  std::string text = kHeader.str();
  // CRLF line ends are accepted; a carriage return elsewhere is not.
  text += "pkg/mod.py:outer:11 18446744073709551615\r\n";
  text += "pkg/mod.py:outer:11 18446744073709551616\n";
  text += "pkg/mod.py:outer:0000000011 007\n";
  text += "pkg/mod.py:outer:4294967296 1\n";
  text += "pkg/mod.py:outer:4294967295 1\n";
  text += "pkg/mod.py:outer:11\r 1\n";
  EvidenceFile file = read(text);
  EXPECT_EQ(messages(file),
            (std::vector<std::string>{
                "10:21: sample count '18446744073709551616' is not a "
                "non-negative integer; line ignored",
                "12:18: frame line '4294967296' is not a line number; line "
                "ignored",
                "14:20: control character in stack line; ignored"}));
  EXPECT_EQ(file.samples, 18446744073709551615ull + 7 + 1);
}

TEST_F(EvidenceReaderTest, ProblemsAreCappedPerFile) {
  std::string text = kHeader.str();
  for (int i = 0; i < 30; ++i)
    text += "garbage\n";
  EvidenceReadOptions options{
      [&](llvm::StringRef) -> const FrameResolver & { return resolver; }, "",
      "", /*maxProblems=*/5};
  EvidenceFile file = readEvidence(text, options);
  ASSERT_EQ(file.problems.size(), 6u);
  EXPECT_EQ(file.problems.back().message,
            "25 more problems in this file not shown");
  EXPECT_EQ(file.malformedLines, 30u);
}

} // namespace
