//===- PassPipelineParserTest.cpp - Textual pipelines ---------------------===//
//
// Parsing pipelines against a registry of test passes: round trips, named
// pipelines, and that a pipeline with an error adds nothing.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Passes.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {
class PipelineTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { registerAllPasses(); }

  /// Parses \p text into pm; returns the diagnostics.
  std::string parse(llvm::StringRef text) {
    std::string output;
    llvm::raw_string_ostream os(output);
    DiagnosticEngine diag(&os);
    ok = succeeded(parsePassPipeline(text, pm, diag));
    return output;
  }
  std::string print() {
    std::string text;
    llvm::raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    return text;
  }

  PassManager pm;
  bool ok = false;
};

TEST_F(PipelineTest, EmptyPipeline) {
  parse("  ");
  EXPECT_TRUE(ok);
  EXPECT_EQ(pm.size(), 0u);
}

TEST_F(PipelineTest, PrintsEveryOptionAndParsesBack) {
  std::string errors =
      parse("test-noop , test-options{count=2 files={a.py,b.py}},test-fail");
  ASSERT_TRUE(ok) << errors;
  std::string printed = print();
  EXPECT_EQ(printed, "test-noop{preserve=false},test-options{count=2,ratio=0.5,"
                     "flag=false,label=none,files={a.py,b.py},sizes={},"
                     "policy=greedy},test-fail{diagnose=true,message=\"test-"
                     "fail was asked to fail\"}");
  PassManager other;
  std::string output;
  llvm::raw_string_ostream os(output);
  DiagnosticEngine diag(&os);
  ASSERT_TRUE(succeeded(parsePassPipeline(printed, other, diag))) << output;
  std::string reprinted;
  llvm::raw_string_ostream reprintStream(reprinted);
  other.printAsTextualPipeline(reprintStream);
  EXPECT_EQ(reprinted, printed);
}

TEST_F(PipelineTest, NamedPipelineExpands) {
  std::string errors = parse("test-pipeline{rounds=3}");
  ASSERT_TRUE(ok) << errors;
  EXPECT_EQ(print(), "test-parallel-annotate{rounds=3,jobs=0,warn-tag=\"\"},"
                     "test-noop{preserve=false}");
}

TEST_F(PipelineTest, ErrorsAddNothing) {
  std::string errors = parse("test-noop,test-options{count=x},tset-noop");
  EXPECT_FALSE(ok);
  EXPECT_EQ(pm.size(), 0u);
  // Both problems are reported, each at its column.
  EXPECT_NE(errors.find("<pass-pipeline>:1:30: error: invalid value 'x'"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("<pass-pipeline>:1:33: error: unknown pass or "
                        "pipeline 'tset-noop'; did you mean 'test-noop'?"),
            std::string::npos)
      << errors;
}

TEST_F(PipelineTest, SyntaxErrors) {
  EXPECT_NE(parse("test-noop test-fail")
                .find("1:11: error: expected ',' or end of pipeline after pass "
                      "'test-noop', found 't'"),
            std::string::npos);
  EXPECT_NE(parse("test-noop,")
                .find("1:11: error: expected a pass or "
                      "pipeline name, found end of pipeline"),
            std::string::npos);
  EXPECT_NE(parse("test-noop{preserve")
                .find("1:10: error: unterminated options of 'test-noop'"),
            std::string::npos);
  EXPECT_NE(parse("test-noop{bogus=1}")
                .find("error: pass 'test-noop' has no option 'bogus'"),
            std::string::npos);
  EXPECT_NE(parse("test-break-ir{x=1}")
                .find("error: pass 'test-break-ir' has no options"),
            std::string::npos);
}
} // namespace
