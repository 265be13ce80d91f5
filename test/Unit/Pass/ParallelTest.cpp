//===- ParallelTest.cpp - Parallel loops ----------------------------------===//
//
// parallelFor covers every index exactly once, really runs concurrently when
// allowed, runs inline with one thread, and parallelMap keeps index order.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/Parallel.h"
#include "gtest/gtest.h"
#include <atomic>
#include <chrono>
#include <thread>

using namespace fastci;

namespace {
TEST(ParallelTest, VisitsEveryIndexOnce) {
  setThreadCount(4);
  std::vector<std::atomic<int>> visits(1000);
  parallelFor(0, visits.size(), [&](size_t index) { ++visits[index]; });
  for (auto &count : visits)
    EXPECT_EQ(count.load(), 1);
}

TEST(ParallelTest, OneThreadRunsInline) {
  setThreadCount(1);
  std::thread::id caller = std::this_thread::get_id();
  bool allInline = true;
  parallelFor(0, 100, [&](size_t) {
    allInline &= std::this_thread::get_id() == caller;
  });
  EXPECT_TRUE(allInline);
}

TEST(ParallelTest, RunsConcurrentlyWhenAllowed) {
  // Two indices that each wait for the other: this only finishes promptly
  // if they run at the same time.
  setThreadCount(2);
  std::atomic<int> arrived{0};
  std::atomic<bool> timedOut{false};
  parallelFor(0, 2, [&](size_t) {
    ++arrived;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        timedOut = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_FALSE(timedOut.load());
}

TEST(ParallelTest, MaxThreadsOfOneRunsInline) {
  setThreadCount(8);
  std::thread::id caller = std::this_thread::get_id();
  bool allInline = true;
  parallelFor(
      0, 100,
      [&](size_t) { allInline &= std::this_thread::get_id() == caller; },
      /*maxThreads=*/1);
  EXPECT_TRUE(allInline);
}

TEST(ParallelTest, MapKeepsIndexOrder) {
  setThreadCount(8);
  std::vector<size_t> squares =
      parallelMap<size_t>(500, [](size_t index) { return index * index; });
  ASSERT_EQ(squares.size(), 500u);
  for (size_t index = 0; index != squares.size(); ++index)
    EXPECT_EQ(squares[index], index * index);
}

TEST(ParallelTest, EmptyRangeDoesNothing) {
  bool called = false;
  parallelFor(5, 5, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
}
} // namespace
