//===- LoweringTest.cpp - Workload lowering unit tests --------------------===//
//
// The lowering search against the shipped default schema: scope inference
// from Megatron-style test names, pinned dimensions, constraint satisfaction
// and the cost model, on workloads small enough to check by hand.
//
//===----------------------------------------------------------------------===//
#include "fastci/Workload/Lowering.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

class LoweringTest : public ::testing::Test {
protected:
  void SetUp() override {
    unsigned id = diag.addBuffer(llvm::MemoryBuffer::getMemBuffer(
        getDefaultWorkloadSchemaText(), "default-schema.yaml"));
    std::optional<WorkloadSchema> parsed = parseWorkloadSchema(id, diag);
    ASSERT_TRUE(parsed.has_value());
    schema = std::move(*parsed);
    megatron = schema.lookup("megatron");
    ASSERT_NE(megatron, nullptr);
  }

  fastci::Test &makeTest(llvm::StringRef name, int64_t nproc) {
    fastci::Test &test = module.getTest(module.addTest(name));
    test.attrs.set("nproc", Attribute::getInt(nproc));
    test.cost = Cost{8, 600, 4800};
    return test;
  }

  std::string errors;
  llvm::raw_string_ostream errorStream{errors};
  DiagnosticEngine diag{&errorStream};
  WorkloadSchema schema;
  const Dialect *megatron = nullptr;
  Module module;
};

TEST_F(LoweringTest, InfersScopeFromMegatronNames) {
  EXPECT_EQ(
      inferScope("gpt3_mcore_te_tp2_pp2_resume_dist_optimizer", *megatron),
      (std::vector<std::string>{"dist-optimizer", "pp", "resume", "tp"}));
  // Degree one is no parallelism to validate.
  EXPECT_EQ(inferScope("gpt3_mcore_tp1_pp1", *megatron),
            std::vector<std::string>{});
  EXPECT_EQ(inferScope("moe_ep8_fp8", *megatron),
            (std::vector<std::string>{"ep", "fp8", "moe"}));
}

TEST_F(LoweringTest, NameScopesPinExpertsAndTopK) {
  EXPECT_EQ(inferScope("gpt3_moe_8experts_top2router", *megatron),
            (std::vector<std::string>{"moe", "experts", "router-topk"}));
}

// Megatron's harness resumes a ckpt-resume test from train-iters // 2: the
// lowered run must save there (a multiple of the save interval) and train
// at least 3 steps past it.
TEST_F(LoweringTest, HarnessResumeSavesAtHalfTheSteps) {
  fastci::Test &test = makeTest("gpt3_tp1_pp1_ckpt", 8);
  test.attrs.set(workload::attr::kTestType,
                 Attribute::getString("ckpt-resume"));
  test.workload.set("--train-iters", Attribute::getInt(100));
  test.workload.set("--save-interval", Attribute::getInt(50));
  test.workload.set("--lr-decay-iters", Attribute::getInt(320000));
  std::vector<std::string> scope = harnessScopes(test, *megatron);
  EXPECT_EQ(scope, std::vector<std::string>{"resume"});
  LoweringResult result = lowerWorkload(test, scope, *megatron);
  ASSERT_TRUE(result.lowered) << result.reason;
  int64_t steps = result.overrides.get("--train-iters").asInt().value_or(0);
  int64_t save = result.overrides.get("--save-interval").asInt().value_or(0);
  ASSERT_GT(save, 0);
  EXPECT_EQ((steps / 2) % save, 0);
  EXPECT_GE(steps / 2, save);
  EXPECT_GE(steps - steps / 2, 3);
  EXPECT_EQ(steps, 5);
  // The harness compares it with goldens: steps only, on its metrics.
  EXPECT_EQ(result.goldenSteps, 5);
  EXPECT_EQ(result.goldenMetrics,
            (std::vector<std::string>{"lm loss", "num-zeros"}));
  EXPECT_FALSE(result.goldenInvalidated);

  // Without a save interval there is nothing to resume from: kept, warned.
  fastci::Test &bare = makeTest("gpt3_bare", 8);
  bare.attrs.set(workload::attr::kTestType,
                 Attribute::getString("ckpt-resume"));
  bare.workload.set("--train-iters", Attribute::getInt(100));
  LoweringResult kept = lowerWorkload(bare, {"resume"}, *megatron);
  EXPECT_FALSE(kept.lowered);
  ASSERT_EQ(kept.warnings.size(), 1u);
  EXPECT_EQ(kept.warnings[0],
            "test type 'ckpt-resume' needs --save-interval, which the "
            "workload lacks");
}

