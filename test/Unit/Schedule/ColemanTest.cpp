//===- ColemanTest.cpp - FRRMAB credit assignment by hand -----------------===//
//
// Q values worked out from the formulas in Coleman.h.
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Coleman.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fastci;

namespace {

TEST(ColemanTest, UntriedArmsGoFirst) {
  ColemanAgent agent({});
  agent.observe({"a", "b"}, {false, true});
  // "c" was never observed: it leads; then b (rewarded) before a.
  EXPECT_EQ(agent.prioritize({"a", "b", "c"}),
            (std::vector<unsigned>{2, 1, 0}));
}

TEST(ColemanTest, FitnessRateRankWithDecay) {
  ColemanParams params;
  params.decay = 0.5;
  params.exploration = 0.1;
  ColemanAgent agent(params);
  // Two cycles: a fails twice, b once, c never. Rewards 2, 1, 0; ranks 1,
  // 2, 3; decayed .5·2 = 1, .25·1 = .25, 0 → FRR .8, .2, 0. Each arm used
  // twice of 6 uses: exploration = .1·sqrt(2·ln 7 / 2).
  agent.observe({"a", "b", "c"}, {true, true, false});
  agent.observe({"a", "b", "c"}, {true, false, false});
  double explore = 0.1 * std::sqrt(2 * std::log(7.0) / 2);
  EXPECT_DOUBLE_EQ(*agent.getValue("a"), 0.8 + explore);
  EXPECT_DOUBLE_EQ(*agent.getValue("b"), 0.2 + explore);
  EXPECT_DOUBLE_EQ(*agent.getValue("c"), explore);
}

TEST(ColemanTest, SlidingWindowForgets) {
  ColemanParams params;
  params.window = 1;
  ColemanAgent agent(params);
  agent.observe({"a"}, {true});
  agent.observe({"b"}, {false});
  // Only the last cycle is remembered: "a" is untried again.
  EXPECT_FALSE(agent.getValue("a"));
  EXPECT_TRUE(agent.getValue("b"));
}

TEST(ColemanTest, TimeRankRewardsPassingTestsByFailuresBefore) {
  ColemanParams params;
  params.reward = ColemanReward::TimeRank;
  params.exploration = 0;
  ColemanAgent agent(params);
  // Order p1, f1, p2, f2: rewards 0, 1, 1/2, 1; FRR with D = 1 divides by
  // 2.5.
  agent.observe({"p1", "f1", "p2", "f2"}, {false, true, false, true});
  EXPECT_DOUBLE_EQ(*agent.getValue("p1"), 0);
  EXPECT_DOUBLE_EQ(*agent.getValue("p2"), 0.5 / 2.5);
  EXPECT_DOUBLE_EQ(*agent.getValue("f1"), 1 / 2.5);
}

TEST(ColemanTest, ReplaysHistoryByRevision) {
  Module module;
  TestId flaky = module.addTest("t_flaky"), stable = module.addTest("t_ok");
  llvm::StringRef r1 = module.intern("r1"), r2 = module.intern("r2");
  module.getTest(flaky).history = {{r1, 10, OutcomeKind::Fail, 1},
                                   {r2, 20, OutcomeKind::Fail, 1}};
  module.getTest(stable).history = {{r1, 10, OutcomeKind::Pass, 1},
                                    {r2, 20, OutcomeKind::Pass, 1}};
  ColemanParams params;
  params.exploration = 0;
  ColemanAgent agent(params);
  agent.replay(module);
  EXPECT_DOUBLE_EQ(*agent.getValue("t_flaky"), 1);
  EXPECT_DOUBLE_EQ(*agent.getValue("t_ok"), 0);
  EXPECT_EQ(agent.prioritize({"t_ok", "t_flaky"}),
            (std::vector<unsigned>{1, 0}));
}

} // namespace
