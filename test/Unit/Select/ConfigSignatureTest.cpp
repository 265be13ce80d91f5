//===- ConfigSignatureTest.cpp - Unit tests of configuration signatures ---===//
//
// Signatures must separate what changes behaviour (parallel degrees,
// precision, scope) and nothing else: defaults spelled out and shrinkable
// dimensions must not split equivalent tests.
//
//===----------------------------------------------------------------------===//
#include "fastci/Select/ConfigSignature.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

ConfigSignatureBuilder buildDefault() {
  DiagnosticEngine diag;
  std::optional<WorkloadSchema> schema =
      parseWorkloadSchema(diag.addBuffer(llvm::MemoryBuffer::getMemBuffer(
                              getDefaultWorkloadSchemaText(), "<default>")),
                          diag);
  EXPECT_TRUE(schema.has_value());
  return ConfigSignatureBuilder(std::move(*schema));
}

TEST(ConfigSignatureTest, BehaviourChangingDimensionsOnly) {
  ConfigSignatureBuilder builder = buildDefault();
  Module module;
  // Tests live in a vector: add them all before holding references.
  for (const char *name : {"base", "pp1", "tp2", "fp8", "scoped", "reordered"})
    module.addTest(name);
  fastci::Test &base = module.getTest(module.lookupTest("base"));
  base.attrs.set("dialect", Attribute::getString("megatron"));
  std::string baseSignature = builder.getSignature(base);

  fastci::Test &explicitDefault = module.getTest(module.lookupTest("pp1"));
  explicitDefault.attrs = base.attrs;
  explicitDefault.workload.set("--pipeline-model-parallel-size",
                               Attribute::getInt(1));
  explicitDefault.workload.set("--num-layers", Attribute::getInt(2));
  EXPECT_EQ(builder.getSignature(explicitDefault), baseSignature);

  fastci::Test &tp = module.getTest(module.lookupTest("tp2"));
  tp.attrs = base.attrs;
  tp.workload.set("--tensor-model-parallel-size", Attribute::getInt(2));
  EXPECT_NE(builder.getSignature(tp), baseSignature);

  fastci::Test &fp8 = module.getTest(module.lookupTest("fp8"));
  fp8.attrs = base.attrs;
  fp8.workload.set("--fp8-format", Attribute::getString("hybrid"));
  EXPECT_NE(builder.getSignature(fp8), baseSignature);

  fastci::Test &scoped = module.getTest(module.lookupTest("scoped"));
  scoped.attrs = base.attrs;
  scoped.scope = {"tp", "resume"};
  fastci::Test &reordered = module.getTest(module.lookupTest("reordered"));
  reordered.attrs = base.attrs;
  reordered.scope = {"resume", "tp"};
  EXPECT_NE(builder.getSignature(scoped), baseSignature);
  EXPECT_EQ(builder.getSignature(scoped), builder.getSignature(reordered));
}

} // namespace
