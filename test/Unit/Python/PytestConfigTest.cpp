//===- PytestConfigTest.cpp - pytest's ini options and the summary cache --===//
#include "fastci/Python/PytestConfig.h"
#include "fastci/Python/SummaryCache.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::python;

TEST(PytestConfigTest, FnmatchIsPythons) {
  EXPECT_TRUE(pythonFnmatch("test_a.py", "test_*.py"));
  EXPECT_TRUE(pythonFnmatch("a/b/test_a.py", "*test_*.py")); // `*` spans `/`
  EXPECT_FALSE(pythonFnmatch("atest_a.py", "test_*.py"));
  EXPECT_TRUE(pythonFnmatch("x1", "x[0-9]"));
  EXPECT_FALSE(pythonFnmatch("x1", "x[!0-9]"));
  EXPECT_TRUE(pythonFnmatch("x[", "x["));         // unterminated class
  EXPECT_TRUE(pythonFnmatch("{arch}", "{arch}")); // no brace expansion
  EXPECT_TRUE(pythonFnmatch("", "*"));
  EXPECT_FALSE(pythonFnmatch("ab", "a?c"));
}

TEST(PytestConfigTest, DefaultsAndNames) {
  PytestConfig config;
  EXPECT_TRUE(config.isTestFile("tests/test_a.py"));
  EXPECT_TRUE(config.isTestFile("a_test.py"));
  EXPECT_FALSE(config.isTestFile("tests/helpers.py"));
  EXPECT_FALSE(config.isTestFile("tests/__init__.py"));
  // norecursedirs' defaults: `.*`, `build`, ...
  EXPECT_FALSE(config.isTestFile(".hidden/test_a.py"));
  EXPECT_FALSE(config.isTestFile("pkg/build/test_a.py"));
  EXPECT_TRUE(config.isTestClassName("TestX"));
  EXPECT_FALSE(config.isTestClassName("XTest"));
  config.pythonClasses = {"*Suite"};
  EXPECT_TRUE(config.isTestClassName("MySuite"));
  config.pythonFunctions = {"check"};
  EXPECT_TRUE(config.isTestFunctionName("check_x"));
  EXPECT_FALSE(config.isTestFunctionName("test_x"));
}

TEST(PytestConfigTest, TestPathsAreRoots) {
  PytestConfig config;
  config.testPaths = {"tests", "docs/example.py"};
  config.roots = {{"docs/example.py", true}, {"tests", false}};
  EXPECT_TRUE(config.isTestFile("tests/test_a.py"));
  EXPECT_FALSE(config.isTestFile("other/test_a.py"));
  EXPECT_TRUE(config.isTestFile("docs/example.py")); // named explicitly
  // norecursedirs applies below a testpaths entry, not to it.
  config.roots = {{"build", false}};
  EXPECT_TRUE(config.isTestFile("build/test_a.py"));
  EXPECT_FALSE(config.isTestFile("build/build/test_a.py"));
}

TEST(PytestConfigTest, ReadsTheFirstFilePytestWould) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("pytest-config", dir));
  auto write = [&](const char *name, llvm::StringRef text) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << text;
  };
  write("setup.cfg", "[tool:pytest]\npython_files = cfg_*.py\n");
  write("tox.ini", "[pytest]\npython_files = tox_*.py\n    more_*.py\n");
  std::vector<FileWarning> warnings;
  PytestConfig config = readPytestConfig(dir, warnings);
  EXPECT_EQ(config.source, "tox.ini");
  EXPECT_EQ(config.pythonFiles,
            (std::vector<std::string>{"tox_*.py", "more_*.py"}));
  write("pyproject.toml",
        "[tool.pytest.ini_options]\npython_files = [\"a.py\", 'b.py']\n"
        "python_classes = \"Check Test\"\n");
  config = readPytestConfig(dir, warnings);
  EXPECT_EQ(config.source, "pyproject.toml");
  EXPECT_EQ(config.pythonFiles, (std::vector<std::string>{"a.py", "b.py"}));
  EXPECT_EQ(config.pythonClasses, (std::vector<std::string>{"Check", "Test"}));
  write("pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = [\"t\"\n");
  config = readPytestConfig(dir, warnings);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(warnings.empty() || warnings[0].line == 2);
  llvm::sys::fs::remove_directories(dir);
}

TEST(SummaryCacheTest, RoundTripsAndDropsDamage) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("summary-cache", dir));
  std::vector<SummaryCacheEntry> entries = {{"a.py", "a", 3, 100, 7, "AAA"},
                                            {"b/c.py", "b.c", 5, 200, 9, "BB"}};
  ASSERT_FALSE(llvm::errorToBool(SummaryCache::write(dir, 42, entries)));
  SummaryCache cache = SummaryCache::open(dir, 42);
  ASSERT_EQ(cache.size(), 2u);
  const SummaryCacheEntry *entry = cache.lookup("b/c.py");
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->moduleName, "b.c");
  EXPECT_EQ(entry->size, 5u);
  EXPECT_EQ(entry->mtimeNs, 200);
  EXPECT_EQ(entry->contentHash, 9u);
  EXPECT_EQ(entry->summary, "BB");
  // Times long before the write are trusted, one just before it is not.
  EXPECT_TRUE(cache.isStatTrusted(*entry));
  // Another key (another pytest configuration) reads as empty.
  EXPECT_EQ(SummaryCache::open(dir, 43).size(), 0u);
  // One flipped byte drops the whole file.
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "summaries.fcsc");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buffer));
  std::string bytes = (*buffer)->getBuffer().str();
  buffer->reset();
  bytes[bytes.size() / 2] ^= 1;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << bytes;
  }
  EXPECT_EQ(SummaryCache::open(dir, 42).size(), 0u);
  llvm::sys::fs::remove_directories(dir);
}
