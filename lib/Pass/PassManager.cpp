//===- PassManager.cpp - Running a pipeline of passes ---------------------===//
//
// The pipeline loop: initialize everything, then for each pass run it,
// make failure loud, invalidate what it did not preserve, verify, and tell
// the instrumentation. Also the statistics report and the textual form.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassManager.h"
#include "PassDetail.h"
#include "fastci/IR/Verifier.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

PassManager::PassManager() = default;
PassManager::~PassManager() = default;

void PassManager::addPass(std::unique_ptr<Pass> pass) {
  passes.push_back(std::move(pass));
  initialized = false;
}

void PassManager::appendPassesFrom(PassManager &other) {
  for (auto &pass : other.passes)
    passes.push_back(std::move(pass));
  other.passes.clear();
  initialized = false;
}

void PassManager::addInstrumentation(
    std::unique_ptr<PassInstrumentation> instrumentation) {
  instrumentor.add(std::move(instrumentation));
}

void PassManager::addRegisteredInstrumentations() {
  for (const PassInstrumentationFactory &factory :
       getRegisteredPassInstrumentations())
    addInstrumentation(factory());
}

void PassManager::enableIRPrinting(IRPrintingConfig config,
                                   llvm::raw_ostream &os) {
  addInstrumentation(
      detail::createIRPrinterInstrumentation(std::move(config), os));
}

void PassManager::enableTiming(TimingDisplay display) {
  auto pipelineTiming = std::make_unique<detail::PassTiming>(display);
  timing = pipelineTiming.get();
  addInstrumentation(std::move(pipelineTiming));
}

void PassManager::printTimingReport(llvm::raw_ostream &os) const {
  if (timing)
    timing->print(os);
}

LogicalResult PassManager::initialize(DiagnosticEngine &diag) {
  if (initialized)
    return success();
  // Every pass, even after a failure, so that all bad options are reported
  // in one go.
  bool ok = true;
  for (auto &pass : passes)
    ok &= succeeded(pass->initialize(diag));
  initialized = ok;
  return success(ok);
}

LogicalResult PassManager::run(Module &module, DiagnosticEngine &diag) {
  if (failed(initialize(diag)))
    return failure();
  AnalysisManager analyses(module, &instrumentor);
  instrumentor.runBeforePipeline(module);
  LogicalResult result = success();
  for (auto &pass : passes) {
    if (failed(runPass(*pass, module, diag, analyses))) {
      result = failure();
      break;
    }
  }
  instrumentor.runAfterPipeline(module);
  return result;
}

LogicalResult PassManager::runPass(Pass &pass, Module &module,
                                   DiagnosticEngine &diag,
                                   AnalysisManager &analyses) {
  instrumentor.runBeforePass(&pass, module);
  unsigned errorsBefore = diag.getNumErrors();
  pass.state.emplace(Pass::ExecutionState{module, diag, analyses, {}, false});
  pass.runOnModule();
  bool passFailed = pass.state->failed;
  PreservedAnalyses preserved = std::move(pass.state->preserved);
  pass.state.reset();

  // An error means the output cannot be trusted even if the pass forgot to
  // signal failure; a failure without an error would exit 1 silently.
  bool reportedErrors = diag.getNumErrors() != errorsBefore;
  if (passFailed && !reportedErrors)
    diag.error(pass.getLoc(),
               llvm::formatv("pass '{0}' failed", pass.getArgument()));
  if (passFailed || reportedErrors) {
    instrumentor.runAfterPassFailed(&pass, module);
    return failure();
  }

  analyses.invalidate(preserved);
  if (verifyEach && failed(verifyModule(module, diag))) {
    diag.error(pass.getLoc(),
               llvm::formatv("the IR is invalid after pass '{0}'",
                             pass.getArgument()));
    instrumentor.runAfterPassFailed(&pass, module);
    return failure();
  }
  instrumentor.runAfterPass(&pass, module);
  return success();
}

void PassManager::printAsTextualPipeline(llvm::raw_ostream &os) const {
  llvm::interleave(
      passes, os,
      [&](const std::unique_ptr<Pass> &pass) {
        pass->printAsTextualPipeline(os);
      },
      ",");
}

void PassManager::printStatistics(llvm::raw_ostream &os) const {
  os << "===" << std::string(73, '-') << "===\n"
     << std::string(25, ' ') << "... Pass statistics report ...\n"
     << "===" << std::string(73, '-') << "===\n";
  for (const auto &pass : passes) {
    os << pass->getArgument() << '\n';
    llvm::ArrayRef<Pass::Statistic *> statistics = pass->getStatistics();
    size_t width = 0;
    for (const Pass::Statistic *statistic : statistics)
      width = std::max(width, std::to_string(statistic->getValue()).size());
    for (const Pass::Statistic *statistic : statistics)
      os << "  (S) "
         << llvm::right_justify(std::to_string(statistic->getValue()), width)
         << ' ' << statistic->getName() << " - " << statistic->getDescription()
         << '\n';
  }
}
