//===- DefaultPipeline.cpp - The standard end-to-end pipeline -------------===//
//
// `fastci-default` is the pipeline CI scripts run on a merge request: import
// the repository, its CI jobs, their history and runtime evidence, map the
// diff onto changed code, select and prune tests, lower their workloads,
// score and schedule what remains, and (with plan-out=) write the plan. Each
// stage is an ordinary registered pass with ordinary options; this file only
// decides their order and forwards the pipeline's options, so
// `--dump-pass-pipeline` shows the exact pass pipeline a user can take over
// and edit. It is the one definition of the standard pipeline: `fastci plan`
// and the evaluation harness (utils/eval) expand it rather than list passes.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassManager.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

namespace {

/// Options of fastci-default: the inputs of a CI run.
struct DefaultPipelineOptions : PassPipelineOptions<DefaultPipelineOptions> {
  Option<std::string> root{*this, "root",
                           llvm::cl::desc("Repository to import"),
                           llvm::cl::init(".")};
  Option<std::string> diff{*this, "diff",
                           llvm::cl::desc("Unified diff of the merge request")};
  Option<std::string> base{
      *this, "base",
      llvm::cl::desc("Base revision: diff root's git repository instead")};
  Option<std::string> head{*this, "head",
                           llvm::cl::desc("Head revision (with base=)"),
                           llvm::cl::init("HEAD")};
  ListOption<std::string> manifest{*this, "manifest",
                                   llvm::cl::desc("Test manifests of CI jobs")};
  ListOption<std::string> junit{
      *this, "junit", llvm::cl::desc("JUnit XML history, oldest first")};
  ListOption<std::string> results{
      *this, "results", llvm::cl::desc("CI job results (.json or .csv)")};
  Option<std::string> evidence{*this, "evidence",
                               llvm::cl::desc("Directory of runtime evidence")};
  Option<bool> configAware{
      *this, "config-aware",
      llvm::cl::desc("Prune only across equal configurations"),
      llvm::cl::init(true)};
  Option<bool> prune{*this, "prune",
                     llvm::cl::desc("Prune context-equivalent tests"),
                     llvm::cl::init(true)};
  Option<bool> lower{*this, "lower",
                     llvm::cl::desc("Lower workloads of selected tests"),
                     llvm::cl::init(true)};
  Option<int> runners{*this, "runners",
                      llvm::cl::desc("GPU runners to schedule onto"),
                      llvm::cl::init(4)};
  Option<int> gpusPerRunner{*this, "gpus-per-runner",
                            llvm::cl::desc("GPUs on each runner"),
                            llvm::cl::init(8)};
  Option<std::string> changePolicy{
      *this, "change-policy",
      llvm::cl::desc("Change policy YAML for mark-changed (default: the "
                     "built-in policy)")};
  Option<std::string> schedulePolicy{
      *this, "schedule-policy",
      llvm::cl::desc("Schedule policy (default: the schedule pass's)")};
  Option<std::string> planOut{
      *this, "plan-out",
      llvm::cl::desc("Write the plan here with emit-plan ('-': stdout; "
                     "default: no emit-plan stage)")};
  Option<std::string> planFormat{
      *this, "plan-format",
      llvm::cl::desc("emit-plan format (json, pytest, github-matrix, gitlab, "
                     "shell)"),
      llvm::cl::init("json")};
  Option<std::string> python{
      *this, "python",
      llvm::cl::desc("Interpreter of the plan's commands (default: the one "
                     "that recorded the evidence, else python3)")};
  Option<bool> observe{
      *this, "observe",
      llvm::cl::desc("Observation mode: the plan runs every test"),
      llvm::cl::init(false)};
};

/// Options of one stage: (key, value) pairs.
using StageOptions = std::vector<std::pair<llvm::StringRef, std::string>>;

/// Appends pass \p name with \p options (key, value pairs) to \p pm.
void addPass(PassManager &pm, llvm::StringRef name,
             const StageOptions &options = {},
             llvm::ArrayRef<std::string> listValues = {},
             llvm::StringRef listKey = "") {
  PipelineElement element;
  element.name = name.str();
  auto addOption = [&](llvm::StringRef key,
                       llvm::ArrayRef<std::string> values) {
    PipelineElement::OptionEntry &entry = element.options.emplace_back();
    entry.key = key.str();
    entry.hasValue = true;
    entry.isBraced = values.size() != 1;
    for (const std::string &value : values)
      entry.elements.push_back(OptionValueToken{value, llvm::SMLoc()});
  };
  for (const auto &[key, value] : options)
    addOption(key, value);
  if (!listKey.empty())
    addOption(listKey, listValues);
  // Values come from typed pipeline options, so a pass rejecting one is a
  // bug in this file; report it rather than drop the stage.
  static DiagnosticEngine diag;
  const PassRegistryEntry *entry = lookupPassRegistryEntry(name);
  if (!entry || failed(entry->addToPipeline(pm, element, diag)))
    llvm::report_fatal_error("fastci-default: cannot add pass '" + name + "'");
}

void buildDefaultPipeline(PassManager &pm,
                          const DefaultPipelineOptions &options) {
  addPass(pm, "parse-python", {{"root", options.root.getValue()}});
  if (!options.manifest.empty())
    addPass(pm, "load-manifest", {}, options.manifest, "file");
  if (!options.junit.empty())
    addPass(pm, "load-history", {}, options.junit, "junit");
  if (!options.results.empty())
    addPass(pm, "load-history", {}, options.results, "results");
  if (!options.evidence.getValue().empty())
    addPass(pm, "merge-evidence", {{"dir", options.evidence.getValue()}});
  StageOptions markChanged;
  if (!options.diff.getValue().empty())
    // The head tree places decorators and rebuilds pre-images of the diff.
    markChanged = {{"diff", options.diff.getValue()},
                   {"root", options.root.getValue()}};
  else if (!options.base.getValue().empty())
    markChanged = {{"repo", options.root.getValue()},
                   {"base", options.base.getValue()},
                   {"head", options.head.getValue()}};
  if (!markChanged.empty()) {
    if (!options.changePolicy.getValue().empty())
      markChanged.emplace_back("policy", options.changePolicy.getValue());
    addPass(pm, "mark-changed", markChanged);
  }
  addPass(pm, "select-affected");
  if (options.prune)
    addPass(pm, "prune-context-equiv",
            {{"config-aware", options.configAware ? "true" : "false"}});
  if (options.lower)
    addPass(pm, "lower-workload");
  addPass(pm, "score-risk");
  StageOptions schedule = {
      {"runners", std::to_string(options.runners.getValue())},
      {"gpus-per-runner", std::to_string(options.gpusPerRunner.getValue())}};
  if (!options.schedulePolicy.getValue().empty())
    schedule.emplace_back("policy", options.schedulePolicy.getValue());
  addPass(pm, "schedule", schedule);
  if (!options.planOut.getValue().empty()) {
    StageOptions emit = {{"format", options.planFormat.getValue()},
                         {"out", options.planOut.getValue()}};
    if (!options.python.getValue().empty())
      emit.emplace_back("python", options.python.getValue());
    if (options.observe)
      emit.emplace_back("observe", "true");
    addPass(pm, "emit-plan", emit);
  }
}

} // namespace

namespace fastci {
void registerPipelines() {
  PassPipelineRegistration<DefaultPipelineOptions>(
      "fastci-default",
      "Import, select, prune, lower and schedule the tests of a merge request",
      buildDefaultPipeline);
}
} // namespace fastci
