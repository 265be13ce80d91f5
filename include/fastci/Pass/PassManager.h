//===- PassManager.h - Running a pipeline of passes -------------*- C++ -*-===//
//
// A PassManager owns an ordered list of passes and runs them over a Module.
// It initializes every pass before running any (so a bad option never
// half-runs a pipeline), stops at the first failure, makes sure every failure
// carries a diagnostic, invalidates the analyses each pass did not preserve,
// verifies the IR after each pass unless told not to, and calls its
// instrumentation around every pass and analysis.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_PASSMANAGER_H
#define FASTCI_PASS_PASSMANAGER_H

#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassInstrumentation.h"
#include "llvm/ADT/StringSet.h"
#include <memory>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fastci {

namespace detail {
class PassTiming;
} // namespace detail

/// What --print-ir-* asked for.
struct IRPrintingConfig {
  /// Print before passes with these arguments.
  llvm::StringSet<> beforePasses;
  /// Print after passes with these arguments.
  llvm::StringSet<> afterPasses;
  /// Print after every pass.
  bool afterAll = false;
  /// Of the "after" dumps, only print those where the IR changed.
  bool afterOnlyIfChanged = false;
  /// Print after a pass that failed.
  bool afterFailure = false;
};

/// How the timing report is laid out.
enum class TimingDisplay {
  /// One line per pass name, summed, slowest first.
  List,
  /// Passes in pipeline order, analyses nested under the pass that asked.
  Tree,
};

/// An ordered pipeline of passes over a Module.
class PassManager {
public:
  PassManager();
  PassManager(PassManager &&) = delete;
  ~PassManager();

  /// Appends \p pass to the pipeline.
  void addPass(std::unique_ptr<Pass> pass);
  /// Moves every pass of \p other to the end of this pipeline.
  void appendPassesFrom(PassManager &other);
  /// The passes in order.
  llvm::ArrayRef<std::unique_ptr<Pass>> getPasses() const { return passes; }
  /// Number of passes.
  size_t size() const { return passes.size(); }

  /// Runs the pipeline over \p module, reporting through \p diag. May be
  /// called again with another module; passes keep no state between runs
  /// except their statistics, which accumulate.
  LogicalResult run(Module &module, DiagnosticEngine &diag);

  /// Runs the verifier after each pass (on by default).
  void enableVerifier(bool enabled = true) { verifyEach = enabled; }

  /// Adds an instrumentation.
  void addInstrumentation(std::unique_ptr<PassInstrumentation> instrumentation);
  /// Adds one instance of each instrumentation plugins registered.
  void addRegisteredInstrumentations();
  /// Prints IR to \p os around passes as \p config asks.
  void enableIRPrinting(IRPrintingConfig config, llvm::raw_ostream &os);
  /// Measures wall and CPU time of each pass and analysis; the report is
  /// printed by printTimingReport().
  void enableTiming(TimingDisplay display);
  /// Prints the timing report if timing is enabled.
  void printTimingReport(llvm::raw_ostream &os) const;
  /// Prints every pass's statistics in pipeline order.
  void printStatistics(llvm::raw_ostream &os) const;

  /// Prints the pipeline as `a{k=v},b`, which parsePassPipeline reads back.
  void printAsTextualPipeline(llvm::raw_ostream &os) const;

private:
  LogicalResult initialize(DiagnosticEngine &diag);
  LogicalResult runPass(Pass &pass, Module &module, DiagnosticEngine &diag,
                        AnalysisManager &analyses);

  std::vector<std::unique_ptr<Pass>> passes;
  PassInstrumentor instrumentor;
  /// The timing instrumentation, owned by the instrumentor.
  detail::PassTiming *timing = nullptr;
  bool verifyEach = true;
  bool initialized = false;
};

} // namespace fastci

#endif // FASTCI_PASS_PASSMANAGER_H
