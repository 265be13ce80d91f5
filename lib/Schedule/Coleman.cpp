//===- Coleman.cpp - COLEMAN: a bandit that prioritises tests -------------===//
//
// FRRMAB as COLEMAN uses it (see Coleman.h for the formulas). The window
// holds whole cycles, so forgetting a cycle forgets every reward it gave.
//
//===----------------------------------------------------------------------===//
#include "fastci/Schedule/Coleman.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

using namespace fastci;

std::vector<unsigned>
ColemanAgent::prioritize(llvm::ArrayRef<llvm::StringRef> arms) const {
  std::vector<double> q(arms.size());
  for (auto [i, arm] : llvm::enumerate(arms))
    q[i] = getValue(arm).value_or(std::numeric_limits<double>::infinity());
  std::vector<unsigned> order(arms.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](unsigned a, unsigned b) { return q[a] > q[b]; });
  return order;
}

std::optional<double> ColemanAgent::getValue(llvm::StringRef arm) const {
  auto it = values.find(arm);
  if (it == values.end())
    return std::nullopt;
  return it->second;
}

void ColemanAgent::observe(llvm::ArrayRef<llvm::StringRef> order,
                           llvm::ArrayRef<bool> failed) {
  assert(order.size() == failed.size() && "one outcome per test");
  unsigned numFailed = llvm::count(failed, true);
  Cycle cycle;
  cycle.reserve(order.size());
  unsigned failedSoFar = 0;
  for (auto [arm, fail] : llvm::zip_equal(order, failed)) {
    failedSoFar += fail;
    double reward = fail ? 1.0 : 0.0;
    if (params.reward == ColemanReward::TimeRank && !fail && numFailed)
      reward = static_cast<double>(failedSoFar) / numFailed;
    cycle.emplace_back(arm.str(), reward);
  }
  window.push_back(std::move(cycle));
  while (window.size() > params.window)
    window.pop_front();
  assignCredit();
}

void ColemanAgent::assignCredit() {
  struct Arm {
    llvm::StringRef name;
    double reward = 0;
    unsigned uses = 0;
  };
  llvm::StringMap<unsigned> index;
  std::vector<Arm> arms;
  unsigned totalUses = 0;
  for (const Cycle &cycle : window)
    for (const auto &[name, reward] : cycle) {
      auto [it, inserted] = index.try_emplace(name, arms.size());
      if (inserted)
        arms.push_back({it->first()});
      arms[it->second].reward += reward;
      ++arms[it->second].uses;
      ++totalUses;
    }

  // Rank by summed reward; ties by name so the ranking is deterministic.
  std::vector<unsigned> byReward(arms.size());
  std::iota(byReward.begin(), byReward.end(), 0u);
  llvm::sort(byReward, [&](unsigned a, unsigned b) {
    if (arms[a].reward != arms[b].reward)
      return arms[a].reward > arms[b].reward;
    return arms[a].name < arms[b].name;
  });
  std::vector<double> decayed(arms.size());
  double totalDecayed = 0, decayPower = 1;
  for (unsigned arm : byReward) {
    decayPower *= params.decay; // D^rank with rank counted from 1.
    decayed[arm] = decayPower * arms[arm].reward;
    totalDecayed += decayed[arm];
  }

  values.clear();
  double logUses = std::log1p(static_cast<double>(totalUses));
  for (auto [i, arm] : llvm::enumerate(arms)) {
    double frr = totalDecayed > 0 ? decayed[i] / totalDecayed : 0;
    values[arm.name] =
        frr + params.exploration * std::sqrt(2 * logUses / arm.uses);
  }
}

void ColemanAgent::replay(const Module &module) {
  struct CycleRuns {
    int64_t firstTime = std::numeric_limits<int64_t>::max();
    /// Per test that ran: whether any of its runs failed.
    std::map<TestId, bool> failed;
  };
  // Keyed by revision; runs with no revision are their own cycle per time.
  std::map<std::pair<std::string, int64_t>, CycleRuns> cycles;
  for (const Test &test : module.getTests())
    for (const Outcome &run : test.history) {
      if (run.kind == OutcomeKind::Skip)
        continue;
      std::pair<std::string, int64_t> key{run.revision.str(), 0};
      if (run.revision.empty())
        key.second = run.time;
      CycleRuns &cycle = cycles[key];
      cycle.firstTime = std::min(cycle.firstTime, run.time);
      bool isFailure =
          run.kind == OutcomeKind::Fail || run.kind == OutcomeKind::Error;
      cycle.failed[test.index] |= isFailure;
    }

  std::vector<const CycleRuns *> ordered;
  for (const auto &entry : cycles)
    ordered.push_back(&entry.second);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const CycleRuns *a, const CycleRuns *b) {
                     return a->firstTime < b->firstTime;
                   });

  for (const CycleRuns *cycle : ordered) {
    llvm::SmallVector<llvm::StringRef> arms;
    llvm::SmallVector<bool> failed;
    for (const auto &[test, fail] : cycle->failed) {
      arms.push_back(module.getTest(test).name);
      failed.push_back(fail);
    }
    llvm::SmallVector<llvm::StringRef> orderedArms;
    llvm::SmallVector<bool> orderedFailed;
    for (unsigned i : prioritize(arms)) {
      orderedArms.push_back(arms[i]);
      orderedFailed.push_back(failed[i]);
    }
    observe(orderedArms, orderedFailed);
  }
}
