//===- Manifest.cpp - Test manifests for CI jobs --------------------------===//
//
// Reads FastCI test manifests and Megatron-LM functional-test configurations
// into IR tests. Each manifest field lands in a typed Test field where one
// exists (cost, workload, scope, tags) and in attributes otherwise (command,
// nproc, golden, tolerant, env, dialect, floor_overrides), so later passes
// and the plan can use them without knowing the manifest format.
//
//===----------------------------------------------------------------------===//
#include "fastci/Workload/Manifest.h"
#include "fastci/Support/YAML.h"
#include "fastci/Workload/Lowering.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <map>

using namespace fastci;

namespace {
/// Reads one manifest document into the module.
class ManifestReader {
public:
  ManifestReader(Module &module, DiagnosticEngine &diag,
                 ManifestLoadStats &stats, llvm::StringRef manifest)
      : module(module), diag(diag), stats(stats),
        baseDir(llvm::sys::path::parent_path(manifest)), manifest(manifest) {}

  LogicalResult read(const YAMLNode &root) {
    if (failed(expectKeys(root, {"version", "dialect", "defaults", "tests",
                                 "import-megatron", "megatron-recipes"})))
      return failure();
    const YAMLNode *version = root.get("version");
    if (!version || version->getAsInt() != 1)
      return error(version ? *version : root,
                   "expected 'version: 1' in test manifest");
    if (const YAMLNode *dialect = root.get("dialect"))
      defaultDialect = dialect->scalar;
    if (const YAMLNode *defaults = root.get("defaults")) {
      if (failed(expectKeys(*defaults, testKeys())))
        return failure();
      this->defaults = defaults;
    }
    if (const YAMLNode *tests = root.get("tests")) {
      if (!tests->isSequence())
        return error(*tests, "expected a list of tests under 'tests'");
      for (const YAMLNode &test : tests->elements)
        if (failed(readTest(test)))
          return failure();
    }
    if (const YAMLNode *recipes = root.get("megatron-recipes"))
      if (failed(readRecipes(*recipes)))
        return failure();
    if (const YAMLNode *imports = root.get("import-megatron")) {
      if (failed(importMegatron(*imports)))
        return failure();
    }
    return success();
  }

private:
  static constexpr llvm::StringLiteral kTestKeys[] = {
      "id",      "command",  "nproc",     "gpus",  "minutes", "seconds",
      "scope",   "golden",   "tolerant",  "env",   "tags",    "model_args",
      "dialect", "workload", "test_type", "floors"};

  static llvm::SmallVector<llvm::StringRef> testKeys() {
    return llvm::SmallVector<llvm::StringRef>(std::begin(kTestKeys),
                                              std::end(kTestKeys));
  }

  LogicalResult error(const YAMLNode &node, const llvm::Twine &message) {
    diag.error(node.loc, message);
    return failure();
  }

  LogicalResult expectKeys(const YAMLNode &node,
                           llvm::ArrayRef<llvm::StringRef> allowed) {
    return checkMappingKeys(node, allowed, /*what=*/"", diag);
  }

  /// The field \p key of \p test, falling back to the manifest's defaults.
  const YAMLNode *field(const YAMLNode &test, llvm::StringRef key) {
    if (const YAMLNode *value = test.get(key))
      return value;
    return defaults ? defaults->get(key) : nullptr;
  }

  LogicalResult readStringList(const YAMLNode &node,
                               std::vector<std::string> &out) {
    if (!node.isSequence())
      return error(node, "expected a list of strings");
    for (const YAMLNode &element : node.elements) {
      if (!element.isScalar())
        return error(element, "expected a string");
      if (!llvm::is_contained(out, element.scalar))
        out.push_back(element.scalar);
    }
    return success();
  }

  /// Resolves a manifest-relative path to one relative to nothing (absolute)
  /// unless it already is.
  std::string resolvePath(llvm::StringRef path) {
    if (llvm::sys::path::is_absolute(path) || baseDir.empty())
      return path.str();
    llvm::SmallString<256> full(baseDir);
    llvm::sys::path::append(full, path);
    return std::string(full);
  }

