//===- Coleman.h - COLEMAN: a bandit that prioritises tests -----*- C++ -*-===//
//
// COLEMAN (Prado Lima & Vergilio, "A Multi-Armed Bandit Approach for Test
// Case Prioritization in Continuous Integration Environments", IEEE TSE
// 2020) treats every test case as an arm of a multi-armed bandit. After each
// CI cycle each test that ran is rewarded (RNFail or TimeRank) and the
// reward enters a sliding window of the last W cycles. Fitness-Rate-Rank
// credit assignment turns the window into a score per arm,
//
//   Reward_i = Σ rewards of arm i in the window,  n_i = its entries,
//   rank_i   = position of Reward_i in descending order (1 = best),
//   FRR_i    = D^rank_i · Reward_i / Σ_j D^rank_j · Reward_j,
//   Q_i      = FRR_i + C · sqrt(2 · ln(1 + Σ_j n_j) / n_i),
//
// and the next cycle runs tests by descending Q. An arm with no entry in the
// window has an unbounded confidence term and goes first, as UCB plays an
// untried arm. docs/Scheduling.md documents the parameters.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SCHEDULE_COLEMAN_H
#define FASTCI_SCHEDULE_COLEMAN_H

#include "fastci/IR/Module.h"
#include "fastci/Support/EnumNames.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace fastci {

/// How a cycle rewards the tests that ran.
enum class ColemanReward {
  /// RNFail: 1 for a test that failed, 0 otherwise.
  RNFail,
  /// TimeRank: 1 for a failing test; a passing test gets the share of the
  /// cycle's failures ranked at or before it, so passing tests placed ahead
  /// of failures earn less.
  TimeRank,
};

/// The spellings of ColemanReward (schedule's `coleman-reward=` option).
inline constexpr EnumName<ColemanReward> kColemanRewardNames[] = {
    {ColemanReward::RNFail, "rnfail", "1 for a failure"},
    {ColemanReward::TimeRank, "timerank",
     "Failures, and passes by the share of failures ranked before them"},
};

/// The parameters of FRRMAB.
struct ColemanParams {
  /// W: how many past cycles the sliding window keeps.
  unsigned window = 100;
  /// D: decay factor of the rank; 1 weighs every rank equally.
  double decay = 1.0;
  /// C: exploration coefficient.
  double exploration = 0.3;
  /// The reward function.
  ColemanReward reward = ColemanReward::RNFail;
};

/// The FRRMAB agent of COLEMAN.
class ColemanAgent {
public:
  explicit ColemanAgent(ColemanParams params) : params(params) {}

  /// The order in which to run \p arms (indices into it): descending Q,
  /// untried arms first, ties in the given order.
  std::vector<unsigned> prioritize(llvm::ArrayRef<llvm::StringRef> arms) const;

  /// Records a finished cycle: \p order lists the tests run, in the order
  /// prioritize() gave, and \p failed says which of them failed.
  void observe(llvm::ArrayRef<llvm::StringRef> order,
               llvm::ArrayRef<bool> failed);

  /// The Q value of \p arm, or none for an arm absent from the window.
  std::optional<double> getValue(llvm::StringRef arm) const;

  /// Replays every test history of \p module as CI cycles: runs are grouped
  /// by revision (empty revisions: by time), cycles ordered by their first
  /// run, and each cycle is prioritised, then observed.
  void replay(const Module &module);

private:
  /// Recomputes Q for every arm in the window (credit assignment).
  void assignCredit();

  ColemanParams params;
  /// One cycle: each arm that ran with its reward.
  using Cycle = std::vector<std::pair<std::string, double>>;
  std::deque<Cycle> window;
  llvm::StringMap<double> values;
};

} // namespace fastci

#endif // FASTCI_SCHEDULE_COLEMAN_H
