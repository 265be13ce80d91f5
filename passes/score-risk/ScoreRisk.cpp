//===- ScoreRisk.cpp - The score-risk pass --------------------------------===//
//
// score-risk{window,decay,lambda,flaky-weight,new-prior} gives every test a
// `risk` and the terms it is made of (`risk_failures`, `risk_change`,
// `risk_flakiness`, `risk_new`), so that a plan can say why a test runs
// early. The model is computeRisk() (lib/Schedule/Risk.cpp); docs/Risk.md
// states it.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Schedule/Risk.h"
#include "fastci/Schedule/ScheduleAttrs.h"
#include <cmath>

using namespace fastci;

namespace {

struct ScoreRiskPass : PassWrapper<ScoreRiskPass> {
  llvm::StringRef getArgument() const override { return "score-risk"; }
  llvm::StringRef getSummary() const override {
    return "Score each test's risk of failing from history and changes";
  }
  llvm::StringRef getDescription() const override {
    return "risk = F + lambda * C, where F is the recency-weighted failure "
           "rate over the last `window` runs (weight `decay`^i, flaky "
           "failures times `flaky-weight`, `new-prior` for tests without "
           "history) and C the larger of the share of the test's sampled "
           "stacks that run changed code and the share of the functions it "
           "executed that changed. Each term is written as an attribute. See "
           "docs/Risk.md.";
  }

  Option<unsigned> window{*this, "window",
                          llvm::cl::desc("Most recent runs considered (W)"),
                          llvm::cl::init(RiskParams().window)};
  Option<double> decay{*this, "decay",
                       llvm::cl::desc("Weight ratio between consecutive runs "
                                      "(gamma, in (0, 1])"),
                       llvm::cl::init(RiskParams().decay)};
  Option<double> lambda{*this, "lambda",
                        llvm::cl::desc("Weight of change relevance (>= 0)"),
                        llvm::cl::init(RiskParams().lambda)};
  Option<double> flakyWeight{
      *this, "flaky-weight",
      llvm::cl::desc("Factor on a flaky failure's weight (rho, in [0, 1])"),
      llvm::cl::init(RiskParams().flakyWeight)};
  Option<double> newPrior{
      *this, "new-prior",
      llvm::cl::desc("Failure term of a test without history (pi, >= 0)"),
      llvm::cl::init(RiskParams().newTestPrior)};

  Statistic numScored{this, "num-scored", "Tests scored"};
  Statistic numNew{this, "num-new", "Tests without history (prior used)"};
  Statistic numFlaky{this, "num-flaky", "Tests with flaky failures"};
  Statistic numChanged{this, "num-change-relevant",
                       "Tests whose samples reach changed code"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    auto reject = [&](const llvm::Twine &message) {
      diag.error(getLoc(), "score-risk option " + message);
      return failure();
    };
    if (window == 0)
      return reject("'window' must be at least 1");
    if (!(decay > 0 && decay <= 1))
      return reject("'decay' must be in (0, 1]");
    if (!(lambda >= 0) || std::isinf(lambda))
      return reject("'lambda' must be a non-negative number");
    if (!(flakyWeight >= 0 && flakyWeight <= 1))
      return reject("'flaky-weight' must be in [0, 1]");
    if (!(newPrior >= 0) || std::isinf(newPrior))
      return reject("'new-prior' must be a non-negative number");
    return success();
  }

  void runOnModule() override {
    RiskParams params;
    params.window = window;
    params.decay = decay;
    params.lambda = lambda;
    params.flakyWeight = flakyWeight;
    params.newTestPrior = newPrior;

    Module &module = getModule();
    std::vector<std::optional<double>> shares =
        computeChangeShares(module, getAnalysis<EvidenceGraph>());
    for (Test &test : module.getTests()) {
      RiskTerms terms =
          computeRisk(test.history, shares[test.index].value_or(0), params);
      test.attrs.set(schedule::attr::kRisk, Attribute::getFloat(terms.risk));
      test.attrs.set(schedule::attr::kRiskFailures,
                     Attribute::getFloat(terms.failures));
      test.attrs.set(schedule::attr::kRiskChange,
                     Attribute::getFloat(terms.changeRelevance));
      test.attrs.set(schedule::attr::kRiskFlakiness,
                     Attribute::getFloat(terms.flakiness));
      test.attrs.set(schedule::attr::kRiskNew, Attribute::getBool(terms.isNew));
      ++numScored;
      numNew += terms.isNew;
      numFlaky += terms.flakiness > 0;
      numChanged += terms.changeRelevance > 0;
    }
    markAllAnalysesPreserved();
  }
};

} // namespace

namespace fastci {
void registerScoreRiskPasses() {
  static PassRegistration<ScoreRiskPass> registration;
}
} // namespace fastci
