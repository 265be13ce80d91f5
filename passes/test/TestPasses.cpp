//===- TestPasses.cpp - Passes that exist to test FastCI itself -----------===//
//
// Small passes the lit and unit tests of the pass infrastructure drive:
//  * test-parallel-annotate does per-test work in parallelFor and merges it
//    in index order, so --threads=1 and --threads=8 must print identical IR;
//  * test-fail fails, with or without a diagnostic;
//  * test-noop does nothing and preserves analyses only when asked, to
//    observe caching and invalidation;
//  * test-break-ir leaves IR the verifier rejects, for --verify-each;
//  * test-options declares one option of every supported type;
//  * test-pipeline is a named pipeline with an option.
// By convention (isTestPassArgument) they are left out of docs/Passes.md.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/Parallel.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace fastci;

namespace {
/// A summary of the module's tests; an analysis for caching tests.
struct TestSummaryAnalysis {
  explicit TestSummaryAnalysis(Module &module)
      : numTests(module.getNumTests()) {}
  size_t numTests;
};

struct TestParallelAnnotatePass : PassWrapper<TestParallelAnnotatePass> {
  llvm::StringRef getArgument() const override {
    return "test-parallel-annotate";
  }
  llvm::StringRef getSummary() const override {
    return "Annotate each test with a digest computed in parallel";
  }

  Option<int> rounds{*this, "rounds",
                     llvm::cl::desc("Hashing rounds per test (work per index)"),
                     llvm::cl::init(64)};
  Option<unsigned> jobs{*this, "jobs",
                        llvm::cl::desc("Most threads to use; 0 for --threads"),
                        llvm::cl::init(0u)};
  Option<std::string> warnTag{
      *this, "warn-tag",
      llvm::cl::desc("Warn, in test order, about tests carrying this tag")};
  Statistic numAnnotated{this, "num-annotated", "Number of tests annotated"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    if (rounds < 1) {
      diag.error(rounds.getLoc().isValid() ? rounds.getLoc() : getLoc(),
                 "'rounds' must be at least 1");
      return failure();
    }
    return success();
  }

  void runOnModule() override {
    Module &module = getModule();
    size_t numTests = getAnalysis<TestSummaryAnalysis>().numTests;
    // Workers only read the module and write their own slot.
    struct Result {
      uint64_t digest = 0;
      bool warn = false;
    };
    std::vector<Result> results = parallelMap<Result>(
        numTests,
        [&](size_t index) {
          const Test &test = module.getTest(index);
          Result result;
          result.digest = llvm::xxh3_64bits(test.name);
          for (int round = 0; round < rounds; ++round)
            result.digest = llvm::xxh3_64bits(
                llvm::StringRef(reinterpret_cast<const char *>(&result.digest),
                                sizeof(result.digest)));
          result.warn = !warnTag.getValue().empty() &&
                        llvm::is_contained(test.tags, warnTag.getValue());
          ++numAnnotated;
          return result;
        },
        jobs);
    // The merge runs in test order, so output and diagnostics are the same
    // for every thread count.
    for (auto [index, result] : llvm::enumerate(results)) {
      Test &test = module.getTest(index);
      test.attrs.set("digest",
                     Attribute::getString(llvm::utohexstr(result.digest)));
      if (result.warn)
        getDiagnostics().warning(test.loc, "test '" + test.name +
                                               "' is tagged '" +
                                               warnTag.getValue() + "'");
    }
    markAnalysesPreserved<TestSummaryAnalysis>();
  }
};

struct TestFailPass : PassWrapper<TestFailPass> {
  llvm::StringRef getArgument() const override { return "test-fail"; }
  llvm::StringRef getSummary() const override {
    return "Fail, with or without a diagnostic";
  }

  Option<bool> diagnose{*this, "diagnose",
                        llvm::cl::desc("Report an error before failing"),
                        llvm::cl::init(true)};
  Option<std::string> message{*this, "message",
                              llvm::cl::desc("The error to report"),
                              llvm::cl::init("test-fail was asked to fail")};

  void runOnModule() override {
    if (diagnose) {
      Module &module = getModule();
      llvm::SMLoc loc = module.getNumTests() ? module.getTest(0).loc : getLoc();
      getDiagnostics().error(loc, message.getValue());
    }
    signalPassFailure();
  }
};

struct TestNoopPass : PassWrapper<TestNoopPass> {
  llvm::StringRef getArgument() const override { return "test-noop"; }
  llvm::StringRef getSummary() const override {
    return "Change nothing; preserve analyses only when asked";
  }

  Option<bool> preserve{*this, "preserve",
                        llvm::cl::desc("Declare every analysis preserved"),
                        llvm::cl::init(false)};

  void runOnModule() override {
    if (preserve)
      markAllAnalysesPreserved();
  }
};

struct TestBreakIRPass : PassWrapper<TestBreakIRPass> {
  llvm::StringRef getArgument() const override { return "test-break-ir"; }
  llvm::StringRef getSummary() const override {
    return "Give the first test a negative cost, which does not verify";
  }
  void runOnModule() override {
    Module &module = getModule();
    if (module.getNumTests())
      module.getTest(0).cost.seconds = -1;
  }
};

enum class TestPolicy { Greedy, RoundRobin };

struct TestOptionsPass : PassWrapper<TestOptionsPass> {
  llvm::StringRef getArgument() const override { return "test-options"; }
  llvm::StringRef getSummary() const override {
    return "Declare one option of every type";
  }
  llvm::StringRef getDescription() const override {
    return "Exercises option parsing and printing; changes nothing.";
  }

  Option<int> count{*this, "count", llvm::cl::desc("An int"),
                    llvm::cl::init(4)};
  Option<double> ratio{*this, "ratio", llvm::cl::desc("A float"),
                       llvm::cl::init(0.5)};
  Option<bool> flag{*this, "flag", llvm::cl::desc("A bool"),
                    llvm::cl::init(false)};
  Option<std::string> label{*this, "label", llvm::cl::desc("A string"),
                            llvm::cl::init("none")};
  ListOption<std::string> files{*this, "files",
                                llvm::cl::desc("A list of strings")};
  ListOption<int> sizes{*this, "sizes", llvm::cl::desc("A list of ints")};
  Option<TestPolicy> policy{
      *this, "policy", llvm::cl::desc("An enum"),
      llvm::cl::init(TestPolicy::Greedy),
      llvm::cl::values(
          clEnumValN(TestPolicy::Greedy, "greedy", "Largest first"),
          clEnumValN(TestPolicy::RoundRobin, "round-robin", "In turn"))};

  void runOnModule() override { markAllAnalysesPreserved(); }
};

/// Options of test-pipeline.
struct TestPipelineOptions : PassPipelineOptions<TestPipelineOptions> {
  Option<int> rounds{*this, "rounds",
                     llvm::cl::desc("Forwarded to test-parallel-annotate"),
                     llvm::cl::init(8)};
};
} // namespace

namespace fastci {
void registerTestPasses() {
  PassRegistration<TestParallelAnnotatePass>();
  PassRegistration<TestFailPass>();
  PassRegistration<TestNoopPass>();
  PassRegistration<TestOptionsPass>();
  PassRegistration<TestBreakIRPass>();
  PassPipelineRegistration<TestPipelineOptions>(
      "test-pipeline", "Annotate, then do nothing",
      [](PassManager &pm, const TestPipelineOptions &options) {
        auto annotate = std::make_unique<TestParallelAnnotatePass>();
        annotate->rounds = options.rounds.getValue();
        pm.addPass(std::move(annotate));
        pm.addPass(std::make_unique<TestNoopPass>());
      });
}
} // namespace fastci
