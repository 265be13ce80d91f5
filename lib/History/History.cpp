//===- History.cpp - Test outcome histories from CI records ---------------===//
//
// Matching history records to tests, merging them into Test::history and
// measuring costs from durations. Matching is by name only: history outlives
// code, so a record naming a test that no longer exists is counted, not an
// error.
//
//===----------------------------------------------------------------------===//
#include "fastci/History/History.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include <algorithm>

using namespace fastci;

std::optional<OutcomeKind> fastci::parseOutcomeKind(llvm::StringRef spelling) {
  std::string lower = spelling.trim().lower();
  return llvm::StringSwitch<std::optional<OutcomeKind>>(lower)
      .Cases("pass", "passed", "success", "ok", OutcomeKind::Pass)
      .Cases("fail", "failed", "failure", OutcomeKind::Fail)
      .Cases("error", "errored", OutcomeKind::Error)
      .Cases("skip", "skipped", OutcomeKind::Skip)
      .Default(std::nullopt);
}

//===----------------------------------------------------------------------===//
// TestMatcher
//===----------------------------------------------------------------------===//

TestMatcher::TestMatcher(const Module &module) : module(module) {
  for (const Test &test : module.getTests()) {
    // Only the path part of a node id has `/` boundaries; a `/` inside a
    // parametrization (`test_f[a/b]`) must not start a suffix.
    llvm::StringRef name = test.name;
    size_t pathEnd = std::min(name.find("::"), name.find('['));
    for (size_t slash = name.find('/'); slash < pathEnd;
         slash = name.find('/', slash + 1)) {
      auto [it, inserted] =
          suffixes.try_emplace(name.drop_front(slash + 1), test.index);
      if (!inserted && it->second != test.index)
        it->second = kNoTest;
    }
  }
}

TestId TestMatcher::lookup(llvm::StringRef nodeId) const {
  TestId exact = module.lookupTest(nodeId);
  if (exact != kNoTest)
    return exact;
  auto it = suffixes.find(nodeId);
  return it == suffixes.end() ? kNoTest : it->second;
}

TestId TestMatcher::match(const HistoryRecord &record) const {
  if (record.junitClassName.empty() && record.junitName.empty())
    return lookup(record.test);
  if (record.junitClassName.empty())
    return lookup(record.junitName);

  // `a.b.test_m.TestC` is file `a/b/test_m.py` and class `TestC`, but only
  // the module knows where the file part ends: try every split.
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(record.junitClassName).split(parts, '.');
  for (size_t fileParts = parts.size(); fileParts > 0; --fileParts) {
    std::string nodeId =
        llvm::join(llvm::ArrayRef(parts).take_front(fileParts), "/") + ".py";
    for (llvm::StringRef cls : llvm::ArrayRef(parts).drop_front(fileParts))
      (nodeId += "::") += cls;
    (nodeId += "::") += record.junitName;
    TestId id = lookup(nodeId);
    if (id != kNoTest)
      return id;
  }
  return kNoTest;
}

//===----------------------------------------------------------------------===//
// Merging
//===----------------------------------------------------------------------===//

/// Sorts \p history by time (stably, so same-time runs keep source order)
/// and drops repeats of the same run; returns how many were dropped.
static unsigned sortAndDeduplicate(std::vector<Outcome> &history) {
  std::stable_sort(
      history.begin(), history.end(),
      [](const Outcome &a, const Outcome &b) { return a.time < b.time; });
  // Two sources describing one run agree on time, revision and outcome but
  // may round the duration differently, so the duration is not compared.
  // Repeats are not always adjacent (several runs share a time), hence the
  // scan over the equal-time range.
  std::vector<Outcome> kept;
  kept.reserve(history.size());
  size_t rangeStart = 0;
  for (const Outcome &outcome : history) {
    if (!kept.empty() && kept.back().time != outcome.time)
      rangeStart = kept.size();
    bool repeated = llvm::any_of(
        llvm::ArrayRef(kept).drop_front(rangeStart), [&](const Outcome &o) {
          return o.revision == outcome.revision && o.kind == outcome.kind;
        });
    if (!repeated)
      kept.push_back(outcome);
  }
  unsigned dropped = history.size() - kept.size();
  history = std::move(kept);
  return dropped;
}

HistoryMergeStats fastci::mergeHistory(Module &module,
                                       llvm::ArrayRef<HistoryRecord> records) {
  HistoryMergeStats stats;
  stats.observedGpus.resize(module.getNumTests());
  std::vector<int64_t> gpusTime(module.getNumTests(), 0);
  std::vector<bool> touched(module.getNumTests(), false);
  llvm::StringSet<> unknown;
  TestMatcher matcher(module);

  for (const HistoryRecord &record : records) {
    TestId id = matcher.match(record);
    if (id == kNoTest) {
      ++stats.unknownTests;
      std::string name = record.test.empty()
                             ? record.junitClassName + "::" + record.junitName
                             : record.test;
      if (unknown.insert(name).second)
        stats.unknownNames.push_back(std::move(name));
      continue;
    }
    Test &test = module.getTest(id);
    test.history.push_back(Outcome{module.intern(record.revision), record.time,
                                   record.kind, record.duration});
    touched[id] = true;
    if (record.gpus &&
        (!stats.observedGpus[id] || record.time >= gpusTime[id])) {
      stats.observedGpus[id] = record.gpus;
      gpusTime[id] = record.time;
    }
  }

  for (TestId id = 0; id < module.getNumTests(); ++id)
    if (touched[id])
      stats.duplicates += sortAndDeduplicate(module.getTest(id).history);
  unsigned added = records.size() - stats.unknownTests;
  stats.merged = added > stats.duplicates ? added - stats.duplicates : 0;
  return stats;
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

std::optional<MeasuredCost> fastci::measureCost(llvm::ArrayRef<Outcome> history,
                                                unsigned recent, int64_t gpus) {
  std::vector<double> durations;
  for (const Outcome &outcome : llvm::reverse(history)) {
    if (durations.size() >= recent)
      break;
    if (outcome.kind != OutcomeKind::Skip && outcome.duration > 0)
      durations.push_back(outcome.duration);
  }
  if (durations.empty())
    return std::nullopt;
  std::sort(durations.begin(), durations.end());
  size_t mid = durations.size() / 2;
  double median = durations.size() % 2
                      ? durations[mid]
                      : (durations[mid - 1] + durations[mid]) / 2;
  MeasuredCost measured;
  measured.cost.gpus = gpus;
  measured.cost.seconds = median;
  measured.cost.gpuSeconds = static_cast<double>(gpus) * median;
  measured.runs = durations.size();
  return measured;
}
