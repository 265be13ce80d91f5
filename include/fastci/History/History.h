//===- History.h - Test outcome histories from CI records -------*- C++ -*-===//
//
// CI remembers how tests ended in several places: pytest's JUnit XML reports,
// and job-result exports of the CI system (JSON or CSV). The readers in
// HistoryReaders.h turn each into HistoryRecords; this file matches records
// to the Module's tests, merges them into Test::history (sorted by time,
// deduplicated) and derives a measured cost from the durations. The matching
// rule and the cost rule are documented in docs/Risk.md.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_HISTORY_HISTORY_H
#define FASTCI_HISTORY_HISTORY_H

#include "fastci/IR/Module.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/SMLoc.h"
#include <optional>
#include <string>
#include <vector>

namespace fastci {

/// One run of one test as a history source spelled it, before it is matched
/// to a test of the module.
struct HistoryRecord {
  /// The test's id: a pytest node id or a CI job name. Empty for JUnit
  /// records, which name the test by \c junitClassName and \c junitName.
  std::string test;
  /// pytest's `classname` (`tests.unit.test_attn.TestAttn`), JUnit only.
  std::string junitClassName;
  /// pytest's `name` (`test_fwd[bf16]`), JUnit only.
  std::string junitName;
  /// The revision it ran at; empty when the source does not say.
  std::string revision;
  /// When it ran, seconds since the Unix epoch (or a run index when the
  /// source has no timestamps; see docs/Risk.md).
  int64_t time = 0;
  /// How it ended.
  OutcomeKind kind = OutcomeKind::Pass;
  /// Seconds it took.
  double duration = 0;
  /// GPUs it occupied, when the source says.
  std::optional<int64_t> gpus;
  /// Where the record is in its file, for diagnostics.
  llvm::SMLoc loc;
};

/// Parses an outcome as CI systems spell it: `pass`/`passed`/`success`,
/// `fail`/`failed`/`failure`, `error`/`errored`, `skip`/`skipped`
/// (case-insensitive).
std::optional<OutcomeKind> parseOutcomeKind(llvm::StringRef spelling);

/// Finds the module test a record names. Node ids match exactly, or else by
/// a unique path suffix (`unit/test_a.py::t` finds `tests/unit/test_a.py::t`)
/// so that reports written from another rootdir still match. A JUnit
/// classname is split into a file path and class names at each possible
/// point, longest file path first.
class TestMatcher {
public:
  explicit TestMatcher(const Module &module);

  /// The test \p record names, or kNoTest.
  TestId match(const HistoryRecord &record) const;
  /// The test with node id \p nodeId (exactly or by unique suffix), or
  /// kNoTest.
  TestId lookup(llvm::StringRef nodeId) const;

private:
  const Module &module;
  /// Every `/`-boundary suffix of every test name; kNoTest when ambiguous.
  llvm::StringMap<TestId> suffixes;
};

/// What merging records into a module did.
struct HistoryMergeStats {
  /// Records that became outcomes.
  unsigned merged = 0;
  /// Records naming no test of the module (deleted or renamed tests).
  unsigned unknownTests = 0;
  /// Outcomes dropped as repeats of a run already known (same time,
  /// revision and kind).
  unsigned duplicates = 0;
  /// Distinct names among the unknown records, in first-seen order.
  std::vector<std::string> unknownNames;
  /// Per test id: the GPUs of its most recent record that said, if any.
  std::vector<std::optional<int64_t>> observedGpus;
};

/// Appends \p records to the histories of the tests they name, then sorts
/// each touched history by time (stable) and drops duplicates.
HistoryMergeStats mergeHistory(Module &module,
                               llvm::ArrayRef<HistoryRecord> records);

/// A cost measured from history.
struct MeasuredCost {
  /// The cost: median duration of the recent runs, GPUs from the most
  /// recent record that knew them, gpu_seconds = gpus × seconds.
  Cost cost;
  /// How many runs the median was taken over.
  unsigned runs = 0;
};

/// The cost of a test measured from its \p history (oldest first) over the
/// \p recent most recent non-skipped runs with a positive duration, using
/// \p gpus GPUs; none when no such run exists.
std::optional<MeasuredCost> measureCost(llvm::ArrayRef<Outcome> history,
                                        unsigned recent, int64_t gpus);

} // namespace fastci

#endif // FASTCI_HISTORY_HISTORY_H
