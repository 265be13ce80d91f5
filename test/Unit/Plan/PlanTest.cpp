//===- PlanTest.cpp - Unit tests of the plan model and writers ------------===//
//
// Command rendering and shell quoting are where a plan can silently run the
// wrong thing, so they are tested here case by case (round-tripping through
// a real shell in the lit tests); buildPlan()'s ordering and cost figures on
// modules built in code.
//
//===----------------------------------------------------------------------===//
#include "fastci/Plan/Plan.h"
#include "fastci/IR/Module.h"
#include "fastci/Plan/PlanWriters.h"
#include "fastci/Support/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

std::vector<std::string> render(llvm::StringRef tmpl,
                                std::vector<std::string> args = {},
                                std::string *error = nullptr) {
  std::vector<std::string> argv;
  std::optional<std::string> problem =
      renderCommand(tmpl, "py", "4", args, argv);
  if (error)
    *error = problem.value_or("");
  else
    EXPECT_FALSE(problem) << *problem;
  return argv;
}

TEST(RenderCommand, ExpandsTheImportedConfig) {
  std::vector<std::string> argv;
  EXPECT_FALSE(
      renderCommand("bash run_ci_test.sh TRAINING_PARAMS_PATH={config}", "py",
                    "8", {}, argv, "cases/t/model_config.yaml"));
  EXPECT_EQ(argv, (std::vector<std::string>{
                      "bash", "run_ci_test.sh",
                      "TRAINING_PARAMS_PATH=cases/t/model_config.yaml"}));
}

TEST(RenderCommand, ExpandsPlaceholders) {
  EXPECT_EQ(render("{python} -m launch --nproc {nproc} -- {args}",
                   {"--lr", "0.1", "--name", "a b"}),
            (std::vector<std::string>{"py", "-m", "launch", "--nproc", "4",
                                      "--", "--lr", "0.1", "--name", "a b"}));
}

TEST(RenderCommand, SplitsLikeAShellWithoutExpanding) {
  EXPECT_EQ(
      render(R"(run "a b" 'c "d"' e\ f $HOME)"),
      (std::vector<std::string>{"run", "a b", "c \"d\"", "e f", "$HOME"}));
  EXPECT_EQ(render(R"(run "say \"hi\"")"),
            (std::vector<std::string>{"run", R"(say \"hi\")"}));
  EXPECT_EQ(render("run --x={nproc}x {{literal}}"),
            (std::vector<std::string>{"run", "--x=4x", "{literal}"}));
  // {args} inside a word joins the flags with spaces.
  EXPECT_EQ(render("sh -c \"train {args}\"", {"--a", "1"}),
            (std::vector<std::string>{"sh", "-c", "train --a 1"}));
}

TEST(RenderCommand, RejectsBadTemplates) {
  std::string error;
  render("run 'open", {}, &error);
  EXPECT_EQ(error, "unterminated single quote in command template");
  render("run \"open", {}, &error);
  EXPECT_EQ(error, "unterminated double quote in command template");
  render("run {nope}", {}, &error);
  EXPECT_EQ(error, "unknown placeholder '{nope}' in command template "
                   "(expected {python}, {nproc}, {args} or {config})");
  render("run {python", {}, &error);
  EXPECT_EQ(error, "unmatched '{' in command template");
  render("run }", {}, &error);
  EXPECT_EQ(error, "unmatched '}' in command template");
  render("   ", {}, &error);
  EXPECT_EQ(error, "empty command template");
}

