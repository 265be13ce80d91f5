//===- EvidenceMergerTest.cpp - Merging an evidence directory -------------===//
//
// Checks that merging is deterministic whatever the thread count, that runs
// of a test union their samples, and that missing directories fail.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceMerger.h"
#include "TestModule.h"
#include "fastci/IR/Printer.h"
#include "fastci/Pass/Parallel.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::test;

namespace {

class EvidenceMergerTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("evidence", directory));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(directory); }

  void write(llvm::StringRef relative, llvm::StringRef text) {
    llvm::SmallString<128> path(directory);
    llvm::sys::path::append(path, relative);
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << text;
  }

  /// Merges into a fresh test module and prints it.
  std::string mergeAndPrint(unsigned threads, unsigned *warnings = nullptr) {
    setThreadCount(threads);
    auto module = buildTestModule();
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    DiagnosticEngine diag(&errorStream);
    MergeEvidenceOptions options;
    options.directory = directory.str().str();
    EXPECT_TRUE(succeeded(mergeEvidence(*module, options, diag)));
    if (warnings)
      *warnings = diag.getNumWarnings();
    std::string text;
    llvm::raw_string_ostream os(text);
    printModuleText(*module, os);
    setThreadCount(0);
    return text;
  }

  static std::string evidence(llvm::StringRef test, int pid, int rank,
                              llvm::StringRef body) {
    return ("# fastci-evidence: 1\n# test-id: " + test +
            "\n# pid: " + llvm::Twine(pid) + "\n# rank: " + llvm::Twine(rank) +
            "\n# rate: 50\n# revision: rev2\n# root: /repo\n" + body)
        .str();
  }

  llvm::SmallString<128> directory;
};

TEST_F(EvidenceMergerTest, DeterministicWhateverTheThreadCount) {
  for (int i = 0; i < 40; ++i) {
    std::string body;
    for (int line = 0; line < 20; ++line)
      body += "tests/test_a.py:test_x:6;pkg/mod.py:outer:" +
              std::to_string(10 + (i + line) % 20) + " " +
              std::to_string(line + 1) + "\n";
    write("t" + std::to_string(i % 7) + "/" + std::to_string(i) + ".stacks",
          evidence(i % 3 ? "tests/test_a.py::test_x" : "tests/b.py::test_new",
                   100 + i, i % 2, body));
  }
  std::string serial = mergeAndPrint(1);
  EXPECT_EQ(serial, mergeAndPrint(4));
  EXPECT_EQ(serial, mergeAndPrint(16));
  EXPECT_NE(serial.find("tests/b.py::test_new"), std::string::npos);
}

TEST_F(EvidenceMergerTest, RunsOfATestUnionTheirSamples) {
  write("a/1.stacks", evidence("tests/test_a.py::test_x", 1, -1,
                               "tests/test_a.py:test_x:6 3\n"));
  write("a/2.stacks",
        evidence("tests/test_a.py::test_x", 2, -1,
                 "tests/test_a.py:test_x:6 4\n"
                 "tests/test_a.py:test_x:6;pkg/mod.py:outer:11 1\n"));
  setThreadCount(2);
  auto module = buildTestModule();
  DiagnosticEngine diag;
  MergeEvidenceOptions options;
  options.directory = directory.str().str();
  MergeEvidenceStats stats;
  ASSERT_TRUE(succeeded(mergeEvidence(*module, options, diag, &stats)));
  setThreadCount(0);
  ASSERT_EQ(module->getEvidence().size(), 1u);
  const EvidenceRecord &record = module->getEvidence()[0];
  ASSERT_EQ(record.samples.size(), 2u);
  EXPECT_EQ(record.samples[0].count, 7u);
  EXPECT_EQ(record.samples[1].count, 1u);
  EXPECT_EQ(record.pid, 1);
  EXPECT_EQ(stats.files, 2u);
  EXPECT_EQ(stats.samples, 8u);
  EXPECT_EQ(getEvidenceState(module->getTest(0)), EvidenceState::Fresh);
}

TEST_F(EvidenceMergerTest, MissingDirectoryIsAnError) {
  auto module = buildTestModule();
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  DiagnosticEngine diag(&errorStream);
  MergeEvidenceOptions options;
  options.directory = (directory + "/nonexistent").str();
  EXPECT_TRUE(failed(mergeEvidence(*module, options, diag)));
  EXPECT_EQ(diag.getNumErrors(), 1u);
}

TEST_F(EvidenceMergerTest, EmptyDirectoryIsAWarning) {
  unsigned warnings = 0;
  std::string text = mergeAndPrint(2, &warnings);
  EXPECT_EQ(warnings, 1u);
  EXPECT_NE(text.find("missing"), std::string::npos);
}

} // namespace
