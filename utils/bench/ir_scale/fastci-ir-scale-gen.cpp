//===- fastci-ir-scale-gen.cpp - The IR scale benchmark -------------------===//
//
// Generates the module of the IR scale target (by default 100k entities, 10k
// tests, 1M distinct sampled stacks and 10M samples) in any on-disk form, and
// in `--load` mode reads a module back and reports the load time and the
// process's peak resident set, which is what run.sh compares against the
// 5 s / 1 GiB target. The generator is deterministic for a given --seed.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Parser.h"
#include "fastci/IR/Printer.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <random>
#include <sys/resource.h>

using namespace fastci;

static llvm::cl::opt<std::string>
    outputFilename("o", llvm::cl::desc("Write the generated module here"),
                   llvm::cl::value_desc("file"), llvm::cl::init("-"));
static llvm::cl::opt<ModuleFormat>
    emit("emit", llvm::cl::desc("Format of the generated module"),
         llvm::cl::init(ModuleFormat::Bytecode),
         llvm::cl::values(clEnumValN(ModuleFormat::Text, "fir", "textual IR"),
                          clEnumValN(ModuleFormat::JSON, "json", "JSON"),
                          clEnumValN(ModuleFormat::Bytecode, "bc", "binary")));
static llvm::cl::opt<std::string>
    loadFilename("load", llvm::cl::desc("Only load this module and report"),
                 llvm::cl::value_desc("file"));
static llvm::cl::opt<unsigned>
    numFiles("files", llvm::cl::desc("Python files (100 entities each)"),
             llvm::cl::init(1000));
static llvm::cl::opt<unsigned> numTests("tests", llvm::cl::desc("Tests"),
                                        llvm::cl::init(10000));
static llvm::cl::opt<unsigned>
    stacksPerTest("stacks-per-test",
                  llvm::cl::desc("Distinct sampled stacks per test"),
                  llvm::cl::init(100));
static llvm::cl::opt<unsigned>
    recordsPerTest("records-per-test",
                   llvm::cl::desc("Evidence records (ranks) per test; each "
                                  "samples all of the test's stacks"),
                   llvm::cl::init(10));
static llvm::cl::opt<unsigned> seed("seed", llvm::cl::init(1));

/// Peak resident set of this process, in MiB.
static double getPeakRSSMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0; // Linux reports KiB.
}

static int load() {
  auto start = std::chrono::steady_clock::now();
  DiagnosticEngine diag;
  std::unique_ptr<Module> module = parseModuleFile(loadFilename, diag);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!module)
    return 1;
  size_t samples = 0;
  for (const EvidenceRecord &record : module->getEvidence())
    samples += record.samples.size();
  llvm::outs() << llvm::formatv(
      "load_seconds={0:F3} peak_rss_mib={1:F1} entities={2} tests={3} "
      "stacks={4} samples={5}\n",
      seconds, getPeakRSSMiB(), module->getNumEntities(), module->getNumTests(),
      module->getNumStacks(), samples);
  return 0;
}

/// Builds the synthetic module: files of one module, 10 classes and 88
/// functions each; tests whose stacks share a short prefix (as real stacks
/// share the runner and the model's forward pass) and then branch at random.
static std::unique_ptr<Module> generate() {
  std::mt19937_64 rng(seed);
  auto module = std::make_unique<Module>();
  module->getAttrs().set("revision", Attribute::getString("0123abcd"));
  std::vector<EntityId> functions;
  for (unsigned f = 0; f < numFiles; ++f) {
    std::string path =
        "pkg/sub" + std::to_string(f % 37) + "/mod" + std::to_string(f) + ".py";
    std::string name =
        "pkg.sub" + std::to_string(f % 37) + ".mod" + std::to_string(f);
    EntityId file = module->addEntity(EntityKind::File, path);
    EntityId mod = module->addEntity(EntityKind::Module, name, file,
                                     {1, 0, 2000, 0}, rng());
    for (unsigned c = 0; c < 10; ++c) {
      std::string cls = name + ".Class" + std::to_string(c);
      uint32_t line = 1 + c * 200;
      EntityId clsId = module->addEntity(EntityKind::Class, cls, mod,
                                         {line, 0, line + 199, 0}, rng());
      for (unsigned m = 0; m < 8; ++m)
        functions.push_back(module->addEntity(
            EntityKind::Function, cls + ".method" + std::to_string(m), clsId,
            {line + 1 + m * 20, 4, line + 20 + m * 20, 0}, rng()));
    }
    for (unsigned g = 0; g < 8; ++g)
      functions.push_back(module->addEntity(
          EntityKind::Function, name + ".helper" + std::to_string(g), mod,
          {1, 0, 1, 10}, rng()));
  }
  std::vector<FrameId> leaves;
  for (unsigned l = 0; l < 1000; ++l)
    leaves.push_back(module->getLeafFrame("torch.ops.op" + std::to_string(l)));

  std::uniform_int_distribution<size_t> pickFunction(0, functions.size() - 1);
  std::uniform_int_distribution<size_t> pickLeaf(0, leaves.size() - 1);
  std::uniform_int_distribution<unsigned> pickDepth(2, 6);
  std::uniform_int_distribution<uint64_t> pickCount(1, 500);
  std::vector<StackId> testStacks;
  for (unsigned t = 0; t < numTests; ++t) {
    TestId test = module->addTest("tests/test_" + std::to_string(t / 50) +
                                  ".py::test_case_" + std::to_string(t));
    Test &info = module->getTest(test);
    info.entry = functions[pickFunction(rng)];
    info.cost =
        Cost{int64_t(t % 8), 30.0 + t % 100, (30.0 + t % 100) * (t % 8)};
    info.history.push_back(
        Outcome{module->intern("0123abcd"), 1700000000 + t,
                t % 13 ? OutcomeKind::Pass : OutcomeKind::Fail, 31.5});

    // A common prefix, then distinct random tails: the stack set of a test.
    StackId prefix =
        module->getStack(kEmptyStack, module->getEntityFrame(info.entry));
    prefix = module->getStack(
        prefix, module->getEntityFrame(functions[pickFunction(rng)]));
    testStacks.clear();
    while (testStacks.size() < stacksPerTest) {
      StackId stack = prefix;
      for (unsigned d = pickDepth(rng); d; --d)
        stack = module->getStack(
            stack, module->getEntityFrame(functions[pickFunction(rng)]));
      stack = module->getStack(stack, leaves[pickLeaf(rng)]);
      if (llvm::is_contained(testStacks, stack))
        continue;
      testStacks.push_back(stack);
    }
    for (unsigned r = 0; r < recordsPerTest; ++r) {
      EvidenceRecord &record = module->addEvidence(test);
      record.pid = 1000 + r;
      record.rank = r;
      record.revision = module->intern("0123abcd");
      record.rate = 100.0;
      record.samples.reserve(testStacks.size());
      for (StackId stack : testStacks)
        record.samples.push_back({stack, pickCount(rng)});
    }
  }
  return module;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "FastCI IR scale benchmark generator\n");
  if (!loadFilename.empty())
    return load();
  std::unique_ptr<Module> module = generate();
  std::error_code ec;
  llvm::ToolOutputFile out(outputFilename, ec, llvm::sys::fs::OF_None);
  if (ec) {
    llvm::errs() << outputFilename << ": error: " << ec.message() << '\n';
    return 1;
  }
  writeModule(*module, emit, out.os());
  out.keep();
  return 0;
}
