//===- SelectorTest.cpp - Unit tests of selection and static reach --------===//
//
// The lit tests cover each rule through the pass; these check the library
// API directly: rule names, region semantics and static chains.
//
//===----------------------------------------------------------------------===//
#include "fastci/Select/Selector.h"
#include "fastci/Select/ChangeSet.h"
#include "fastci/Select/StaticReach.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

TEST(SelectionRuleTest, NamesRoundTrip) {
  for (size_t i = 0; i != kNumSelectionRules; ++i) {
    auto rule = static_cast<SelectionRule>(i);
    EXPECT_EQ(parseSelectionRule(stringifySelectionRule(rule)), rule);
  }
  EXPECT_FALSE(parseSelectionRule("exec"));
  EXPECT_TRUE(isFallbackRule(SelectionRule::SamePackage));
  EXPECT_FALSE(isFallbackRule(SelectionRule::Executes));
}

/// pkg/m.py: module m > class C > method C.f; function g calling C.f.
struct Fixture {
  Module module;
  EntityId file, mod, cls, method, g;
  Fixture() {
    file = module.addEntity(EntityKind::File, "pkg/m.py");
    mod = module.addEntity(EntityKind::Module, "pkg.m", file, {1, 0, 50, 0});
    cls = module.addEntity(EntityKind::Class, "pkg.m.C", mod, {2, 0, 20, 0});
    method =
        module.addEntity(EntityKind::Function, "pkg.m.C.f", cls, {3, 4, 10, 0});
    g = module.addEntity(EntityKind::Function, "pkg.m.g", mod, {30, 0, 40, 0});
    module.addEdge({EdgeKind::Call, g, method, "", 35, {}});
  }
};

TEST(ChangeSetTest, RegionsAndCosmeticChanges) {
  Fixture f;
  f.module.addChange(ChangeKind::Cosmetic, f.g);
  Change &change = f.module.addChange(ChangeKind::Modified, f.cls);
  change.lines = {{4, 6}, {9, 9}};
  ChangeSet changes(f.module);
  ASSERT_EQ(changes.getChanges().size(), 1u);
  const RelevantChange &relevant = changes.getChanges()[0];
  EXPECT_EQ(relevant.region, (std::vector<EntityId>{f.cls, f.method}));
  EXPECT_EQ(relevant.numLines, 4u);
  EXPECT_TRUE(changes.isChangedEntity(f.cls));
  EXPECT_FALSE(changes.isChangedEntity(f.g));
  // The class holds the change: the file is not changed as a whole.
  EXPECT_FALSE(changes.isWholeFileChange("pkg/m.py"));
}

TEST(ChangeSetTest, WholeFileChanges) {
  Fixture f;
  f.module.addChange(ChangeKind::Modified, f.g);
  f.module.addChange(ChangeKind::Modified, "pkg.data.X", "pkg/data.py");
  f.module.addChange(ChangeKind::Deleted, "pkg.old.f", "pkg/old.py");
  f.module.addChangedFile("tests/test_new.py", "added");
  f.module.addChangedFile("tests/test_gone.py", "deleted");
  ChangeSet changes(f.module);
  EXPECT_FALSE(changes.isWholeFileChange("pkg/m.py"));
  EXPECT_TRUE(changes.isWholeFileChange("pkg/data.py"));
  EXPECT_FALSE(changes.isWholeFileChange("pkg/old.py"));
  EXPECT_TRUE(changes.isWholeFileChange("tests/test_new.py"));
  EXPECT_FALSE(changes.isWholeFileChange("tests/test_gone.py"));
}

TEST(ChangeSetTest, ParentCycleDoesNotHang) {
  Module module;
  EntityId a = module.addEntity(EntityKind::Function, "a");
  EntityId b = module.addEntity(EntityKind::Function, "b", a);
  module.getEntity(a).parent = b;
  module.addChange(ChangeKind::Modified, a);
  ChangeSet changes(module);
  EXPECT_EQ(changes.getChanges()[0].region, (std::vector<EntityId>{a, b}));
}

TEST(StaticReachTest, ChainThroughCallAndRegion) {
  Fixture f;
  ChangeSet changes(f.module);
  StaticReach reach(changes);
  StaticPaths paths = reach.findReaching(f.cls, {}, 2);
  ASSERT_EQ(paths.getEntities().size(), 1u);
  EXPECT_EQ(paths.getEntities()[0].first, f.g);
  EXPECT_EQ(paths.getEntities()[0].second.hops, 1u);
  EXPECT_EQ(paths.formatChain(f.module, f.g),
            R"(@"pkg.m.g" calls @"pkg.m.C.f" in @"pkg.m.C")");
  EXPECT_TRUE(reach.findReaching(f.cls, {}, 0).getEntities().empty());
}

TEST(SelectorTest, SampledCallerAndExecutes) {
  Fixture f;
  TestId t1 = f.module.addTest("t1"), t2 = f.module.addTest("t2");
  FrameId gFrame = f.module.getEntityFrame(f.g);
  FrameId fFrame = f.module.getEntityFrame(f.method);
  f.module.addEvidence(t1).samples = {{f.module.getStack({gFrame}), 10}};
  f.module.addEvidence(t2).samples = {{f.module.getStack({gFrame, fFrame}), 4}};
  f.module.addChange(ChangeKind::Modified, f.method);
  EvidenceGraph graph(f.module, 3);
  DiagnosticEngine diag;
  SelectionStats stats;
  ASSERT_TRUE(succeeded(
      selectAffectedTests(f.module, graph, SelectOptions(), diag, &stats)));
  EXPECT_EQ(f.module.getTest(t1).attrs.get("rule").asString(),
            std::optional<llvm::StringRef>("sampled-caller"));
  EXPECT_EQ(
      f.module.getTest(t2).attrs.get("reason").asString(),
      std::optional<llvm::StringRef>(R"(executes @"pkg.m.C.f" (4 samples))"));
  EXPECT_EQ(stats.selected, 2u);
  EXPECT_EQ(stats.byRule[size_t(SelectionRule::SampledCaller)], 1u);
}

} // namespace
