//===- SchedulerTest.cpp - Priority orders and list scheduling ------------===//
//
// Small pools worked by hand, and a randomized check of the scheduler's
// invariants: no runner ever holds more GPUs than it has, start times follow
// the order, and a job waits only while no runner has room.
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Scheduler.h"
#include "gtest/gtest.h"
#include <random>

using namespace fastci;

namespace {

TEST(SchedulerTest, ParsesPolicies) {
  for (SchedulePolicy policy :
       {SchedulePolicy::RiskFirst, SchedulePolicy::AsListed,
        SchedulePolicy::Random, SchedulePolicy::ShortestFirst,
        SchedulePolicy::Coleman})
    EXPECT_EQ(symbolizeSchedulePolicy(stringifySchedulePolicy(policy)), policy);
  EXPECT_FALSE(symbolizeSchedulePolicy("fastest"));
}

TEST(SchedulerTest, RiskPerCostOrder) {
  // Densities: 0.1, 0.5, 0.1 (risk .2 beats .1 on the tie), free+risky,
  // riskless.
  std::vector<unsigned> order =
      orderByRiskPerCost({1, 0.5, 0.2, 0.3, 0}, {10, 1, 2, 0, 1});
  EXPECT_EQ(order, (std::vector<unsigned>{3, 1, 0, 2, 4}));
}

TEST(SchedulerTest, DurationOrderIsStable) {
  EXPECT_EQ(orderByDuration({5, 1, 5, 0}), (std::vector<unsigned>{3, 1, 0, 2}));
}

TEST(SchedulerTest, RandomOrderIsAReproduciblePermutation) {
  std::vector<unsigned> a = orderRandomly(50, 7), b = orderRandomly(50, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, orderRandomly(50, 8));
  std::vector<unsigned> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (unsigned i = 0; i < 50; ++i)
    EXPECT_EQ(sorted[i], i);
  EXPECT_TRUE(orderRandomly(0, 1).empty());
}

TEST(SchedulerTest, PacksConcurrentJobsOntoOneRunner) {
  // Two runners of 4 GPUs. Jobs: 2 GPUs/10 s, 2/5, 4/3, 1/1.
  std::vector<Placement> placed =
      listSchedule({{2, 10}, {2, 5}, {4, 3}, {1, 1}}, {2, 4});
  // The first two share runner 0; the 4-GPU job takes runner 1; the last
  // waits for the first free GPU: runner 1 at 3 s (runner 0 frees at 5 s).
  EXPECT_EQ(placed[0].runner, 0u);
  EXPECT_EQ(placed[0].start, 0);
  EXPECT_EQ(placed[1].runner, 0u);
  EXPECT_EQ(placed[1].start, 0);
  EXPECT_EQ(placed[2].runner, 1u);
  EXPECT_EQ(placed[2].end, 3);
  EXPECT_EQ(placed[3].runner, 1u);
  EXPECT_EQ(placed[3].start, 3);
  EXPECT_EQ(placed[3].end, 4);
}

TEST(SchedulerTest, HeadOfQueueBlocksLaterJobs) {
  // One runner of 2 GPUs: 1 GPU for 10 s, then 2 GPUs for 1 s, then 1 GPU
  // for 1 s. The 2-GPU job waits until 10 s, and the last job, although a
  // GPU is free earlier, starts no earlier than the job before it.
  std::vector<Placement> placed =
      listSchedule({{1, 10}, {2, 1}, {1, 1}}, {1, 2});
  EXPECT_EQ(placed[1].start, 10);
  EXPECT_EQ(placed[2].start, 11);
}

TEST(SchedulerTest, RandomPoolsRespectCapacityAndOrder) {
  std::mt19937 engine(42);
  for (unsigned trial = 0; trial < 200; ++trial) {
    RunnerPool pool{1 + engine() % 4, static_cast<int64_t>(1 + engine() % 8)};
    std::vector<Job> jobs(1 + engine() % 40);
    for (Job &job : jobs) {
      job.gpus = 1 + engine() % pool.gpusPerRunner;
      job.seconds = engine() % 5; // Zero-length jobs included.
    }
    std::vector<Placement> placed = listSchedule(jobs, pool);
    ASSERT_EQ(placed.size(), jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      EXPECT_EQ(placed[i].end, placed[i].start + jobs[i].seconds);
      if (i)
        EXPECT_GE(placed[i].start, placed[i - 1].start);
      // Capacity at each start time, on every runner.
      for (unsigned runner = 0; runner < pool.runners; ++runner) {
        int64_t used = 0;
        for (size_t j = 0; j < jobs.size(); ++j)
          if (placed[j].runner == runner &&
              placed[j].start <= placed[i].start &&
              placed[i].start < placed[j].end)
            used += jobs[j].gpus;
        EXPECT_LE(used, pool.gpusPerRunner);
      }
    }
  }
}

TEST(SchedulerTest, RetainedTestsHonourSelectionAndPruning) {
  Module module;
  for (const char *name : {"a", "b", "c"})
    module.addTest(name);
  EXPECT_EQ(getRetainedTests(module), (std::vector<TestId>{0, 1, 2}));
  module.getTest(1).attrs.set("pruned", Attribute::getBool(true));
  EXPECT_EQ(getRetainedTests(module), (std::vector<TestId>{0, 2}));
  module.getTest(0).attrs.set("selected", Attribute::getBool(true));
  module.getTest(1).attrs.set("selected", Attribute::getBool(true));
  EXPECT_EQ(getRetainedTests(module), (std::vector<TestId>{0}));
}

} // namespace