  LogicalResult readTest(const YAMLNode &node) {
    if (failed(expectKeys(node, testKeys())))
      return failure();
    const YAMLNode *id = node.get("id");
    if (!id || !id->isScalar() || id->scalar.empty())
      return error(id ? *id : node, "test needs a non-empty 'id'");
    Test &test = getOrAddTest(id->scalar);
    test.loc = id->loc;
    return readFields(test, &node);
  }

  /// Sets \p test's fields from the manifest entry \p node (null for an
  /// imported configuration), falling back to the manifest's defaults.
  LogicalResult readFields(Test &test, const YAMLNode *entry) {
    static const YAMLNode none;
    const YAMLNode &node = entry ? *entry : none;
    test.attrs.set(workload::attr::kManifest, Attribute::getString(manifest));
    std::optional<int64_t> gpus;
    if (const YAMLNode *value = field(node, "gpus")) {
      gpus = value->getAsInt();
      if (!gpus || *gpus < 0)
        return error(*value, "'gpus' must be a non-negative integer");
      test.cost.gpus = *gpus;
    }
    for (auto [key, scale] : {std::pair{"minutes", 60.0}, {"seconds", 1.0}}) {
      if (const YAMLNode *value = field(node, key)) {
        std::optional<double> amount = value->getAsNumber();
        if (!amount || *amount < 0)
          return error(*value, "'" + llvm::Twine(key) +
                                   "' must be a non-negative number");
        test.cost.seconds = *amount * scale;
      }
    }
    test.cost.gpuSeconds = double(test.cost.gpus) * test.cost.seconds;

    if (const YAMLNode *nproc = field(node, "nproc")) {
      std::optional<int64_t> value = nproc->getAsInt();
      if (!value || *value < 1)
        return error(*nproc, "'nproc' must be a positive integer");
      test.attrs.set("nproc", Attribute::getInt(*value));
    }
    for (llvm::StringRef key : {"model_args", "workload"}) {
      if (const YAMLNode *args = field(node, key); args && !args->isNull()) {
        if (!args->isMapping())
          return error(*args, "'" + key + "' must map flags to values");
        for (const auto &[flag, value] : args->entries)
          test.workload.set(flag.scalar, value.toAttribute());
      }
    }
    if (const YAMLNode *scope = field(node, "scope")) {
      if (failed(readStringList(*scope, test.scope)))
        return failure();
      test.attrs.set("scope_source", Attribute::getString("declared"));
    }
    if (const YAMLNode *tags = field(node, "tags"))
      if (failed(readStringList(*tags, test.tags)))
        return failure();
    // A test type (`release`, `regular`...), kept as a tag. Only imported
    // configurations get the harness test type (kTestType): their runs are
    // Megatron's run_ci_test.sh, whose rules lower-workload applies; a
    // manifest job runs its own command, which need not resume as it does.
    if (const YAMLNode *type = field(node, "test_type");
        type && type->isScalar())
      if (!llvm::is_contained(test.tags, type->scalar))
        test.tags.push_back(type->scalar);
    if (const YAMLNode *command = field(node, "command"))
      test.attrs.set("command", Attribute::getString(command->scalar));
    if (const YAMLNode *golden = field(node, "golden"))
      test.attrs.set("golden", Attribute::getString(golden->scalar));
    if (const YAMLNode *tolerant = field(node, "tolerant")) {
      std::optional<bool> value = tolerant->getAsBool();
      if (!value)
        return error(*tolerant, "'tolerant' must be true or false");
      test.attrs.set("tolerant", Attribute::getBool(*value));
    }
    if (const YAMLNode *env = field(node, "env")) {
      if (!env->isMapping())
        return error(*env, "'env' must map variable names to values");
      AttrDict vars;
      for (const auto &[name, value] : env->entries)
        vars.set(name.scalar, Attribute::getString(value.scalar));
      test.attrs.set("env", Attribute::getDict(std::move(vars)));
    }
    if (const YAMLNode *floors = field(node, "floors")) {
      AttrDict overrides;
      if (failed(readFloorOverrideSpec(*floors, overrides, diag)))
        return failure();
      test.attrs.set(kFloorOverridesAttr,
                     Attribute::getDict(std::move(overrides)));
    }
    const YAMLNode *dialect = field(node, "dialect");
    std::string dialectName = dialect ? dialect->scalar : defaultDialect;
    if (!dialectName.empty())
      test.attrs.set("dialect", Attribute::getString(dialectName));
    return success();
  }