TEST(ShellQuote, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(shellQuote("tests/a.py::test_x"), "tests/a.py::test_x");
  EXPECT_EQ(shellQuote("--lr=0.1"), "--lr=0.1");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_EQ(shellQuote("a b"), "'a b'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(shellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(shellQuote("t[1]"), "'t[1]'");
}

TEST(PlanFormat, ParsesEveryName) {
  for (llvm::StringRef name :
       {"json", "pytest", "github-matrix", "gitlab", "shell"})
    EXPECT_TRUE(parsePlanFormat(name)) << name.str();
  EXPECT_FALSE(parsePlanFormat("yaml"));
  EXPECT_FALSE(parsePlanFormat(""));
}

struct PlanFixture : ::testing::Test {
  Module module;
  std::string diagnostics;
  llvm::raw_string_ostream os{diagnostics};
  DiagnosticEngine diag{&os};

  fastci::Test &add(llvm::StringRef name, int64_t gpus, double seconds) {
    fastci::Test &test = module.getTest(module.addTest(name));
    test.cost = {gpus, seconds, double(gpus) * seconds};
    return test;
  }

  Plan build(bool observe = false) {
    PlanOptions options;
    options.observe = observe;
    std::optional<Plan> plan = buildPlan(module, options, diag);
    EXPECT_TRUE(plan) << diagnostics;
    return plan ? std::move(*plan) : Plan();
  }

  static std::vector<std::string> names(const Plan &plan) {
    std::vector<std::string> result;
    for (const PlannedTest &test : plan.tests)
      result.push_back(test.name);
    return result;
  }
};

TEST_F(PlanFixture, OrdersByRankThenRiskThenName) {
  add("unranked-low", 0, 1).attrs.set("risk", Attribute::getFloat(0.1));
  add("unranked-b", 0, 1).attrs.set("risk", Attribute::getFloat(0.9));
  add("unranked-a", 0, 1).attrs.set("risk", Attribute::getFloat(0.9));
  add("second", 0, 1).attrs.set("rank", Attribute::getInt(2));
  add("first", 0, 1).attrs.set("rank", Attribute::getInt(1));
  Plan plan = build();
  EXPECT_EQ(names(plan),
            (std::vector<std::string>{"first", "second", "unranked-a",
                                      "unranked-b", "unranked-low"}));
  for (unsigned i = 0; i < plan.tests.size(); ++i)
    EXPECT_EQ(plan.tests[i].position, i + 1);
}

TEST_F(PlanFixture, CostsAgainstRunningEverything) {
  fastci::Test &lowered = add("lowered", 8, 100);
  lowered.attrs.set("original_seconds", Attribute::getFloat(600));
  add("skipped", 4, 50).attrs.set("selected", Attribute::getBool(false));
  fastci::Test &pruned = add("pruned", 2, 10);
  pruned.attrs.set("pruned", Attribute::getBool(true));
  pruned.attrs.set("pruned_by",
                   Attribute::getList({Attribute::getSymbol("lowered")}));
  Plan plan = build();
  const PlanSummary &summary = plan.summary;
  EXPECT_EQ(summary.totalTests, 3u);
  EXPECT_EQ(summary.plannedTests, 1u);
  EXPECT_EQ(summary.skippedTests, 1u);
  EXPECT_EQ(summary.prunedTests, 1u);
  EXPECT_FALSE(summary.scheduled);
  EXPECT_DOUBLE_EQ(summary.makespanSeconds, 100);
  EXPECT_DOUBLE_EQ(summary.plannedGpuSeconds, 800);
  EXPECT_DOUBLE_EQ(summary.fullGpuSeconds, 8 * 600 + 4 * 50 + 2 * 10);
  EXPECT_DOUBLE_EQ(summary.fullSerialSeconds, 600 + 50 + 10);
  ASSERT_EQ(plan.dropped.size(), 2u);
  EXPECT_EQ(plan.dropped[0].name, "pruned");
  EXPECT_EQ(plan.dropped[0].prunedBy, std::vector<std::string>{"lowered"});
  EXPECT_EQ(plan.dropped[1].name, "skipped");
  EXPECT_FALSE(plan.dropped[1].pruned);
}

TEST_F(PlanFixture, ObserveModeRunsDroppedTestsLast) {
  add("kept", 0, 1);
  add("b-skipped", 0, 1).attrs.set("selected", Attribute::getBool(false));
  add("a-pruned", 0, 1).attrs.set("pruned", Attribute::getBool(true));
  Plan plan = build(/*observe=*/true);
  EXPECT_EQ(names(plan),
            (std::vector<std::string>{"kept", "a-pruned", "b-skipped"}));
  EXPECT_EQ(plan.tests[0].observedAs, "");
  EXPECT_EQ(plan.tests[1].observedAs, "pruned");
  EXPECT_EQ(plan.tests[2].observedAs, "skipped");
  EXPECT_EQ(plan.summary.plannedTests, 1u);
}

TEST_F(PlanFixture, RendersJobsWithOverridesAndEnvironment) {
  fastci::Test &job = add("job", 8, 1);
  job.workload.set("--layers", Attribute::getInt(24));
  job.workload.set("--bf16", Attribute::getBool(true));
  job.workload.set("--fp16", Attribute::getBool(false));
  job.workload.set("--lr", Attribute::getFloat(1e-4));
  job.attrs.set("command", Attribute::getString("{python} train.py {args}"));
  job.attrs.set("overrides",
                Attribute::getDict({{"--layers", Attribute::getInt(2)}}));
  job.attrs.set("env", Attribute::getDict({{"A", Attribute::getInt(1)}}));
  fastci::Test &unit = add("tests/t.py::test_x", 0, 1);
  unit.attrs.set("override_env",
                 Attribute::getDict({{"B", Attribute::getString("{}")}}));
  Plan plan = build();
  ASSERT_EQ(plan.tests.size(), 2u);
  const PlannedTest &rendered = plan.tests[0];
  EXPECT_EQ(rendered.kind, TestKind::Job);
  EXPECT_EQ(rendered.argv,
            (std::vector<std::string>{"python3", "train.py", "--bf16",
                                      "--layers", "2", "--lr", "0.0001"}));
  EXPECT_EQ(rendered.overrides.at("--layers"), "2");
  EXPECT_EQ(shellCommandLine(rendered),
            "env A=1 python3 train.py --bf16 --layers 2 --lr 0.0001");
  EXPECT_EQ(plan.tests[1].kind, TestKind::Pytest);
  EXPECT_EQ(shellCommandLine(plan.tests[1]),
            "env 'B={}' python3 -m pytest tests/t.py::test_x");
}

TEST_F(PlanFixture, ReportsEveryUnrenderableJob) {
  add("a", 0, 1).attrs.set("command", Attribute::getString("run {x}"));
  add("b", 0, 1).attrs.set("command", Attribute::getInt(1));
  PlanOptions options;
  EXPECT_FALSE(buildPlan(module, options, diag));
  EXPECT_NE(diagnostics.find("test 'a': unknown placeholder '{x}'"),
            std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("test 'b' has a non-string 'command' attribute"),
            std::string::npos)
      << diagnostics;
}

} // namespace
