//===- GitIgnoreTest.cpp - gitignore semantics ----------------------------===//
//
// Cases taken from gitignore(5) and git's t3070-wildmatch; the exclude
// files outside the tree follow gitignore(5) and git-config(1).
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/GitIgnore.h"
#include "fastci/Python/SourceTree.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
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

TEST(GitIgnoreTest, AncestorFilesMatchFromTheirDirectory) {
  // A file of the work tree's top seen from root `sub/dir`.
  GitIgnoreFile top = GitIgnoreFile::forAncestor("sub/dir", "/sub/dir/a.py\n"
                                                            "/b.py\n"
                                                            "c.py\n");
  EXPECT_EQ(top.match("a.py", false), std::optional<bool>(true));
  EXPECT_EQ(top.match("b.py", false), std::nullopt);
  EXPECT_EQ(top.match("x/c.py", false), std::optional<bool>(true));
  GitIgnoreFile atRoot = GitIgnoreFile::forAncestor("", "/b.py\n");
  EXPECT_EQ(atRoot.match("b.py", false), std::optional<bool>(true));
}

TEST(GitIgnoreTest, ExcludesFileSetting) {
  EXPECT_EQ(findExcludesFileSetting("[core]\n\texcludesFile = ~/.gi\n", "/h"),
            std::optional<std::string>("/h/.gi"));
  // Keys and sections are case-insensitive, the last setting wins, quotes
  // and comments are handled, other sections are not core.
  EXPECT_EQ(findExcludesFileSetting("[Core]\nEXCLUDESFILE=/a\n"
                                    "[core \"x\"]\nexcludesfile=/b\n"
                                    "[core]\n  excludesfile = \"/c d\" # x\n",
                                    "/h"),
            std::optional<std::string>("/c d"));
  EXPECT_EQ(findExcludesFileSetting("[user]\nexcludesfile=/a\n", "/h"),
            std::nullopt);
}

TEST(GitIgnoreTest, RepositoryIgnores) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("gitignore-test", dir));
  auto write = [&](llvm::StringRef relative, llvm::StringRef text) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, relative);
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << text;
  };
  write(".git/info/exclude", "info.py\n");
  write(".git/config", "[core]\n\texcludesfile = global-ignore\n");
  write("global-ignore", "global.py\n!info.py\n");
  write(".gitignore", "/pkg/top.py\n");
  write("pkg/.keep", "");
  write("home/.config/git/ignore", "never-read.py\n");

  GitIgnoreStack stack =
      loadRepositoryIgnores(dir, (dir + "/home").str(), std::string());
  EXPECT_TRUE(stack.isIgnored("info.py", false)); // info/exclude wins
  EXPECT_TRUE(stack.isIgnored("global.py", false));
  EXPECT_FALSE(stack.isIgnored("never-read.py", false));
  // The root's own .gitignore is the walk's business, not loaded here.
  EXPECT_FALSE(stack.isIgnored("pkg/top.py", false));

  // From a root below the top, the top's .gitignore applies too.
  GitIgnoreStack sub =
      loadRepositoryIgnores((dir + "/pkg").str(), (dir + "/home").str(), "");
  EXPECT_TRUE(sub.isIgnored("top.py", false));
  EXPECT_TRUE(sub.isIgnored("global.py", false));
  llvm::sys::fs::remove_directories(dir);
}