TEST_F(LoweringTest, PerLayerListsPinOrKeep) {
  fastci::Test &test = makeTest("gpt3_moe_list", 8);
  test.attrs.set("tolerant", Attribute::getBool(true));
  test.workload.set("--num-layers", Attribute::getInt(4));
  test.workload.set("--train-iters", Attribute::getInt(50));
  test.workload.set("--moe-layer-freq", Attribute::getString("([0]*1+[1]*3)"));
  LoweringResult result = lowerWorkload(test, {}, *megatron);
  EXPECT_FALSE(result.overrides.contains("--num-layers"));
  EXPECT_TRUE(result.pinned.contains("--num-layers"));
  test.workload.set("--moe-layer-freq", Attribute::getString("[0, 1, 1]"));
  LoweringResult kept = lowerWorkload(test, {}, *megatron);
  EXPECT_FALSE(kept.lowered);
  EXPECT_EQ(kept.reason,
            "--moe-layer-freq lists 3 entries but --num-layers is 4");
}

TEST_F(LoweringTest, ShrinksOutsideScopeWithinConstraints) {
  fastci::Test &test = makeTest("gpt_tp2", 4);
  test.workload.set("--tensor-model-parallel-size", Attribute::getInt(2));
  test.workload.set("--num-layers", Attribute::getInt(12));
  test.workload.set("--hidden-size", Attribute::getInt(512));
  test.workload.set("--num-attention-heads", Attribute::getInt(8));
  test.workload.set("--seq-length", Attribute::getInt(1024));
  test.workload.set("--max-position-embeddings", Attribute::getInt(1024));
  test.workload.set("--micro-batch-size", Attribute::getInt(2));
  test.workload.set("--global-batch-size", Attribute::getInt(32));
  test.workload.set("--train-iters", Attribute::getInt(100));
  LoweringResult result = lowerWorkload(test, {"tp"}, *megatron);
  ASSERT_TRUE(result.lowered) << result.reason;
  // Heads stay divisible by tp = 2, hidden by heads, the global batch by
  // micro batch x dp (dp = 4 / 2 = 2), and every minimum holds; the floors
  // keep a hidden size of 64 and 2 micro-batches per dp rank and step
  // (global batch 2 x 1 x 2 = 4).
  EXPECT_EQ(result.overrides.get("--num-attention-heads").getInt(), 2);
  EXPECT_EQ(result.overrides.get("--hidden-size").getInt(), 64);
  EXPECT_EQ(result.overrides.get("--num-layers").getInt(), 1);
  EXPECT_EQ(result.overrides.get("--seq-length").getInt(), 16);
  EXPECT_EQ(result.overrides.get("--max-position-embeddings").getInt(), 16);
  EXPECT_EQ(result.overrides.get("--micro-batch-size").getInt(), 1);
  EXPECT_EQ(result.overrides.get("--global-batch-size").getInt(), 4);
  EXPECT_EQ(result.overrides.get("--train-iters").getInt(), 4);
  EXPECT_FALSE(result.overrides.contains("--tensor-model-parallel-size"));
  EXPECT_EQ(result.pinned.get("--tensor-model-parallel-size").getString(),
            "parallel");
  EXPECT_LT(result.predictedSeconds, 600 * 0.16);
  EXPECT_GT(result.predictedSeconds, 600 * 0.15);
}

TEST_F(LoweringTest, GoldensAllowOnlyStepsUnlessTolerant) {
  fastci::Test &test = makeTest("gpt_tp1_pp1", 1);
  test.attrs.set("golden", Attribute::getString("golden.json"));
  test.workload.set("--num-layers", Attribute::getInt(4));
  test.workload.set("--train-iters", Attribute::getInt(50));
  LoweringResult strict = lowerWorkload(test, {}, *megatron);
  ASSERT_TRUE(strict.lowered);
  EXPECT_EQ(strict.overrides.get("--train-iters").getInt(), 4);
  EXPECT_FALSE(strict.overrides.contains("--num-layers"));
  EXPECT_EQ(strict.goldenSteps, 4);
  EXPECT_FALSE(strict.goldenInvalidated);

  test.attrs.set("tolerant", Attribute::getBool(true));
  LoweringResult tolerant = lowerWorkload(test, {}, *megatron);
  EXPECT_EQ(tolerant.overrides.get("--num-layers").getInt(), 1);
  EXPECT_TRUE(tolerant.goldenInvalidated);
}

