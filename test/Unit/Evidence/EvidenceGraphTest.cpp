//===- EvidenceGraphTest.cpp - The EvidenceGraph analysis -----------------===//
//
// Checks edges, calling contexts cut at depth K, callees including library
// leaves and calls through a library, per-test profiles, and that samples
// count once per stack under recursion.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceGraph.h"
#include "TestModule.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/Evidence/EvidenceMerger.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::test;

namespace {

class EvidenceGraphTest : public ::testing::Test {
protected:
  EvidenceGraphTest() : module(buildTestModule()) {
    Module &m = *module;
    test = m.lookupTest("tests/test_a.py::test_x");
    testX = m.getEntityFrame(m.lookupEntity(kTestX));
    outer = m.getEntityFrame(m.lookupEntity(kOuter));
    inner = m.getEntityFrame(m.lookupEntity(kInner));
    method = m.getEntityFrame(m.lookupEntity(kMethod));
    leaf = m.getLeafFrame("torch.nn.Module.__call__");
  }

  void addSample(std::initializer_list<FrameId> frames, uint64_t count,
                 int64_t rank = -1) {
    EvidenceRecord &record = module->addEvidence(test);
    record.rank = rank;
    record.samples.push_back({module->getStack(frames), count});
  }

  EntityId entity(const char *symbol) { return module->lookupEntity(symbol); }

  std::unique_ptr<Module> module;
  TestId test;
  FrameId testX, outer, inner, method, leaf;
};

TEST_F(EvidenceGraphTest, EdgesContextsAndCallees) {
  addSample({testX, outer, inner}, 4);
  addSample({testX, outer, leaf, method}, 2, /*rank=*/0);
  addSample({testX, outer, leaf, method}, 3, /*rank=*/1);
  EvidenceGraph graph(*module, /*contextDepth=*/1);

  // test_x -> outer, outer -> inner, outer -> leaf and (through it) m.
  ASSERT_EQ(graph.getEdges().size(), 4u);
  llvm::ArrayRef<EvidenceGraph::CallEdge> fromOuter =
      graph.getCallees(entity(kOuter));
  ASSERT_EQ(fromOuter.size(), 3u);
  uint64_t toMethod = 0, toLeaf = 0, toInner = 0;
  for (const EvidenceGraph::CallEdge &edge : fromOuter) {
    toMethod += edge.callee == method ? edge.samples : 0;
    toLeaf += edge.callee == leaf ? edge.samples : 0;
    toInner += edge.callee == inner ? edge.samples : 0;
  }
  EXPECT_EQ(toMethod, 5u);
  EXPECT_EQ(toLeaf, 5u);
  EXPECT_EQ(toInner, 4u);

  const EvidenceGraph::EntityUse *use = graph.lookup(test, entity(kOuter));
  ASSERT_TRUE(use);
  EXPECT_EQ(use->samples, 9u);
  EXPECT_EQ(use->selfSamples, 0u);
  ASSERT_EQ(use->contexts.size(), 1u);
  EXPECT_EQ(use->contexts[0].callers,
            (llvm::SmallVector<EntityId, 4>{entity(kTestX)}));
  EXPECT_EQ(use->callees.size(), 3u);

  // m's context skips the library frame between it and its caller.
  const EvidenceGraph::EntityUse *m = graph.lookup(test, entity(kMethod));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->selfSamples, 5u);
  EXPECT_EQ(m->contexts[0].callers,
            (llvm::SmallVector<EntityId, 4>{entity(kOuter)}));
  EXPECT_EQ(graph.getTestsExecuting(entity(kMethod)),
            (llvm::ArrayRef<TestId>{test}));
  EXPECT_TRUE(graph.getTestsExecuting(entity("pkg.mod.C")).empty());
}

TEST_F(EvidenceGraphTest, ContextDepthComesFromTheModule) {
  addSample({testX, outer, inner}, 1);
  module->getAttrs().set(evidence::attr::kContextDepth, Attribute::getInt(2));
  EvidenceGraph graph(*module);
  EXPECT_EQ(graph.getContextDepth(), 2u);
  const EvidenceGraph::EntityUse *use = graph.lookup(test, entity(kInner));
  ASSERT_TRUE(use);
  EXPECT_EQ(use->contexts[0].callers,
            (llvm::SmallVector<EntityId, 4>{entity(kOuter), entity(kTestX)}));
}

TEST_F(EvidenceGraphTest, RecursionCountsOncePerStack) {
  addSample({testX, outer, outer, outer}, 7);
  EvidenceGraph graph(*module, 3);
  const EvidenceGraph::EntityUse *use = graph.lookup(test, entity(kOuter));
  ASSERT_TRUE(use);
  EXPECT_EQ(use->samples, 7u);
  EXPECT_EQ(use->selfSamples, 7u);
  ASSERT_EQ(graph.getCallees(entity(kOuter)).size(), 1u);
  EXPECT_EQ(graph.getCallees(entity(kOuter))[0].samples, 7u);
  // Three distinct contexts: [test_x], [outer, test_x], [outer, outer, test_x].
  EXPECT_EQ(use->contexts.size(), 3u);
}

TEST_F(EvidenceGraphTest, TestsWithoutEvidence) {
  EvidenceGraph graph(*module, 3);
  EXPECT_FALSE(graph.hasEvidence(test));
  EXPECT_TRUE(graph.getEntityUses(test).empty());
  EXPECT_EQ(graph.lookup(test, entity(kOuter)), nullptr);
}

} // namespace
