//===- DefaultPipeline.cpp - The standard end-to-end pipeline -------------===//
//
// `fastci-default` is the pipeline CI scripts run on a merge request: import
// the repository, its CI jobs, their history and runtime evidence, map the
// diff onto changed code, select and prune tests, score their risk, lower
// their workloads, schedule what remains, and (with plan-out=) write the plan.
// Each stage is an ordinary registered pass with ordinary options; this file
// only decides their order and forwards the pipeline's options, so
// `--dump-pass-pipeline` shows the exact pass pipeline a user can take over
// and edit. It is the one definition of the standard pipeline: `fastci plan`
// and the evaluation harness (utils/eval) expand it rather than list passes;
// start-after= and stop-after= run a slice of it, so that the harness selects
// once and runs each of its ablations from the selected module.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassManager.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>
#include <string>
#include <vector>

using namespace fastci;

namespace {

/// Options of one stage: (key, value) pairs.
using StageOptions = std::vector<std::pair<llvm::StringRef, std::string>>;

/// One stage of the pipeline: a pass with its options, and whether its
/// inputs were given. Stages whose inputs are absent keep their place so
/// that start-after= and stop-after= can name them.
struct Stage {
  llvm::StringRef name;
  bool enabled = true;
  StageOptions options = {};
  /// One list-valued option (load-manifest's files, load-history's paths).
  llvm::StringRef listKey = "";
  std::vector<std::string> listValues = {};
};

struct DefaultPipelineOptions;
std::vector<Stage> buildStages(const DefaultPipelineOptions &options);

/// `parse-python, load-manifest, ...`: the names of \p stages in order, for
/// messages.
std::string listStageNames(llvm::ArrayRef<Stage> stages) {
  std::string names;
  for (size_t i = 0; i < stages.size(); ++i)
    if (i == 0 || stages[i].name != stages[i - 1].name)
      names += (i == 0 ? "" : ", ") + stages[i].name.str();
  return names;
}

/// Where \p name is last in \p stages, or -1 (not a stage).
int findStage(llvm::ArrayRef<Stage> stages, llvm::StringRef name) {
  for (int i = static_cast<int>(stages.size()) - 1; i >= 0; --i)
    if (stages[i].name == name)
      return i;
  return -1;
}

/// Options of fastci-default: the inputs of a CI run.
struct DefaultPipelineOptions : PassPipelineOptions<DefaultPipelineOptions> {
  Option<std::string> root{*this, "root",
                           llvm::cl::desc("Repository to import"),
                           llvm::cl::init(".")};
  Option<unsigned> jobs{
      *this, "jobs",
      llvm::cl::desc("Parser threads of parse-python (0: as many as the "
                     "machine has)"),
      llvm::cl::init(0)};
  Option<std::string> parseCache{
      *this, "parse-cache",
      llvm::cl::desc("parse-python's cache directory: a rerun reparses only "
                     "the files changed since (default: no cache)")};
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
  Option<bool> pruneByHistory{
      *this, "prune-by-history",
      llvm::cl::desc("Load history before pruning, so that prune weighs "
                     "tests by measured durations (false: after it; prune "
                     "weighs declared and evidence durations)"),
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
  Option<std::string> startAfter{
      *this, "start-after",
      llvm::cl::desc("Run only the stages after this one (a pass of the "
                     "pipeline: parse-python, ..., emit-plan), on a module "
                     "an earlier run wrote")};
  Option<std::string> stopAfter{
      *this, "stop-after",
      llvm::cl::desc("Run no stage after this one (a stage, as for "
                     "start-after)")};

  LogicalResult verify(DiagnosticEngine &diag, llvm::SMLoc loc) const override {
    std::vector<Stage> stages = buildStages(*this);
    auto position = [&](const Option<std::string> &option, int none) {
      if (option.getValue().empty())
        return std::optional<int>(none);
      int found = findStage(stages, option.getValue());
      if (found < 0) {
        diag.error(option.getLoc().isValid() ? option.getLoc() : loc,
                   "fastci-default: '" + option.getArgument() + "=" +
                       option.getValue() + "' names no stage (stages: " +
                       listStageNames(stages) + ")");
        return std::optional<int>();
      }
      return std::optional<int>(found);
    };
    std::optional<int> first = position(startAfter, -1);
    std::optional<int> last =
        position(stopAfter, static_cast<int>(stages.size()) - 1);
    if (!first || !last)
      return failure();
    if (*first >= *last) {
      diag.error(startAfter.getLoc().isValid() ? startAfter.getLoc() : loc,
                 "fastci-default: no stage runs after start-after=" +
                     startAfter.getValue() +
                     (stopAfter.getValue().empty()
                          ? std::string()
                          : " up to stop-after=" + stopAfter.getValue()));
      return failure();
    }
    return success();
  }
};

/// Every stage in order, each enabled when its inputs are given.
std::vector<Stage> buildStages(const DefaultPipelineOptions &options) {
  std::vector<Stage> stages;
  Stage parse{"parse-python",
              true,
              {{"root", options.root.getValue()},
               {"jobs", std::to_string(options.jobs.getValue())}}};
  if (!options.parseCache.getValue().empty())
    parse.options.push_back({"cache", options.parseCache.getValue()});
  stages.push_back(std::move(parse));
  stages.push_back({"load-manifest",
                    !options.manifest.empty(),
                    {},
                    "file",
                    options.manifest.getValue().vec()});
  auto addHistory = [&] {
    stages.push_back({"load-history",
                      !options.junit.empty(),
                      {},
                      "junit",
                      options.junit.getValue().vec()});
    stages.push_back({"load-history",
                      !options.results.empty(),
                      {},
                      "results",
                      options.results.getValue().vec()});
  };
  if (options.pruneByHistory)
    addHistory();
  stages.push_back({"merge-evidence",
                    !options.evidence.getValue().empty(),
                    {{"dir", options.evidence.getValue()}}});
  StageOptions markChanged;
  if (!options.diff.getValue().empty())
    // The head tree places decorators and rebuilds pre-images of the diff.
    markChanged = {{"diff", options.diff.getValue()},
                   {"root", options.root.getValue()}};
  else if (!options.base.getValue().empty())
    markChanged = {{"repo", options.root.getValue()},
                   {"base", options.base.getValue()},
                   {"head", options.head.getValue()}};
  bool changed = !markChanged.empty();
  if (changed && !options.changePolicy.getValue().empty())
    markChanged.emplace_back("policy", options.changePolicy.getValue());
  stages.push_back({"mark-changed", changed, markChanged});
  stages.push_back({"select-affected"});
  stages.push_back(
      {"prune-context-equiv",
       options.prune,
       {{"config-aware", options.configAware ? "true" : "false"}}});
  if (!options.pruneByHistory)
    addHistory();
  // score-risk and lower-workload commute (neither reads what the other
  // writes; test/Passes/pipelines/risk-lower-commute.test); risk first is
  // the order of the evaluation harness's ablations.
  stages.push_back({"score-risk"});
  stages.push_back({"lower-workload", options.lower});
  StageOptions schedule = {
      {"runners", std::to_string(options.runners.getValue())},
      {"gpus-per-runner", std::to_string(options.gpusPerRunner.getValue())}};
  if (!options.schedulePolicy.getValue().empty())
    schedule.emplace_back("policy", options.schedulePolicy.getValue());
  stages.push_back({"schedule", true, schedule});
  StageOptions emit = {{"format", options.planFormat.getValue()},
                       {"out", options.planOut.getValue()}};
  if (!options.python.getValue().empty())
    emit.emplace_back("python", options.python.getValue());
  if (options.observe)
    emit.emplace_back("observe", "true");
  stages.push_back({"emit-plan", !options.planOut.getValue().empty(), emit});
  return stages;
}

/// Appends \p stage's pass with its options to \p pm.
void addPass(PassManager &pm, const Stage &stage) {
  PipelineElement element;
  element.name = stage.name.str();
  auto addOption = [&](llvm::StringRef key,
                       llvm::ArrayRef<std::string> values) {
    PipelineElement::OptionEntry &entry = element.options.emplace_back();
    entry.key = key.str();
    entry.hasValue = true;
    entry.isBraced = values.size() != 1;
    for (const std::string &value : values)
      entry.elements.push_back(OptionValueToken{value, llvm::SMLoc()});
  };
  for (const auto &[key, value] : stage.options)
    addOption(key, value);
  if (!stage.listKey.empty())
    addOption(stage.listKey, stage.listValues);
  // Values come from typed pipeline options, so a pass rejecting one is a
  // bug in this file; report it rather than drop the stage.
  static DiagnosticEngine diag;
  const PassRegistryEntry *entry = lookupPassRegistryEntry(stage.name);
  if (!entry || failed(entry->addToPipeline(pm, element, diag)))
    llvm::report_fatal_error("fastci-default: cannot add pass '" + stage.name +
                             "'");
}

/// The enabled stages after start-after= and up to stop-after= (verify()
/// has checked that both name stages and leave at least one).
void buildDefaultPipeline(PassManager &pm,
                          const DefaultPipelineOptions &options) {
  std::vector<Stage> stages = buildStages(options);
  int first = options.startAfter.getValue().empty()
                  ? 0
                  : findStage(stages, options.startAfter.getValue()) + 1;
  int last = options.stopAfter.getValue().empty()
                 ? static_cast<int>(stages.size()) - 1
                 : findStage(stages, options.stopAfter.getValue());
  for (int i = first; i <= last; ++i)
    if (stages[i].enabled)
      addPass(pm, stages[i]);
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