  static void setTestType(Test &test, llvm::StringRef type) {
    if (!llvm::is_contained(test.tags, type))
      test.tags.push_back(type.str());
    test.attrs.set(workload::attr::kTestType, Attribute::getString(type));
  }

  Test &getOrAddTest(llvm::StringRef name) {
    TestId id = module.lookupTest(name);
    if (id != kNoTest) {
      ++stats.updated;
      return module.getTest(id);
    }
    ++stats.added;
    return module.getTest(module.addTest(name));
  }

  /// Imports every `<dir>/*/model_config.yaml` of Megatron-LM's functional
  /// tests: the directory name is the test id, MODEL_ARGS the workload,
  /// ENV_VARS the environment and TEST_TYPE a tag.
  LogicalResult importMegatron(const YAMLNode &node) {
    std::vector<const YAMLNode *> dirs;
    if (node.isScalar())
      dirs.push_back(&node);
    else if (node.isSequence())
      for (const YAMLNode &element : node.elements)
        dirs.push_back(&element);
    else
      return error(node, "'import-megatron' must be a directory or a list");
    for (const YAMLNode *dirNode : dirs) {
      std::string dir = resolvePath(dirNode->scalar);
      std::vector<std::string> configs;
      std::error_code ec;
      for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end;
           it != end && !ec; it.increment(ec)) {
        if (llvm::sys::path::filename(it->path()) == "model_config.yaml")
          configs.push_back(it->path());
      }
      if (ec)
        return error(*dirNode, "cannot read '" + dir + "': " + ec.message());
      // Directory order is the file system's; sort for determinism.
      std::sort(configs.begin(), configs.end());
      if (configs.empty())
        diag.warning(dirNode->loc,
                     "no model_config.yaml found under '" + dir + "'");
      for (const std::string &config : configs)
        if (failed(importMegatronConfig(config)))
          return failure();
    }
    return success();
  }

