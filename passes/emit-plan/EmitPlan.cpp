//===- EmitPlan.cpp - The emit-plan pass ----------------------------------===//
//
// emit-plan is the last pass of a CI pipeline: it reads the decisions earlier
// passes left on the module into a Plan (lib/Plan) and writes it in the
// format a CI engine or the `fastci` driver consumes. It does not change the
// module. docs/Plan.md documents the formats and the JSON schema.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Plan/Plan.h"
#include "fastci/Plan/PlanWriters.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

namespace {

struct EmitPlanPass : PassWrapper<EmitPlanPass> {
  llvm::StringRef getArgument() const override { return "emit-plan"; }
  llvm::StringRef getSummary() const override {
    return "Write the final test plan for CI (JSON, pytest, GitHub, GitLab, "
           "shell)";
  }
  llvm::StringRef getDescription() const override {
    return "Orders the tests that still run by the schedule's `rank` (then "
           "descending `risk`, then name) and writes each with its runner, "
           "start, rendered command (the manifest template with {python}, "
           "{nproc} and {args} expanded, workload overrides applied), "
           "environment and selection reason; lists skipped and pruned tests "
           "with their reasons and witnesses; and predicts latency and "
           "GPU-hours against running everything. The module is unchanged.";
  }

  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("json, pytest, github-matrix, gitlab or shell"),
      llvm::cl::init("json")};
  Option<std::string> outFile{
      *this, "out", llvm::cl::desc("Where to write the plan ('-': stdout)"),
      llvm::cl::init("-")};
  Option<std::string> python{
      *this, "python",
      llvm::cl::desc("What {python} expands to (default: the interpreter "
                     "that recorded the evidence, else python3)")};
  Option<bool> observe{
      *this, "observe",
      llvm::cl::desc("Observation mode: run skipped and pruned tests too, "
                     "marked with what the plan would have done"),
      llvm::cl::init(false)};

  Statistic numPlanned{this, "num-planned", "Tests the plan runs"};
  Statistic numSkipped{this, "num-skipped", "Tests select-affected skipped"};
  Statistic numPruned{this, "num-pruned", "Tests prune-context-equiv pruned"};

  PlanFormat planFormat = PlanFormat::Json;

  LogicalResult initialize(DiagnosticEngine &diag) override {
    std::optional<PlanFormat> parsed = symbolizePlanFormat(format.getValue());
    if (!parsed) {
      diag.error(format.getLoc().isValid() ? format.getLoc() : getLoc(),
                 "unknown plan format '" + format.getValue() + "' (expected " +
                     listEnumNames<PlanFormat>(kPlanFormatNames) + ")");
      return failure();
    }
    planFormat = *parsed;
    if (python.hasValue() && python.getValue().empty()) {
      diag.error(python.getLoc().isValid() ? python.getLoc() : getLoc(),
                 "'python' must name an interpreter");
      return failure();
    }
    return success();
  }

  void runOnModule() override {
    markAllAnalysesPreserved();
    PlanOptions options;
    options.python = getInterpreter();
    options.observe = observe;
    std::optional<Plan> plan =
        buildPlan(getModule(), options, getDiagnostics());
    if (!plan)
      return signalPassFailure();
    numPlanned = plan->summary.plannedTests;
    numSkipped = plan->summary.skippedTests;
    numPruned = plan->summary.prunedTests;
    if (planFormat == PlanFormat::Pytest)
      warnAboutLostEnvironment(*plan);
    if (failed(write(*plan)))
      signalPassFailure();
  }

  /// python=, else the interpreter merge-evidence found in the evidence (the
  /// one whose packages ran the tests), else `python3`.
  std::string getInterpreter() {
    if (!python.getValue().empty())
      return python.getValue();
    Attribute recorded =
        getModule().getAttrs().get(evidence::attr::kEvidencePython);
    if (recorded.isString() && !recorded.getString().empty())
      return recorded.getString().str();
    return "python3";
  }

  /// A pytest argument list has no place for per-test variables (workload
  /// overrides among them); say so rather than silently running the full
  /// workload.
  void warnAboutLostEnvironment(const Plan &plan) {
    unsigned withEnv = 0;
    for (const PlannedTest &test : plan.tests)
      withEnv += test.kind == TestKind::Pytest && !test.env.empty();
    if (withEnv)
      getDiagnostics().warning(
          getLoc(), llvm::Twine(withEnv) +
                        " pytest tests have per-test environment (workload "
                        "overrides) that format=pytest cannot carry; use "
                        "format=shell or json to keep it");
  }

  LogicalResult write(const Plan &plan) {
    if (outFile.getValue() == "-") {
      writePlan(plan, planFormat, llvm::outs());
      llvm::outs().flush();
      return success();
    }
    std::error_code error;
    llvm::ToolOutputFile output(outFile.getValue(), error,
                                llvm::sys::fs::OF_Text);
    if (error) {
      getDiagnostics().error(outFile.getLoc().isValid() ? outFile.getLoc()
                                                        : getLoc(),
                             "could not write plan '" + outFile.getValue() +
                                 "': " + error.message());
      return failure();
    }
    writePlan(plan, planFormat, output.os());
    output.os().flush();
    if (output.os().has_error()) {
      getDiagnostics().error(getLoc(),
                             "could not write plan '" + outFile.getValue() +
                                 "': " + output.os().error().message());
      output.os().clear_error();
      return failure();
    }
    output.keep();
    return success();
  }
};

} // namespace

namespace fastci {
void registerEmitPlanPasses() { PassRegistration<EmitPlanPass>(); }
} // namespace fastci