TEST_F(LoweringTest, VirtualPipelineDegreeIsPreserved) {
  fastci::Test &test = makeTest("gpt_pp2_vp2", 2);
  test.workload.set("--pipeline-model-parallel-size", Attribute::getInt(2));
  test.workload.set("--num-layers", Attribute::getInt(8));
  test.workload.set("--num-layers-per-virtual-pipeline-stage",
                    Attribute::getInt(2));
  LoweringResult result = lowerWorkload(test, {"pp"}, *megatron);
  ASSERT_TRUE(result.lowered);
  // vp degree = 8 / (2 x 2) = 2 must stay 2: 4 layers, 1 per virtual stage.
  EXPECT_EQ(result.overrides.get("--num-layers").getInt(), 4);
  EXPECT_EQ(
      result.overrides.get("--num-layers-per-virtual-pipeline-stage").getInt(),
      1);
}

TEST_F(LoweringTest, ResumeKeepsACheckpointBeforeTheEnd) {
  fastci::Test &test = makeTest("gpt_resume", 1);
  test.workload.set("--train-iters", Attribute::getInt(100));
  test.workload.set("--save-interval", Attribute::getInt(50));
  LoweringResult result = lowerWorkload(test, {"resume"}, *megatron);
  ASSERT_TRUE(result.lowered);
  // Past the checkpoint by the steps-after-resume floor: 50 + 3.
  EXPECT_EQ(result.overrides.get("--train-iters").getInt(), 53);
  EXPECT_EQ(result.pinned.get("--save-interval").getString(), "scope resume");
  EXPECT_TRUE(llvm::StringRef(result.floors.get("--train-iters").getString())
                  .starts_with("steps-after-resume: "));
}

TEST_F(LoweringTest, FloorsNeverAskForMoreThanTheOriginal) {
  // 12 steps with a checkpoint at 10 is below the floor's 13: the test keeps
  // its 12 (the constraints alone would allow 11), and says which floor.
  fastci::Test &test = makeTest("gpt_resume", 1);
  test.workload.set("--train-iters", Attribute::getInt(12));
  test.workload.set("--save-interval", Attribute::getInt(10));
  LoweringResult result = lowerWorkload(test, {"resume"}, *megatron);
  EXPECT_FALSE(result.lowered);
  EXPECT_TRUE(llvm::StringRef(result.floors.get("--train-iters").getString())
                  .starts_with("steps-after-resume: "));

  LoweringOptions noFloors;
  noFloors.floors = false;
  LoweringResult unfloored =
      lowerWorkload(test, {"resume"}, *megatron, noFloors);
  ASSERT_TRUE(unfloored.lowered);
  EXPECT_EQ(unfloored.overrides.get("--train-iters").getInt(), 11);
  EXPECT_TRUE(unfloored.floors.empty());
}

TEST_F(LoweringTest, PinnedFollowerKeepsTheLearningRateSchedule) {
  // --lr-decay-iters defaults to --train-iters: cutting 50 steps to 4 would
  // compress the schedule, so the original 50 is set explicitly.
  fastci::Test &test = makeTest("gpt_tp1_pp1", 1);
  test.attrs.set("golden", Attribute::getString("golden.json"));
  test.workload.set("--train-iters", Attribute::getInt(50));
  LoweringResult result = lowerWorkload(test, {}, *megatron);
  ASSERT_TRUE(result.lowered);
  EXPECT_EQ(result.overrides.get("--train-iters").getInt(), 4);
  EXPECT_EQ(result.overrides.get("--lr-decay-iters").getInt(), 50);
  EXPECT_EQ(result.goldenSteps, 4);
  EXPECT_FALSE(result.goldenInvalidated);

  // A test validating the schedule keeps all of it.
  LoweringResult schedule = lowerWorkload(test, {"lr-schedule"}, *megatron);
  EXPECT_FALSE(schedule.lowered);
}

TEST_F(LoweringTest, InvalidOriginalWorkloadIsKeptWithReason) {
  fastci::Test &test = makeTest("gpt_tp2", 2);
  test.workload.set("--tensor-model-parallel-size", Attribute::getInt(2));
  test.workload.set("--num-attention-heads", Attribute::getInt(3));
  test.workload.set("--train-iters", Attribute::getInt(10));
  LoweringResult result = lowerWorkload(test, {"tp"}, *megatron);
  EXPECT_FALSE(result.lowered);
  EXPECT_EQ(result.reason,
            "the original workload violates 'heads divisible by tp'");
  EXPECT_EQ(result.predictedSeconds, 600);
}

