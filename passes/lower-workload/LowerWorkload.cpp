//===- LowerWorkload.cpp - The lower-workload pass ------------------------===//
//
// lower-workload shrinks each selected test's workload along the dimensions
// it does not validate, within the framework's constraints, and records the
// result as concrete overrides in the test's own syntax, a predicted cost,
// and what happens to its golden values. The search is lowerWorkload()
// (lib/Workload); docs/Workloads.md explains schema, scopes and overrides.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Workload/Lowering.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <set>

using namespace fastci;

namespace {

struct LowerWorkloadPass : PassWrapper<LowerWorkloadPass> {
  llvm::StringRef getArgument() const override { return "lower-workload"; }
  llvm::StringRef getSummary() const override {
    return "Shrink each test's workload along dimensions it does not validate";
  }
  llvm::StringRef getDescription() const override {
    return "For every selected, unpruned test with a workload: keeps the "
           "dimensions in its validation scope (declared, or inferred from "
           "its id and recorded as `scope_source = \"inferred\"`) and every "
           "parallel and precision dimension, shrinks the others to the "
           "smallest values meeting the schema's constraints, and records "
           "`lowered`, `overrides`, `override_args` (or `override_env` for "
           "pytest tests), `pinned`, `golden_steps` and the predicted cost, "
           "which replaces the test's cost (the original is kept in "
           "`original_seconds`). The schema's behaviour floors keep each "
           "lowered test able to catch what it catches at full size (enough "
           "compared steps, steps after a resume, width per tensor-parallel "
           "rank, micro-batches per step...); a test they limit names them "
           "in `floors`, as it names the floors its manifest entry turned "
           "off or raised (`floor_overrides`). Tests imported from "
           "Megatron-LM's functional tests follow its harness's rules (resume "
           "point, test type, compared metrics and timing window), recorded "
           "with `golden_steps` and `golden_metrics`. A flag the dialect "
           "does not know is reported once per manifest and blocks the "
           "dimensions it could depend on unless `allow-flags` names it. A "
           "test with no valid lowering keeps its workload and says why in "
           "`lowering_reason`.";
  }

  Option<std::string> schemaFile{
      *this, "schema",
      llvm::cl::desc("Workload schema (default: the one FastCI ships)")};
  Option<std::string> defaultDialect{
      *this, "dialect", llvm::cl::desc("Dialect of tests that name none"),
      llvm::cl::init("megatron")};
  Option<bool> inferScopes{
      *this, "infer-scope",
      llvm::cl::desc(
          "Infer the scope of tests that declare none from their id"),
      llvm::cl::init(true)};
  Option<bool> useFloors{
      *this, "floors",
      llvm::cl::desc("Apply the schema's behaviour floors (false: shrink to "
                     "the framework's constraints alone)"),
      llvm::cl::init(true)};
  ListOption<std::string> allowFlags{
      *this, "allow-flags",
      llvm::cl::desc("Flags the dialect does not know that may not block "
                     "lowering (`*`: every flag)")};
  Option<unsigned> searchBudget{
      *this, "search-budget",
      llvm::cl::desc("Constraint checks per test before giving up"),
      llvm::cl::init(1000000u)};

  Statistic numLowered{this, "num-lowered", "Tests whose workload shrank"};
  Statistic numKept{this, "num-kept", "Tests whose workload could not shrink"};
  Statistic numInferred{this, "num-inferred-scopes",
                        "Tests whose scope was inferred from their id"};
  Statistic numUnknownFlags{this, "num-unknown-flags",
                            "Distinct unknown flags reported"};

  WorkloadSchema schema;

  LogicalResult initialize(DiagnosticEngine &diag) override {
    std::optional<WorkloadSchema> parsed = loadWorkloadSchema(
        schemaFile.getValue(),
        schemaFile.getLoc().isValid() ? schemaFile.getLoc() : getLoc(), diag);
    if (!parsed)
      return failure();
    schema = std::move(*parsed);
    if (!schema.lookup(defaultDialect.getValue())) {
      diag.error(defaultDialect.getLoc().isValid() ? defaultDialect.getLoc()
                                                   : getLoc(),
                 "unknown dialect '" + defaultDialect.getValue() + "'");
      return failure();
    }
    return success();
  }

  /// True unless an earlier pass decided the test does not run.
  static bool runs(const Test &test) {
    Attribute selected = test.attrs.get("selected");
    Attribute pruned = test.attrs.get("pruned");
    return !(selected.isBool() && !selected.getBool()) &&
           !(pruned.isBool() && pruned.getBool());
  }