  LogicalResult importMegatronConfig(llvm::StringRef path) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer) {
      diag.emit(Severity::Error, path, 0, 0,
                "cannot read: " + buffer.getError().message());
      return failure();
    }
    unsigned bufferId = diag.addBuffer(std::move(*buffer));
    std::optional<YAMLNode> root =
        parseYAML(bufferId, diag, DuplicateKeys::WarnLastWins);
    if (!root)
      return failure();
    if (!root->isMapping())
      return error(*root, "expected a Megatron model_config mapping");
    llvm::StringRef dir = llvm::sys::path::parent_path(path);
    llvm::StringRef name = llvm::sys::path::filename(dir);
    Test &test = getOrAddTest(name);
    test.loc = root->loc;
    // The manifest's defaults first (a runnable `command`, `tolerant`...),
    // so that what the configuration itself says wins.
    if (failed(readFields(test, nullptr)))
      return failure();
    if (const YAMLNode *args = root->get("MODEL_ARGS");
        args && !args->isNull()) {
      if (!args->isMapping())
        return error(*args, "MODEL_ARGS must map flags to values");
      for (const auto &[flag, value] : args->entries)
        test.workload.set(flag.scalar, value.toAttribute());
    }
    // _run_training.sh:121-126: a later run of the test uses MODEL_ARGS_<n>
    // when the config has it.
    std::vector<Attribute> variants;
    for (const auto &[key, value] : root->entries)
      if (llvm::StringRef(key.scalar).starts_with("MODEL_ARGS_"))
        variants.push_back(Attribute::getString(key.scalar));
    if (!variants.empty())
      test.attrs.set(workload::attr::kRunVariants,
                     Attribute::getList(std::move(variants)));
    if (const YAMLNode *env = root->get("ENV_VARS"); env && env->isMapping()) {
      AttrDict vars;
      for (const auto &[name, value] : env->entries)
        vars.set(name.scalar, Attribute::getString(value.scalar));
      test.attrs.set("env", Attribute::getDict(std::move(vars)));
    }
    if (const YAMLNode *type = root->get("TEST_TYPE"); type && type->isScalar())
      setTestType(test, type->scalar);
    // run_ci_test.sh:77-78: MODE defaults to pretraining.
    if (const YAMLNode *mode = root->get("MODE"); mode && mode->isScalar())
      test.attrs.set(workload::attr::kMode, Attribute::getString(mode->scalar));
    // test_pretraining_regular_pipeline.py:39-42: METRICS names the compared
    // metrics; without it the harness compares its defaults (the schema's).
    if (const YAMLNode *metrics = root->get("METRICS"); metrics) {
      std::vector<std::string> names;
      if (failed(readStringList(*metrics, names)))
        return failure();
      std::vector<Attribute> list;
      for (std::string &metric : names)
        list.push_back(Attribute::getString(metric));
      test.attrs.set(workload::attr::kMetrics,
                     Attribute::getList(std::move(list)));
    }
    test.attrs.set("dialect", Attribute::getString("megatron"));
    test.attrs.set(workload::attr::kConfig, Attribute::getString(path));
    if (failed(readGoldens(test, dir)))
      return failure();
    applyWorldSize(test, name);
    // run_ci_test.sh:297-304: a config may start MODEL_ARGS' run with its
    // own GPUs per node (MODEL_ENV_VARS.MODEL_ARGS.GPUS_PER_NODE); the job
    // still reserves the recipe's GPUs.
    if (const YAMLNode *vars = root->get("MODEL_ENV_VARS"))
      if (const YAMLNode *own = vars->get("MODEL_ARGS"))
        if (const YAMLNode *perNode = own->get("GPUS_PER_NODE"))
          if (std::optional<int64_t> gpus = perNode->getAsInt();
              gpus && *gpus > 0)
            test.attrs.set(
                "nproc",
                Attribute::getInt(*gpus * test.attrs.get(workload::attr::kNodes)
                                              .asInt()
                                              .value_or(1)));
    return success();
  }

  /// Records every golden-values file beside a configuration. The recipes
  /// name them golden_values_{environment}_{platform}.json
  /// (tests/test_utils/recipes/h100/gpt.yaml:59); `lts` files and the
  /// `_2nd` files of resumed runs sit beside them. `golden` is the
  /// dev/H100 one when there is one, as before, else the first by name.
  LogicalResult readGoldens(Test &test, llvm::StringRef dir) {
    std::vector<std::string> files;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef file = llvm::sys::path::filename(it->path());
      if (file.starts_with("golden_values") && file.ends_with(".json"))
        files.push_back(it->path());
    }
    if (files.empty())
      return success();
    std::sort(files.begin(), files.end());
    std::string preferred = files.front();
    for (const std::string &file : files)
      if (llvm::sys::path::filename(file) == "golden_values_dev_dgx_h100.json")
        preferred = file;
    if (llvm::sys::path::filename(preferred).contains("_2nd"))
      for (const std::string &file : files)
        if (!llvm::sys::path::filename(file).contains("_2nd")) {
          preferred = file;
          break;
        }
    test.attrs.set(workload::attr::kGolden, Attribute::getString(preferred));
    std::vector<Attribute> list;
    AttrDict lastStep;
    for (const std::string &file : files) {
      list.push_back(Attribute::getString(file));
      // common.py:69-73: each metric has `values` keyed by step.
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
          llvm::MemoryBuffer::getFile(file);
      if (!text)
        continue;
      llvm::Expected<llvm::json::Value> json =
          llvm::json::parse((*text)->getBuffer());
      if (!json) {
        diag.warning(test.loc, "golden file '" + file + "' is not JSON: " +
                                   llvm::toString(json.takeError()));
        continue;
      }
      const llvm::json::Object *metrics = json->getAsObject();
      if (!metrics)
        continue;
      for (const auto &[metric, body] : *metrics) {
        const llvm::json::Object *object = body.getAsObject();
        const llvm::json::Object *values =
            object ? object->getObject("values") : nullptr;
        if (!values)
          continue;
        int64_t last = lastStep.get(metric.str()).asInt().value_or(0);
        for (const auto &entry : *values) {
          int64_t step;
          if (!llvm::StringRef(entry.first).getAsInteger(10, step))
            last = std::max(last, step);
        }
        lastStep.set(metric.str(), Attribute::getInt(last));
      }
    }
    test.attrs.set(workload::attr::kGoldens,
                   Attribute::getList(std::move(list)));
    if (!lastStep.empty())
      test.attrs.set(workload::attr::kGoldenLastStep,
                     Attribute::getDict(std::move(lastStep)));
    return success();
  }

  /// Sets the world size from the recipes table, else to the harness's
  /// default of one node of 8 GPUs (_run_training.sh:201-202:
  /// NUM_NODES=1, GPUS_PER_NODE=8), unless the manifest set one.
  void applyWorldSize(Test &test, llvm::StringRef name) {
    if (test.cost.gpus != 0 || test.attrs.contains("nproc"))
      return;
    int64_t nodes = 1, perNode = 8;
    // A test no recipe runs (release tests at the pinned commit) needs at
    // least the GPUs of its parallel layout: Megatron requires the world to
    // be a multiple of tp x pp x cp (parallel_state.py), so it gets the
    // fewest 8-GPU nodes that hold one model replica.
    int64_t replica = 1;
    for (llvm::StringRef flag :
         {"--tensor-model-parallel-size", "--pipeline-model-parallel-size",
          "--context-parallel-size"})
      if (std::optional<int64_t> degree = test.workload.get(flag).asInt();
          degree && *degree > 0)
        replica *= *degree;
    nodes = std::max<int64_t>(1, (replica + perNode - 1) / perNode);
    if (auto it = recipes.find(name.str()); it != recipes.end()) {
      nodes = it->second.nodes;
      perNode = it->second.gpusPerNode;
      std::vector<Attribute> names;
      for (const std::string &recipe : it->second.recipes)
        names.push_back(Attribute::getString(recipe));
      test.attrs.set(workload::attr::kRecipes,
                     Attribute::getList(std::move(names)));
    }
    test.cost.gpus = nodes * perNode;
    test.cost.gpuSeconds = double(test.cost.gpus) * test.cost.seconds;
    test.attrs.set("nproc", Attribute::getInt(nodes * perNode));
    test.attrs.set(workload::attr::kNodes, Attribute::getInt(nodes));
  }

  /// One test's entry of the recipes table.
  struct RecipeEntry {
    int64_t nodes = 1;
    int64_t gpusPerNode = 8;
    std::vector<std::string> recipes;
  };

  /// Reads the recipes table (utils/megatron/extract_recipes.py writes it
  /// from Megatron's tests/test_utils/recipes/*.yaml): per test, the nodes
  /// and GPUs per node of its run.
  LogicalResult readRecipes(const YAMLNode &node) {
    if (!node.isScalar())
      return error(node, "'megatron-recipes' must name a recipes table");
    std::string path = resolvePath(node.scalar);
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer)
      return error(node, "cannot read recipes table '" + path +
                             "': " + buffer.getError().message());
    std::optional<YAMLNode> root =
        parseYAML(diag.addBuffer(std::move(*buffer)), diag);
    if (!root)
      return failure();
    if (failed(expectKeys(*root, {"version", "source", "tests"})))
      return failure();
    const YAMLNode *version = root->get("version");
    if (!version || version->getAsInt() != 1)
      return error(version ? *version : *root,
                   "expected 'version: 1' in recipes table");
    const YAMLNode *tests = root->get("tests");
    if (!tests || !tests->isMapping())
      return error(tests ? *tests : *root,
                   "expected a mapping of tests under 'tests'");
    for (const auto &[name, entry] : tests->entries) {
      if (failed(checkMappingKeys(entry, {"nodes", "gpus-per-node", "recipes"},
                                  "recipe entry", diag)))
        return failure();
      RecipeEntry parsed;
      for (auto [key, out] :
           {std::pair{"nodes", &parsed.nodes},
            std::pair{"gpus-per-node", &parsed.gpusPerNode}}) {
        const YAMLNode *value = entry.get(key);
        std::optional<int64_t> number =
            value ? value->getAsInt() : std::nullopt;
        if (!number || *number < 1)
          return error(value ? *value : entry,
                       "'" + llvm::Twine(key) + "' must be a positive integer");
        *out = *number;
      }
      if (const YAMLNode *list = entry.get("recipes"))
        if (failed(readStringList(*list, parsed.recipes)))
          return failure();
      recipes[name.scalar] = std::move(parsed);
    }
    return success();
  }

  Module &module;
  DiagnosticEngine &diag;
  ManifestLoadStats &stats;
  std::string baseDir;
  /// The manifest's path, recorded on its tests.
  std::string manifest;
  /// Test name -> its run's nodes and GPUs (megatron-recipes).
  std::map<std::string, RecipeEntry> recipes;
  std::string defaultDialect;
  const YAMLNode *defaults = nullptr;
};
} // namespace

