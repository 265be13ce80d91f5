//===- RequirementsTest.cpp - Names in pip requirements files -------------===//
//
// What each kind of requirements line names: PEP 508 names with extras,
// specifiers, markers and direct references; options, includes, URLs,
// paths and archive names that name no distribution; continuation lines;
// PEP 503 normalization and the conventional module names.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/Requirements.h"
#include "gtest/gtest.h"

using namespace fastci;
using Kind = RequirementLine::Kind;

namespace {

RequirementLine locate(llvm::StringRef text, uint32_t line = 1) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  return locateRequirementLine(lines, line);
}

TEST(RequirementsTest, NamesDistributions) {
  for (llvm::StringRef text :
       {"numpy", "numpy==1.24", "NumPy >= 1.2, <2", "numpy[extra1,x]>=1",
        "numpy ; python_version < '3.9'", "numpy @ https://x/numpy.whl",
        "numpy  # pinned", "numpy (>=1.0)", "numpy~=1.2 --hash=sha256:ab"}) {
    RequirementLine what = locate(text);
    EXPECT_EQ(what.kind, Kind::Requirement) << text.str();
    EXPECT_EQ(what.name, "numpy") << text.str();
  }
  EXPECT_EQ(locate("Scikit_Learn.Extra>1").name, "scikit-learn-extra");
}

TEST(RequirementsTest, UnknownLines) {
  for (llvm::StringRef text :
       {"-r base.txt", "--requirement base.txt", "-c constraints.txt", "-e .",
        "--index-url https://x", "git+https://github.com/o/r.git",
        "./local/pkg", "/wheels/numpy-1.0-py3-none-any.whl",
        "numpy-1.0-py3-none-any.whl", "pkg/sub"})
    EXPECT_EQ(locate(text).kind, Kind::Unknown) << text.str();
}

TEST(RequirementsTest, InsignificantLines) {
  EXPECT_EQ(locate("").kind, Kind::Insignificant);
  EXPECT_EQ(locate("   # a comment").kind, Kind::Insignificant);
  EXPECT_EQ(locate("x", 5).kind, Kind::Insignificant);
}

TEST(RequirementsTest, ContinuationLines) {
  llvm::StringRef text = "torch==2.0 \\\n    --hash=sha256:aa \\\n"
                         "    --hash=sha256:bb\npytest";
  for (uint32_t line : {1u, 2u, 3u})
    EXPECT_EQ(locate(text, line).name, "torch") << line;
  EXPECT_EQ(locate(text, 4).name, "pytest");
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  EXPECT_EQ(getRequiredDistributions(lines),
            (std::vector<std::string>{"torch", "pytest"}));
}

TEST(RequirementsTest, ConventionalModuleNames) {
  EXPECT_EQ(getConventionalModuleNames("scikit-learn"),
            (std::vector<std::string>{"scikit-learn", "sklearn"}));
  EXPECT_EQ(getConventionalModuleNames("python-dateutil"),
            (std::vector<std::string>{"python-dateutil", "dateutil"}));
  EXPECT_EQ(getConventionalModuleNames("pyyaml"),
            (std::vector<std::string>{"pyyaml", "yaml"}));
  EXPECT_EQ(getConventionalModuleNames("torch"),
            (std::vector<std::string>{"torch"}));
}

} // namespace
