//===- Parallel.cpp - Deterministic parallel loops for passes -------------===//
//
// parallelFor on oneTBB. A task_arena caps the concurrency of each loop and a
// global_control lets --threads exceed the hardware thread count (TBB would
// otherwise silently cap it), so a requested thread count is honoured.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/Parallel.h"
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

using namespace fastci;

static std::atomic<unsigned> threadCount{0};

static unsigned getHardwareThreads() {
  return std::max(1, oneapi::tbb::info::default_concurrency());
}

void fastci::setThreadCount(unsigned threads) {
  static std::mutex mutex;
  static std::unique_ptr<oneapi::tbb::global_control> limit;
  std::lock_guard<std::mutex> lock(mutex);
  threadCount = threads;
  limit.reset();
  limit = std::make_unique<oneapi::tbb::global_control>(
      oneapi::tbb::global_control::max_allowed_parallelism,
      threads ? threads : getHardwareThreads());
}

unsigned fastci::getThreadCount() {
  unsigned threads = threadCount.load();
  return threads ? threads : getHardwareThreads();
}

void fastci::parallelFor(size_t begin, size_t end,
                         llvm::function_ref<void(size_t)> fn,
                         unsigned maxThreads) {
  if (begin >= end)
    return;
  unsigned threads = getThreadCount();
  if (maxThreads)
    threads = std::min(threads, maxThreads);
  if (threads == 1 || end - begin == 1) {
    for (size_t index = begin; index != end; ++index)
      fn(index);
    return;
  }
  oneapi::tbb::task_arena arena(static_cast<int>(threads));
  arena.execute([&] {
    oneapi::tbb::parallel_for(
        oneapi::tbb::blocked_range<size_t>(begin, end),
        [&](const oneapi::tbb::blocked_range<size_t> &range) {
          for (size_t index = range.begin(); index != range.end(); ++index)
            fn(index);
        });
  });
}
