//===- Parallel.h - Deterministic parallel loops for passes -----*- C++ -*-===//
//
// Passes that do independent work per test, per file or per entity use these
// helpers rather than threads of their own, so that one setting (--threads)
// bounds the whole process and so that parallel passes stay deterministic.
//
// Thread-safety rules for the loop body (index i):
//  * Write only to state owned by index i: slot i of a vector sized before
//    the loop, or the i-th test/entity's own fields (attrs of distinct nodes
//    are distinct objects). Merge results into shared state after the loop,
//    in index order -- parallelMap does exactly this -- so the output is
//    byte-identical whatever the thread count.
//  * Read the Module freely, but do not call anything that adds to it:
//    intern(), add*(), getEntityFrame(), getStack() and every other method
//    that may grow a table are not thread-safe.
//  * The DiagnosticEngine and Pass::Statistic are thread-safe. Diagnostics
//    emitted from workers appear in scheduling order; to keep the output
//    deterministic, collect them per index and emit them after the loop.
//  * Request analyses (getAnalysis<T>()) before the loop, never inside it.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_PARALLEL_H
#define FASTCI_PASS_PARALLEL_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include <cstddef>
#include <iterator>
#include <vector>

namespace fastci {

/// Sets the number of threads parallel loops may use (--threads); 0 means
/// one per hardware thread. 1 runs every loop inline on the calling thread.
void setThreadCount(unsigned threads);
/// The number of threads parallel loops use.
unsigned getThreadCount();

/// Calls \p fn(i) for every i in [begin, end), on up to getThreadCount()
/// threads, or \p maxThreads when that is smaller and non-zero (a pass's own
/// `jobs` option). Returns when every call has returned.
void parallelFor(size_t begin, size_t end, llvm::function_ref<void(size_t)> fn,
                 unsigned maxThreads = 0);

/// Calls \p fn(element) for every element of the random-access \p range.
template <typename Range, typename Fn>
void parallelForEach(Range &&range, Fn &&fn, unsigned maxThreads = 0) {
  auto first = std::begin(range);
  size_t size = std::distance(first, std::end(range));
  parallelFor(
      0, size, [&](size_t index) { fn(first[index]); }, maxThreads);
}

/// Returns {fn(0), ..., fn(n-1)} computed in parallel: each call writes its
/// own slot, and the result is in index order regardless of scheduling.
template <typename T, typename Fn>
std::vector<T> parallelMap(size_t n, Fn &&fn, unsigned maxThreads = 0) {
  std::vector<T> results(n);
  parallelFor(
      0, n, [&](size_t index) { results[index] = fn(index); }, maxThreads);
  return results;
}

} // namespace fastci

#endif // FASTCI_PASS_PARALLEL_H
