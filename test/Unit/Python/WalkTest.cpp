//===- WalkTest.cpp - Analyzer paths rewritten for speed ------------------===//
//
// Pins the behaviour of the parts of the analyzer that were rewritten for
// speed: the parent test of named lambdas (now from the walk's path rather
// than ts_node_parent), the docstring search (now stopping at the first
// statement), the word-at-a-time UTF-8 check, and the sizes the walk
// records for scheduling.
//
//===----------------------------------------------------------------------===//
#include "FindEntity.h"
#include "fastci/Python/Analyzer.h"
#include "fastci/Python/SourceTree.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::python;

TEST(WalkTest, OnlyASingleTargetNamesALambda) {
  FileSummary s = analyzePythonSource("a = b = lambda: 0\n"
                                      "c = (lambda x: x)\n"
                                      "d: int = lambda: 1\n"
                                      "def f():\n"
                                      "    e = lambda: 2\n"
                                      "    g = h = lambda: 3\n",
                                      "m.py", "m");
  EXPECT_EQ(find(s, "a"), nullptr);
  EXPECT_EQ(find(s, "b"), nullptr);
  EXPECT_NE(find(s, "c"), nullptr);
  EXPECT_NE(find(s, "d"), nullptr);
  EXPECT_NE(find(s, "f.<locals>.e"), nullptr);
  EXPECT_EQ(find(s, "f.<locals>.g"), nullptr);
  EXPECT_EQ(find(s, "f.<locals>.h"), nullptr);
  EXPECT_EQ(s.entities.size(), 4u);
}

TEST(WalkTest, DocstringIsTheFirstStatementAfterComments) {
  auto hashOf = [](llvm::StringRef body) {
    FileSummary s = analyzePythonSource(
        ("def f():\n    # a comment first\n" + body).str(), "m.py", "m");
    return find(s, "f")->hash;
  };
  // Editing the docstring does not count, even after a comment...
  EXPECT_EQ(hashOf("    \"\"\"One.\"\"\"\n    return 1\n"),
            hashOf("    \"\"\"Two.\"\"\"\n    return 1\n"));
  // ...but a string that is not the first statement does.
  EXPECT_NE(hashOf("    x = 1\n    \"\"\"One.\"\"\"\n"),
            hashOf("    x = 1\n    \"\"\"Two.\"\"\"\n"));
}

TEST(WalkTest, InvalidUtf8IsReportedAtTheFirstBadByte) {
  auto warningAt = [](llvm::StringRef source) {
    FileSummary s = analyzePythonSource(source, "m.py", "m");
    for (const FileWarning &warning : s.warnings)
      if (llvm::StringRef(warning.message).contains("not valid UTF-8"))
        return std::make_pair(warning.line, warning.column);
    return std::make_pair(0u, 0u);
  };
  EXPECT_EQ(warningAt("x = 'valid: \xC3\xA9\xE2\x82\xAC'\n"),
            std::make_pair(0u, 0u));
  // After a long ASCII run, after multi-byte characters, a truncated
  // sequence at the very end, and an overlong encoding.
  EXPECT_EQ(warningAt("# a long comment line of ascii\nx = '\xFF'\n"),
            std::make_pair(2u, 6u));
  EXPECT_EQ(warningAt("s = '\xC3\xA9\xC3\xA9' + '\x80'\n"),
            std::make_pair(1u, 15u));
  EXPECT_EQ(warningAt("s = 1 # \xE2\x82"), std::make_pair(1u, 9u));
  EXPECT_EQ(warningAt("s = '\xC0\xAF'\n"), std::make_pair(1u, 6u));
}

TEST(WalkTest, TheWalkRecordsFileSizes) {
  llvm::SmallString<128> root;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("walk-sizes", root));
  auto write = [&](llvm::StringRef name, llvm::StringRef text) {
    llvm::SmallString<128> path(root);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << text;
  };
  write("a.py", "x = 1\n");
  write("b.py", std::string(1000, '#') + "\n");
  llvm::SmallString<128> target(root), link(root);
  llvm::sys::path::append(target, "b.py");
  llvm::sys::path::append(link, "c.py");
  ASSERT_FALSE(llvm::sys::fs::create_link(target, link));

  DiagnosticEngine diag;
  SourceTreeOptions options;
  options.root = std::string(root);
  bool failed = true;
  std::vector<SourceFile> files = collectSourceFiles(options, diag, failed);
  EXPECT_FALSE(failed);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].size, 6u);
  EXPECT_EQ(files[1].size, 1001u);
  // A symbolic link counts with its target's size.
  EXPECT_EQ(files[2].size, 1001u);
  llvm::sys::fs::remove_directories(root);
}
