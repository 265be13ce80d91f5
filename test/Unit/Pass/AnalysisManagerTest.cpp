//===- AnalysisManagerTest.cpp - Analysis caching and invalidation --------===//
//
// Caching, preservation and transitive invalidation through dependencies,
// observed through construction counters.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/PassManager.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {
int numBaseBuilt = 0, numDerivedBuilt = 0, numOtherBuilt = 0;

struct BaseAnalysis {
  explicit BaseAnalysis(Module &) { ++numBaseBuilt; }
};
/// Built from BaseAnalysis, so it depends on it.
struct DerivedAnalysis {
  DerivedAnalysis(Module &, AnalysisManager &am)
      : base(am.getAnalysis<BaseAnalysis>()) {
    ++numDerivedBuilt;
  }
  BaseAnalysis &base;
};
struct OtherAnalysis {
  explicit OtherAnalysis(Module &) { ++numOtherBuilt; }
};

class AnalysisManagerTest : public ::testing::Test {
protected:
  void SetUp() override { numBaseBuilt = numDerivedBuilt = numOtherBuilt = 0; }
  Module module;
  AnalysisManager am{module, nullptr};
};

TEST_F(AnalysisManagerTest, ComputesOnceAndCaches) {
  BaseAnalysis &first = am.getAnalysis<BaseAnalysis>();
  BaseAnalysis &second = am.getAnalysis<BaseAnalysis>();
  EXPECT_EQ(&first, &second);
  EXPECT_EQ(numBaseBuilt, 1);
  EXPECT_EQ(am.getCachedAnalysis<OtherAnalysis>(), nullptr);
}

TEST_F(AnalysisManagerTest, InvalidatesWhatIsNotPreserved) {
  am.getAnalysis<BaseAnalysis>();
  am.getAnalysis<OtherAnalysis>();
  PreservedAnalyses preserved;
  preserved.preserve<OtherAnalysis>();
  am.invalidate(preserved);
  EXPECT_FALSE(am.isCached<BaseAnalysis>());
  EXPECT_TRUE(am.isCached<OtherAnalysis>());
}

TEST_F(AnalysisManagerTest, PreserveAllKeepsEverything) {
  am.getAnalysis<BaseAnalysis>();
  PreservedAnalyses preserved;
  preserved.preserveAll();
  am.invalidate(preserved);
  EXPECT_TRUE(am.isCached<BaseAnalysis>());
}

TEST_F(AnalysisManagerTest, InvalidatingADependencyInvalidatesDependents) {
  am.getAnalysis<DerivedAnalysis>();
  EXPECT_TRUE(am.isCached<BaseAnalysis>());
  // DerivedAnalysis holds a reference into BaseAnalysis, so preserving it
  // alone cannot keep it.
  PreservedAnalyses preserved;
  preserved.preserve<DerivedAnalysis>();
  am.invalidate(preserved);
  EXPECT_FALSE(am.isCached<BaseAnalysis>());
  EXPECT_FALSE(am.isCached<DerivedAnalysis>());
  am.getAnalysis<DerivedAnalysis>();
  EXPECT_EQ(numBaseBuilt, 2);
  EXPECT_EQ(numDerivedBuilt, 2);
}

TEST_F(AnalysisManagerTest, PreservingADependencyKeepsIt) {
  am.getAnalysis<DerivedAnalysis>();
  PreservedAnalyses preserved;
  preserved.preserve<BaseAnalysis>();
  am.invalidate(preserved);
  EXPECT_TRUE(am.isCached<BaseAnalysis>());
  EXPECT_FALSE(am.isCached<DerivedAnalysis>());
}

/// Records whether it saw its analysis cached, and preserves per option.
struct ProbePass : PassWrapper<ProbePass> {
  llvm::StringRef getArgument() const override { return "probe"; }
  llvm::StringRef getSummary() const override { return "probe"; }
  explicit ProbePass(bool preserve, std::vector<bool> &sawCached)
      : preserve(preserve), sawCached(sawCached) {}
  void runOnModule() override {
    sawCached.push_back(getCachedAnalysis<BaseAnalysis>() != nullptr);
    getAnalysis<BaseAnalysis>();
    if (preserve)
      markAnalysesPreserved<BaseAnalysis>();
  }
  bool preserve;
  std::vector<bool> &sawCached;
};

TEST_F(AnalysisManagerTest, PassManagerInvalidatesBetweenPasses) {
  std::vector<bool> sawCached;
  PassManager pm;
  pm.enableVerifier(false);
  pm.addPass(std::make_unique<ProbePass>(/*preserve=*/true, sawCached));
  pm.addPass(std::make_unique<ProbePass>(/*preserve=*/false, sawCached));
  pm.addPass(std::make_unique<ProbePass>(/*preserve=*/false, sawCached));
  DiagnosticEngine diag(&llvm::nulls());
  ASSERT_TRUE(succeeded(pm.run(module, diag)));
  EXPECT_EQ(sawCached, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(numBaseBuilt, 2);
}
} // namespace
