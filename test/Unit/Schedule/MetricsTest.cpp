//===- MetricsTest.cpp - APFD, APFDc, NAPFD and first-failure tests -------===//
//
// Textbook examples computed by hand: the five-test, ten-fault suite of
// Rothermel et al. (TSE 2001), whose orders A-B-C-D-E, E-D-C-B-A and
// C-E-B-A-D have APFD 50%, 64% and 84%, and small suites for the rest.
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Metrics.h"
#include "llvm/ADT/StringRef.h"
#include "gtest/gtest.h"
#include <map>
#include <numeric>
#include <random>

using namespace fastci;

namespace {

/// The suite of Rothermel et al.: A reveals faults 1 and 5, B 6 and 7, C 1-7,
/// D 5, E 8-10 (numbered from 0 here).
std::vector<PrioritizedTest> rothermel(llvm::StringRef order) {
  std::map<char, PrioritizedTest> tests = {
      {'A', {1, {0, 4}}},
      {'B', {1, {5, 6}}},
      {'C', {1, {0, 1, 2, 3, 4, 5, 6}}},
      {'D', {1, {4}}},
      {'E', {1, {7, 8, 9}}},
  };
  std::vector<PrioritizedTest> result;
  for (char name : order)
    result.push_back(tests.at(name));
  return result;
}

TEST(MetricsTest, APFDOfTheRothermelExample) {
  // A-B-C-D-E: TF = 1,3,3,3,1,2,2,5,5,5 → Σ = 30; 1 − 30/50 + 1/10 = 0.5.
  EXPECT_DOUBLE_EQ(*computeAPFD(rothermel("ABCDE"), 10), 0.5);
  // E-D-C-B-A: TF = 3,3,3,3,2,3,3,1,1,1 → Σ = 23; 1 − 23/50 + 1/10 = 0.64.
  EXPECT_DOUBLE_EQ(*computeAPFD(rothermel("EDCBA"), 10), 0.64);
  // C-E-B-A-D: TF = 1 (×7), 2 (×3) → Σ = 13; 1 − 13/50 + 1/10 = 0.84.
  EXPECT_DOUBLE_EQ(*computeAPFD(rothermel("CEBAD"), 10), 0.84);
}

TEST(MetricsTest, APFDIsUndefinedWhenAFaultIsMissed) {
  EXPECT_FALSE(computeAPFD(rothermel("ABCD"), 10));
  EXPECT_FALSE(computeAPFD({}, 10));
  EXPECT_FALSE(computeAPFD(rothermel("ABCDE"), 0));
}

TEST(MetricsTest, APFDcWithUnitCostsAndSeveritiesIsAPFD) {
  for (llvm::StringRef order : {"ABCDE", "EDCBA", "CEBAD"})
    EXPECT_DOUBLE_EQ(*computeAPFDc(rothermel(order), 10),
                     *computeAPFD(rothermel(order), 10));
}

TEST(MetricsTest, APFDcWeighsCosts) {
  // Two tests: a cheap passing one (cost 1) and an expensive failing one
  // (cost 9), one fault.
  std::vector<PrioritizedTest> cheapFirst = {{1, {}}, {9, {0}}};
  std::vector<PrioritizedTest> failingFirst = {{9, {0}}, {1, {}}};
  // Cheap first: (Σ_{j≥2} t_j − t_2/2) / (10·1) = (9 − 4.5) / 10 = 0.45.
  EXPECT_DOUBLE_EQ(*computeAPFDc(cheapFirst, 1), 0.45);
  // Failing first: (10 − 4.5) / 10 = 0.55.
  EXPECT_DOUBLE_EQ(*computeAPFDc(failingFirst, 1), 0.55);
  // Severities: fault 0 (severity 3) at test 1, fault 1 (severity 1) at
  // test 2, costs 2 and 2: (3·(4 − 1) + 1·(2 − 1)) / (4·4) = 10/16.
  std::vector<PrioritizedTest> severe = {{2, {0}}, {2, {1}}};
  EXPECT_DOUBLE_EQ(*computeAPFDc(severe, 2, {3, 1}), 0.625);
  // No cost at all: undefined rather than NaN.
  EXPECT_FALSE(computeAPFDc({{0, {0}}}, 1));
}

TEST(MetricsTest, NAPFDScalesByTheFaultsDetected) {
  // All faults found: NAPFD = APFD.
  EXPECT_DOUBLE_EQ(*computeNAPFD(rothermel("CEBAD"), 10), 0.84);
  // A-B-D (n = 3) finds faults 1, 5, 6, 7 of 10: p = 0.4, TF = 1,1,2,2
  // (others 0) → 0.4 − 6/30 + 0.4/6 = 0.2666….
  EXPECT_DOUBLE_EQ(*computeNAPFD(rothermel("ABD"), 10),
                   0.4 - 6.0 / 30 + 0.4 / 6);
  EXPECT_FALSE(computeNAPFD({}, 3));
}

TEST(MetricsTest, FirstFailureOnAPool) {
  // Runner 0: [0,10) 2 GPUs, then [10,15) 1 GPU; runner 1: [0,4) 4 GPUs.
  std::vector<TimedRun> runs = {{0, 10, 2}, {0, 4, 4}, {10, 15, 1}};
  // Only the third fails: known at 15 s; GPU-s = 20 + 16 + 5 = 41.
  std::optional<FirstFailure> first =
      findFirstFailure(runs, {false, false, true});
  ASSERT_TRUE(first);
  EXPECT_DOUBLE_EQ(first->time, 15);
  EXPECT_DOUBLE_EQ(first->gpuSeconds, 41);
  // The first two fail: the earliest end wins (4 s; 2·4 + 4·4 = 24 GPU-s).
  first = findFirstFailure(runs, {true, true, false});
  EXPECT_DOUBLE_EQ(first->time, 4);
  EXPECT_DOUBLE_EQ(first->gpuSeconds, 24);
  EXPECT_FALSE(findFirstFailure(runs, {false, false, false}));
}

TEST(MetricsTest, ExpectedFirstFailure) {
  std::vector<TimedRun> runs = {{0, 10, 2}, {0, 4, 4}, {10, 15, 1}};
  // By end: run 1 (p = .5, t = 4, 24 GPU-s), run 0 (p = .5, t = 10, 36),
  // run 2 (p = 0). P(first = 1) = .5, P(first = 0) = .25; P(any) = .75.
  // E[t | any] = (.5·4 + .25·10) / .75 = 6; E[G | any] = (12 + 9) / .75 = 28.
  ExpectedFirstFailure expected =
      computeExpectedFirstFailure(runs, {0.5, 0.5, 0});
  EXPECT_DOUBLE_EQ(expected.probability, 0.75);
  EXPECT_DOUBLE_EQ(expected.time, 6);
  EXPECT_DOUBLE_EQ(expected.gpuSeconds, 28);
  ExpectedFirstFailure none = computeExpectedFirstFailure(runs, {0, 0, 0});
  EXPECT_EQ(none.probability, 0);
  EXPECT_EQ(none.time, 0);
}

TEST(MetricsTest, ExpectedFirstFailureMatchesTheDefinition) {
  // The sweep against the definition, on random pools with ties in time.
  std::mt19937 engine(3);
  for (unsigned trial = 0; trial < 100; ++trial) {
    std::vector<TimedRun> runs(1 + engine() % 30);
    std::vector<double> p;
    for (TimedRun &run : runs) {
      run.start = engine() % 10;
      run.end = run.start + engine() % 5;
      run.gpus = 1 + engine() % 4;
      p.push_back((engine() % 5) / 4.0);
    }
    std::vector<unsigned> byEnd(runs.size());
    std::iota(byEnd.begin(), byEnd.end(), 0u);
    std::stable_sort(byEnd.begin(), byEnd.end(), [&](unsigned a, unsigned b) {
      return runs[a].end < runs[b].end;
    });
    double noneYet = 1, time = 0, gpuSeconds = 0;
    for (unsigned k : byEnd) {
      time += noneYet * p[k] * runs[k].end;
      gpuSeconds += noneYet * p[k] * computeGpuSecondsUntil(runs, runs[k].end);
      noneYet *= 1 - p[k];
    }
    ExpectedFirstFailure expected = computeExpectedFirstFailure(runs, p);
    EXPECT_NEAR(expected.probability, 1 - noneYet, 1e-12);
    if (noneYet < 1) {
      EXPECT_NEAR(expected.time, time / (1 - noneYet), 1e-9);
      EXPECT_NEAR(expected.gpuSeconds, gpuSeconds / (1 - noneYet), 1e-9);
    }
  }
}

} // namespace