  void runOnModule() override {
    for (Test &test : getModule().getTests()) {
      // Floor overrides are checked on every test that has them, run or
      // not, so a misspelt floor fails the first pipeline, not the first
      // merge request that selects the test.
      bool hasOverrides = test.attrs.contains(kFloorOverridesAttr);
      bool lowers = !test.workload.empty() && runs(test);
      if (!lowers && !hasOverrides)
        continue;
      Attribute dialectAttr = test.attrs.get("dialect");
      llvm::StringRef dialectName =
          dialectAttr.isString() ? dialectAttr.getString()
                                 : llvm::StringRef(defaultDialect.getValue());
      const Dialect *dialect = schema.lookup(dialectName);
      if (!dialect) {
        getDiagnostics().error(test.loc, "test '" + test.name +
                                             "' uses unknown dialect '" +
                                             dialectName + "'");
        return signalPassFailure();
      }
      std::optional<std::vector<FloorOverride>> overrides =
          readFloorOverrides(test, *dialect, getDiagnostics());
      if (!overrides)
        return signalPassFailure();
      if (!lowers)
        continue;
      if (test.scope.empty() && inferScopes) {
        test.scope = inferScope(test.name, *dialect);
        test.attrs.set("scope_source", Attribute::getString("inferred"));
        ++numInferred;
      }
      // What the harness validates whatever the id says (a `ckpt-resume`
      // test resumes).
      for (std::string &scope : harnessScopes(test, *dialect))
        if (!llvm::is_contained(test.scope, scope))
          test.scope.push_back(std::move(scope));
      reportUnknownFlags(test, *dialect);
      LoweringOptions options;
      options.searchBudget = searchBudget;
      options.floors = useFloors;
      options.floorOverrides = std::move(*overrides);
      options.allowedFlags.assign(allowFlags.begin(), allowFlags.end());
      LoweringResult result =
          lowerWorkload(test, test.scope, *dialect, options);
      for (const std::string &warning : result.warnings)
        getDiagnostics().warning(test.loc,
                                 "test '" + test.name + "' kept: " + warning);
      record(test, result);
    }
  }

  /// (manifest, flag) pairs already reported.
  std::set<std::pair<std::string, std::string>> reported;

  /// Warns, once per manifest, at the first test naming it, of each flag
  /// the test's dialect does not know; records them on the test.
  void reportUnknownFlags(Test &test, const Dialect &dialect) {
    std::vector<std::string> flags = unknownFlags(test, dialect);
    if (flags.empty())
      return;
    bool allowAll = llvm::is_contained(allowFlags, "*");
    std::vector<Attribute> list;
    Attribute manifest = test.attrs.get(workload::attr::kManifest);
    std::string source = manifest.isString() ? manifest.getString().str() : "";
    for (const std::string &flag : flags) {
      list.push_back(Attribute::getString(flag));
      if (allowAll || llvm::is_contained(allowFlags, flag) ||
          !reported.insert({source, flag}).second)
        continue;
      ++numUnknownFlags;
      std::string dims;
      for (const std::string &name : dialect.unknownFlagDimensions(flag)) {
        const Dimension *dim = dialect.lookup(name);
        dims += (dims.empty() ? "" : ", ") +
                (dim && !dim->flag.empty() ? dim->flag : name);
      }
      getDiagnostics().warning(
          test.loc, "flag '" + flag + "' of test '" + test.name +
                        "' is unknown to dialect '" + dialect.name +
                        "'; it blocks lowering " + dims +
                        " in every test of this manifest that names it "
                        "(allow it with lower-workload{allow-flags=" +
                        flag + "})");
    }
    test.attrs.set(workload::attr::kUnknownFlags,
                   Attribute::getList(std::move(list)));
  }

  /// Writes \p result onto \p test.
  void record(Test &test, const LoweringResult &result) {
    test.attrs.set("lowered", Attribute::getBool(result.lowered));
    if (!result.pinned.empty())
      test.attrs.set("pinned", Attribute::getDict(result.pinned));
    if (!result.floors.empty())
      test.attrs.set("floors", Attribute::getDict(result.floors));
    if (!result.lowered) {
      ++numKept;
      test.attrs.set("lowering_reason", Attribute::getString(result.reason));
      return;
    }
    ++numLowered;
    test.attrs.set("overrides", Attribute::getDict(result.overrides));
    if (test.attrs.contains("command") || test.attrs.contains("config"))
      test.attrs.set("override_args", commandLineOverrides(result.overrides));
    else
      test.attrs.set("override_env", environmentOverrides(result.overrides));
    if (result.goldenSteps)
      test.attrs.set("golden_steps", Attribute::getInt(*result.goldenSteps));
    if (result.goldenInvalidated)
      test.attrs.set("golden_invalidated", Attribute::getBool(true));
    if (!result.goldenMetrics.empty()) {
      std::vector<Attribute> metrics;
      for (const std::string &metric : result.goldenMetrics)
        metrics.push_back(Attribute::getString(metric));
      test.attrs.set(workload::attr::kGoldenMetrics,
                     Attribute::getList(std::move(metrics)));
    }
    test.attrs.set("original_seconds", Attribute::getFloat(test.cost.seconds));
    test.cost.seconds = result.predictedSeconds;
    test.cost.gpuSeconds = double(test.cost.gpus) * result.predictedSeconds;
  }

  /// `--flag value` pairs, as CI jobs pass framework flags.
  static Attribute commandLineOverrides(const AttrDict &overrides) {
    std::vector<Attribute> args;
    for (const auto &[flag, value] : overrides) {
      args.push_back(Attribute::getString(flag));
      args.push_back(Attribute::getString(value.str()));
    }
    return Attribute::getList(std::move(args));
  }

  /// pytest tests read their declared workload through the fastci_workload
  /// fixture, which applies FASTCI_WORKLOAD_OVERRIDES (a JSON object).
  static Attribute environmentOverrides(const AttrDict &overrides) {
    llvm::json::Object object;
    for (const auto &[key, value] : overrides)
      object[key] = value.getInt();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(std::move(object));
    AttrDict env;
    env.set("FASTCI_WORKLOAD_OVERRIDES", Attribute::getString(text));
    return Attribute::getDict(std::move(env));
  }
};

} // namespace

namespace fastci {
void registerLowerWorkloadPasses() { PassRegistration<LowerWorkloadPass>(); }
} // namespace fastci
