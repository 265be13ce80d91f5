//===- ConfigSectionsTest.cpp - Where a line of a build file sits ---------===//
//
// The Makefile reading of ConfigSections: rules and their recipes,
// assignments of every operator, target-specific variables, continuation
// lines, define blocks, conditionals, and lines of no section or key; the
// INI/TOML paths of keys outside every section; file names to formats.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ConfigSections.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

std::vector<ConfigLine> locateAll(llvm::StringRef text, ConfigFormat format) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.consume_back("\n"); // the last line's end starts no line
  text.split(lines, '\n');
  std::vector<ConfigLine> found;
  for (uint32_t line = 1; line <= lines.size(); ++line)
    found.push_back(locateConfigLine(lines, line, format));
  return found;
}

/// getPath() of each line, "-" for an insignificant one.
std::vector<std::string> paths(llvm::StringRef text,
                               ConfigFormat format = ConfigFormat::Makefile) {
  std::vector<std::string> out;
  for (const ConfigLine &where : locateAll(text, format))
    out.push_back(where.insignificant ? "-" : where.getPath());
  return out;
}

using Paths = std::vector<std::string>;

TEST(ConfigSectionsTest, RulesOwnTheirRecipes) {
  EXPECT_EQ(paths(".PHONY: a b\n"
                  "quality: lint\n"
                  "\tblack .\n"
                  "\n"
                  "\t# a shell comment\n"
                  "# a make comment\n"
                  "\tflake8 .\n"
                  "a b: c\n"
                  "\tx\n"),
            (Paths{".PHONY", "quality", "quality", "-", "-", "-", "quality",
                   "a b", "a b"}));
}

TEST(ConfigSectionsTest, AssignmentsAreKeysOfNoSection) {
  EXPECT_EQ(paths("A = 1\nB := 2\nC ::= 3\nD ?= 4\nE += 5\nF != echo\n"
                  "export G = 7\noverride H := 8\nI=a:b\n"),
            (Paths{"A", "B", "C", "D", "E", "F", "G", "H", "I"}));
  // An assignment ends the rule above it: a recipe line after it is make's
  // business, no target's.
  EXPECT_EQ(paths("t:\n\tx\nV = 1\n\ty\n"), (Paths{"t", "t", "V", ""}));
  // `target: VAR = x` sets a variable for the target: the target's line.
  EXPECT_EQ(paths("lint: FLAGS = -x\n"), (Paths{"lint"}));
}

TEST(ConfigSectionsTest, ContinuationsAndDefines) {
  EXPECT_EQ(paths("test:\n\tpytest \\\n\t--x \\\n\t--y\nV = a \\\n  b\n"
                  "define BODY\nline\nendef\nstyle:\n"),
            (Paths{"test", "test", "test", "test", "V", "V", "BODY", "BODY",
                   "BODY", "style"}));
  // An even number of backslashes escapes itself: no continuation.
  EXPECT_EQ(paths("V = a\\\\\nW = b\n"), (Paths{"V", "W"}));
}

TEST(ConfigSectionsTest, DirectivesBelongToNothing) {
  // Conditionals keep the recipe going; include and others end it.
  EXPECT_EQ(paths("t:\nifeq ($(X),1)\n\ta\nelse\n\tb\nendif\ninclude x.mk\n"
                  "\tc\n$(eval $(call f))\n"),
            (Paths{"t", "", "t", "", "t", "", "", "", ""}));
  llvm::SmallVector<llvm::StringRef> lines = {"include x.mk"};
  ConfigLine include = locateConfigLine(lines, 1, ConfigFormat::Makefile);
  llvm::GlobPattern any = llvm::cantFail(llvm::GlobPattern::create("*"));
  EXPECT_FALSE(matchConfigSection(any, include));
}

TEST(ConfigSectionsTest, IniKeysOutsideSections) {
  EXPECT_EQ(paths("top = 1\n[s]\nk = 2\n  more\n", ConfigFormat::IniToml),
            (Paths{"top", "s", "s/k", "s/k"}));
}

TEST(ConfigSectionsTest, FormatsByName) {
  EXPECT_EQ(getConfigFormat("Makefile"), ConfigFormat::Makefile);
  EXPECT_EQ(getConfigFormat("sub/GNUmakefile"), ConfigFormat::Makefile);
  EXPECT_EQ(getConfigFormat("rules/lint.mk"), ConfigFormat::Makefile);
  EXPECT_EQ(getConfigFormat("setup.cfg"), ConfigFormat::IniToml);
  EXPECT_EQ(getConfigFormat("Makefile.am"), ConfigFormat::IniToml);
}

TEST(ConfigSectionsTest, ToolTablesOfToolsNoTestRuns) {
  std::vector<llvm::StringRef> lines = {
      "[project]",
      "requires = [\"not-this\"]",
      "[build-system]",
      "requires = [\"hatchling>=1.5\", 'setuptools_scm[toml] ; "
      "python_version>\"3\"',",
      "    \"poetry-core\",  # the backend",
      "]",
      "[tool.black]"};
  std::vector<std::string> build = getBuildRequirements(lines);
  EXPECT_EQ(build, (std::vector<std::string>{"hatchling", "setuptools-scm",
                                             "poetry-core"}));
  EXPECT_TRUE(isOtherToolTable("tool.typos.default", build));
  EXPECT_TRUE(isOtherToolTable("tool.ruff", build));
  EXPECT_FALSE(isOtherToolTable("tool.pytest.ini_options", build));
  EXPECT_FALSE(isOtherToolTable("tool.hatch.build.targets.wheel", build));
  EXPECT_FALSE(isOtherToolTable("tool.setuptools_scm", build));
  EXPECT_FALSE(isOtherToolTable("tool.poetry.dependencies", build));
  EXPECT_FALSE(isOtherToolTable("project", build));
  EXPECT_FALSE(isOtherToolTable("build-system", build));
}

} // namespace