TEST_F(LoweringTest, NothingToLower) {
  fastci::Test &test = makeTest("gpt_convergence", 1);
  test.workload.set("--train-iters", Attribute::getInt(10));
  LoweringResult result = lowerWorkload(test, {"convergence"}, *megatron);
  EXPECT_FALSE(result.lowered);
  EXPECT_EQ(result.pinned.get("--train-iters").getString(),
            "scope convergence");
}

TEST_F(LoweringTest, TestTurnsAFloorOff) {
  fastci::Test &test = makeTest("gpt_steps", 1);
  test.workload.set("--train-iters", Attribute::getInt(100));
  LoweringOptions options;
  options.floorOverrides.push_back(
      {"compared-steps", /*off=*/true, 0, "goldens compare one step"});
  LoweringResult result = lowerWorkload(test, {}, *megatron, options);
  ASSERT_TRUE(result.lowered);
  // The constraints alone: 1 step (4 with compared-steps).
  EXPECT_EQ(result.overrides.get("--train-iters").getInt(), 1);
  EXPECT_EQ(result.floors.get("--train-iters").getString(),
            "compared-steps, off for this test: goldens compare one step");
}

TEST_F(LoweringTest, TestRaisesAFloorUpToTheOriginal) {
  fastci::Test &test = makeTest("gpt_steps", 1);
  test.workload.set("--train-iters", Attribute::getInt(100));
  LoweringOptions options;
  options.floorOverrides.push_back({"compared-steps", false, 20, ""});
  LoweringResult result = lowerWorkload(test, {}, *megatron, options);
  ASSERT_TRUE(result.lowered);
  EXPECT_EQ(result.overrides.get("--train-iters").getInt(), 20);
  EXPECT_TRUE(llvm::StringRef(result.floors.get("--train-iters").getString())
                  .starts_with("compared-steps, raised to at least 20 for "
                               "this test: "));

  // Past the original 12 steps the raise is capped there: nothing shrinks.
  test.workload.set("--train-iters", Attribute::getInt(12));
  LoweringResult capped = lowerWorkload(test, {}, *megatron, options);
  EXPECT_FALSE(capped.lowered);
  EXPECT_TRUE(llvm::StringRef(capped.floors.get("--train-iters").getString())
                  .starts_with("compared-steps, raised to at least 20 for "
                               "this test, capped at the original 12: "));

  // Without floors, the overrides do nothing and are not listed.
  options.floors = false;
  LoweringResult unfloored = lowerWorkload(test, {}, *megatron, options);
  EXPECT_EQ(unfloored.overrides.get("--train-iters").getInt(), 1);
  EXPECT_TRUE(unfloored.floors.empty());
}

TEST_F(LoweringTest, ReadsAndChecksFloorOverrides) {
  fastci::Test &test = makeTest("gpt", 1);
  std::optional<std::vector<FloorOverride>> none =
      readFloorOverrides(test, *megatron, diag);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());

  AttrDict overrides;
  overrides.set("model-width",
                Attribute::getDict({{"off", Attribute::getString("why")}}));
  overrides.set("compared-steps",
                Attribute::getDict({{"at-least", Attribute::getInt(8)}}));
  test.attrs.set(kFloorOverridesAttr, Attribute::getDict(overrides));
  std::optional<std::vector<FloorOverride>> read =
      readFloorOverrides(test, *megatron, diag);
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].name, "compared-steps");
  EXPECT_FALSE((*read)[0].off);
  EXPECT_EQ((*read)[0].atLeast, 8);
  EXPECT_EQ((*read)[1].name, "model-width");
  EXPECT_TRUE((*read)[1].off);
  EXPECT_EQ((*read)[1].why, "why");
  EXPECT_TRUE(errors.empty());

  overrides.set("model-widht",
                Attribute::getDict({{"off", Attribute::getString("why")}}));
  test.attrs.set(kFloorOverridesAttr, Attribute::getDict(overrides));
  EXPECT_FALSE(readFloorOverrides(test, *megatron, diag).has_value());
  EXPECT_NE(errors.find("unknown floor 'model-widht'"), std::string::npos);
}

} // namespace
