//===- GitIgnoreTest.cpp - gitignore semantics ----------------------------===//
//
// Cases taken from gitignore(5) and git's t3070-wildmatch.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/GitIgnore.h"
#include "fastci/Python/SourceTree.h"
#include "gtest/gtest.h"

using namespace fastci::python;

TEST(GlobTest, Wildmatch) {
  EXPECT_TRUE(matchGlob("foo", "foo"));
  EXPECT_FALSE(matchGlob("foo", "bar"));
  EXPECT_TRUE(matchGlob("*.py", "a.py"));
  EXPECT_FALSE(matchGlob("*.py", "d/a.py"));
  EXPECT_TRUE(matchGlob("**/a.py", "a.py"));
  EXPECT_TRUE(matchGlob("**/a.py", "x/y/a.py"));
  EXPECT_TRUE(matchGlob("x/**", "x/y/z"));
  EXPECT_FALSE(matchGlob("x/**", "x"));
  EXPECT_TRUE(matchGlob("a/**/b", "a/b"));
  EXPECT_TRUE(matchGlob("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(matchGlob("a/*/b", "a/x/y/b"));
  EXPECT_TRUE(matchGlob("fo?", "foo"));
  EXPECT_FALSE(matchGlob("fo?", "fo/"));
  EXPECT_TRUE(matchGlob("[a-c]x", "bx"));
  EXPECT_FALSE(matchGlob("[!a-c]x", "bx"));
  EXPECT_TRUE(matchGlob("[]]", "]"));
  EXPECT_TRUE(matchGlob("[[:digit:]]", "7"));
  EXPECT_TRUE(matchGlob("\\*", "*"));
  EXPECT_FALSE(matchGlob("\\*", "x"));
  EXPECT_FALSE(matchGlob("[abc", "a")); // unterminated class
  EXPECT_TRUE(matchGlob("foo**bar", "foobazbar"));
  EXPECT_FALSE(matchGlob("foo**bar", "foo/bar/bar"));
}

TEST(GlobTest, PathologicalPatternIsFast) {
  std::string text(200, 'a');
  EXPECT_FALSE(matchGlob("*a*a*a*a*a*a*a*a*a*a*a*a*b", text));
  EXPECT_FALSE(matchGlob("**/**/**/**/**/**/**/**/b", "a/a/a/a/a/a/a/a/a/a/c"));
}

TEST(GitIgnoreTest, Rules) {
  GitIgnoreFile file("", "# comment\n"
                         "\n"
                         "*.log\n"
                         "!keep.log\n"
                         "/top.py\n"
                         "out/\n"
                         "docs/*.py\n"
                         "trailing   \n"
                         "\\#hash\n");
  EXPECT_EQ(file.size(), 7u);
  EXPECT_EQ(file.match("a/b.log", false), std::optional<bool>(true));
  EXPECT_EQ(file.match("a/keep.log", false), std::optional<bool>(false));
  EXPECT_EQ(file.match("top.py", false), std::optional<bool>(true));
  EXPECT_EQ(file.match("sub/top.py", false), std::nullopt);
  EXPECT_EQ(file.match("out", true), std::optional<bool>(true));
  EXPECT_EQ(file.match("out", false), std::nullopt);
  EXPECT_EQ(file.match("x/out", true), std::optional<bool>(true));
  EXPECT_EQ(file.match("docs/a.py", false), std::optional<bool>(true));
  EXPECT_EQ(file.match("docs/x/a.py", false), std::nullopt);
  EXPECT_EQ(file.match("trailing", false), std::optional<bool>(true));
  EXPECT_EQ(file.match("#hash", false), std::optional<bool>(true));
}

TEST(GitIgnoreTest, NestedFilesTakePrecedence) {
  GitIgnoreStack stack;
  stack.push(GitIgnoreFile("", "*.gen.py\n"));
  stack.push(GitIgnoreFile("pkg", "!keep.gen.py\n/local.py\n"));
  EXPECT_TRUE(stack.isIgnored("pkg/a.gen.py", false));
  EXPECT_FALSE(stack.isIgnored("pkg/keep.gen.py", false));
  EXPECT_TRUE(stack.isIgnored("pkg/local.py", false));
  EXPECT_FALSE(stack.isIgnored("local.py", false));
  EXPECT_FALSE(stack.isIgnored("pkg/sub/local.py", false));
}

TEST(ModuleNameTest, Layouts) {
  auto noPackages = [](llvm::StringRef) { return false; };
  EXPECT_EQ(computeModuleName("a/b/c.py", noPackages), "a.b.c");
  EXPECT_EQ(computeModuleName("a/__init__.py", noPackages), "a");
  EXPECT_EQ(computeModuleName("src/pkg/mod.py", noPackages), "pkg.mod");
  EXPECT_EQ(computeModuleName("src/pkg/__init__.py", noPackages), "pkg");
  EXPECT_EQ(computeModuleName("setup.py", noPackages), "setup");
  // A `src` that is itself a package is an ordinary package.
  auto srcIsPackage = [](llvm::StringRef dir) { return dir == "lib/src"; };
  EXPECT_EQ(computeModuleName("lib/src/x.py", srcIsPackage), "lib.src.x");
  EXPECT_EQ(computeModuleName("tools/src/y.py", srcIsPackage), "y");
}
