//===- RiskTest.cpp - The risk model on hand-computed histories -----------===//
//
// Each expectation is worked out in the comment above it from the formula
// in docs/Risk.md.
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Risk.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fastci;

namespace {

Outcome run(llvm::StringRef revision, int64_t time, OutcomeKind kind) {
  return Outcome{revision, time, kind, 1.0};
}

constexpr OutcomeKind P = OutcomeKind::Pass, F = OutcomeKind::Fail,
                      E = OutcomeKind::Error, S = OutcomeKind::Skip;

TEST(RiskTest, NewTestsGetThePrior) {
  RiskParams params;
  RiskTerms terms = computeRisk({run("r1", 1, S)}, 0.2, params);
  EXPECT_TRUE(terms.isNew);
  // π + λ·C = 0.5 + 5·0.2 = 1.5.
  EXPECT_DOUBLE_EQ(terms.risk, 1.5);
}

TEST(RiskTest, RecentFailuresDecay) {
  RiskParams params;
  params.decay = 0.5;
  params.window = 3;
  // Newest first: fail (1), pass (.5), error (.25); the oldest fail is out
  // of the window. F = 1.25 / 1.75.
  RiskTerms terms = computeRisk(
      {run("r0", 0, F), run("r1", 1, E), run("r2", 2, P), run("r3", 3, F)}, 0,
      params);
  EXPECT_FALSE(terms.isNew);
  EXPECT_EQ(terms.runs, 3u);
  EXPECT_DOUBLE_EQ(terms.failures, 1.25 / 1.75);
  EXPECT_DOUBLE_EQ(terms.risk, 1.25 / 1.75);
}

TEST(RiskTest, FlakyFailuresAreDiscounted) {
  RiskParams params;
  params.decay = 0.5;
  // Newest first: pass@r2 (1), pass@r1 (.5), fail@r1 (.25, flaky: the next
  // run passed at the same revision), fail@r0 (.125, not flaky: the next
  // run is another revision). F = (.25·.5 + .125) / 1.875; φ = 1/2.
  RiskTerms terms = computeRisk(
      {run("r0", 0, F), run("r1", 1, F), run("r1", 2, P), run("r2", 3, P)}, 0,
      params);
  EXPECT_DOUBLE_EQ(terms.failures, 0.25 / 1.875);
  EXPECT_DOUBLE_EQ(terms.flakiness, 0.5);
  // Unknown revisions never make a failure flaky.
  terms = computeRisk({run("", 0, F), run("", 1, P)}, 0, params);
  EXPECT_DOUBLE_EQ(terms.flakiness, 0);
}

TEST(RiskTest, ChangeSharesFollowStacks) {
  Module module;
  EntityId file = module.addEntity(EntityKind::File, "m.py");
  EntityId mod = module.addEntity(EntityKind::Module, "m", file);
  EntityId f = module.addEntity(EntityKind::Function, "m.f", mod);
  EntityId g = module.addEntity(EntityKind::Function, "m.f.<locals>.g", f);
  EntityId h = module.addEntity(EntityKind::Function, "m.h", mod);
  TestId t0 = module.addTest("t0"), t1 = module.addTest("t1");
  module.addTest("t2");
  module.addChange(ChangeKind::Modified, f);
  module.addChange(ChangeKind::Cosmetic, h);
  StackId viaG =
      module.getStack({module.getEntityFrame(h), module.getEntityFrame(g)});
  StackId onlyH = module.getStack({module.getEntityFrame(h)});
  // t0: 3 samples in g (nested in changed f), 1 in h (cosmetic) → 3/4.
  module.addEvidence(t0).samples = {{viaG, 3}, {onlyH, 1}};
  module.addEvidence(t1).samples = {{onlyH, 2}};
  std::vector<std::optional<double>> shares =
      computeChangeShares(module, EvidenceGraph(module, 3));
  EXPECT_DOUBLE_EQ(*shares[0], 0.75);
  EXPECT_DOUBLE_EQ(*shares[1], 0);
  EXPECT_FALSE(shares[2]);
}

TEST(RiskTest, ChangeSharesCountExactFunctions) {
  // t0's exact record ran changed f and unchanged h without a sample in
  // either: half of its functions changed. t1 ran only h.
  Module module;
  EntityId file = module.addEntity(EntityKind::File, "m.py");
  EntityId mod = module.addEntity(EntityKind::Module, "m", file);
  EntityId f = module.addEntity(EntityKind::Function, "m.f", mod);
  module.addEntity(EntityKind::Function, "m.h", mod);
  TestId t0 = module.addTest("t0"), t1 = module.addTest("t1");
  module.addChange(ChangeKind::Modified, f);
  auto exact = [&](TestId test, std::vector<llvm::StringRef> functions) {
    AttrDict &attrs = module.addEvidence(test).attrs;
    attrs.set(evidence::attr::kCoverage, Attribute::getString("exact"));
    std::vector<Attribute> list;
    for (llvm::StringRef symbol : functions)
      list.push_back(Attribute::getSymbol(symbol));
    attrs.set(evidence::attr::kFunctions, Attribute::getList(std::move(list)));
  };
  exact(t0, {"m.f", "m.h"});
  exact(t1, {"m.h"});
  // t2 ran `m.old.f`, since moved (stale under its old symbol), and h: the
  // moved code is named like changed f.
  TestId t2 = module.addTest("t2");
  exact(t2, {"m.h"});
  module.getTest(t2).attrs.set(
      evidence::attr::kStaleEntities,
      Attribute::getStringList(std::vector<std::string>{"m.old.f"}));
  std::vector<std::optional<double>> shares =
      computeChangeShares(module, EvidenceGraph(module, 3));
  EXPECT_DOUBLE_EQ(*shares[0], 0.5);
  EXPECT_DOUBLE_EQ(*shares[1], 0);
  EXPECT_DOUBLE_EQ(*shares[2], 0.5);
}

TEST(RiskTest, FailureProbability) {
  EXPECT_EQ(failureProbability(0), 0);
  EXPECT_DOUBLE_EQ(failureProbability(std::log(2.0)), 0.5);
}

} // namespace
