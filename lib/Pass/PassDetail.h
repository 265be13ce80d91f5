//===- PassDetail.h - Instrumentations behind PassManager flags -*- C++ -*-===//
//
// The instrumentations PassManager::enableIRPrinting and enableTiming add.
// Private to lib/Pass: users reach them through PassManager.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_LIB_PASS_PASSDETAIL_H
#define FASTCI_LIB_PASS_PASSDETAIL_H

#include "fastci/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Timer.h"

namespace fastci::detail {

/// Prints the IR around passes as an IRPrintingConfig asks.
std::unique_ptr<PassInstrumentation>
createIRPrinterInstrumentation(IRPrintingConfig config, llvm::raw_ostream &os);

/// Wall and CPU time of each pass and analysis, accumulated over runs.
class PassTiming : public PassInstrumentation {
public:
  explicit PassTiming(TimingDisplay display) : display(display) {}

  void runBeforePipeline(Module &module) override;
  void runAfterPipeline(Module &module) override;
  void runBeforePass(Pass *pass, Module &module) override;
  void runAfterPass(Pass *pass, Module &module) override;
  void runAfterPassFailed(Pass *pass, Module &module) override;
  void runBeforeAnalysis(llvm::StringRef name, TypeID id,
                         Module &module) override;
  void runAfterAnalysis(llvm::StringRef name, TypeID id,
                        Module &module) override;

  /// Prints the report in the chosen display.
  void print(llvm::raw_ostream &os) const;

private:
  /// One timed thing: a pass, or an analysis computed inside a pass.
  struct Timer {
    /// The pass or the analysis type timed.
    const void *key = nullptr;
    std::string name;
    llvm::TimeRecord total;
    /// Analyses computed while this ran, in first-computed order.
    std::vector<Timer> children;
  };
  /// The timer of analysis \p id under the innermost active timer.
  Timer &getAnalysisTimer(TypeID id);
  void start(Timer &timer);
  void stop();

  TimingDisplay display;
  /// Passes in pipeline order.
  llvm::MapVector<const Pass *, Timer> passes;
  /// Analyses computed outside any pass.
  std::vector<Timer> topLevelAnalyses;
  /// What is being timed, innermost last, with its start time.
  std::vector<std::pair<Timer *, llvm::TimeRecord>> active;
  llvm::TimeRecord pipelineStart, pipelineTotal;
};

} // namespace fastci::detail

#endif // FASTCI_LIB_PASS_PASSDETAIL_H