LogicalResult fastci::loadTestManifest(unsigned bufferId, Module &module,
                                       DiagnosticEngine &diag,
                                       ManifestLoadStats &stats) {
  std::optional<YAMLNode> root = parseYAML(bufferId, diag);
  if (!root)
    return failure();
  llvm::StringRef name =
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBufferIdentifier();
  return ManifestReader(module, diag, stats, name).read(*root);
}

/// A reason: a non-empty string, where a bare `true` or `yes` is taken for a
/// forgotten one.
static bool isReason(const YAMLNode &node) {
  return node.isScalar() && !llvm::StringRef(node.scalar).trim().empty() &&
         (node.quoted || !node.getAsBool());
}

LogicalResult fastci::readFloorOverrideSpec(const YAMLNode &node, AttrDict &out,
                                            DiagnosticEngine &diag) {
  auto error = [&](const YAMLNode &at, const llvm::Twine &message) {
    diag.error(at.loc, message);
    return failure();
  };
  if (!node.isMapping())
    return error(node, "'floors' must map floor names to 'off: <reason>' "
                       "or 'at-least: <n>'");
  for (const auto &[name, value] : node.entries) {
    if (!name.isScalar() || name.scalar.empty())
      return error(name, "expected a floor name");
    std::string what = "floor override '" + name.scalar + "'";
    if (failed(checkMappingKeys(value, {"off", "at-least", "why"}, what, diag)))
      return failure();
    const YAMLNode *off = value.get("off");
    const YAMLNode *atLeast = value.get("at-least");
    const YAMLNode *why = value.get("why");
    if (off && atLeast)
      return error(*atLeast, "floor '" + name.scalar +
                                 "' is either turned off or raised, not "
                                 "both");
    if (!off && !atLeast)
      return error(value, what + " needs 'off: <reason>' or 'at-least: <n>'");
    AttrDict entry;
    if (off) {
      // The reason is what a reader of the plan sees instead of the
      // floor's own; `off: true` would leave them with none.
      if (why)
        return error(*why, "the reason for turning floor '" + name.scalar +
                               "' off is the value of 'off'");
      if (!isReason(*off))
        return error(*off, "turning floor '" + name.scalar +
                               "' off needs a reason: off: \"<why this "
                               "test does not need it>\"");
      entry.set("off", Attribute::getString(off->scalar));
    } else {
      std::optional<int64_t> bound =
          atLeast->isScalar() ? atLeast->getAsInt() : std::nullopt;
      if (!bound || *bound < 0)
        return error(*atLeast, "'at-least' of floor '" + name.scalar +
                                   "' must be a non-negative integer");
      entry.set("at-least", Attribute::getInt(*bound));
      if (why) {
        if (!isReason(*why))
          return error(*why, "'why' of floor '" + name.scalar +
                                 "' must be a non-empty string");
        entry.set("why", Attribute::getString(why->scalar));
      }
    }
    out.set(name.scalar, Attribute::getDict(std::move(entry)));
  }
  return success();
}
