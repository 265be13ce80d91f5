//===- Schema.cpp - Workload dimensions, roles and constraints ------------===//
//
// Reads workload schemas from YAML. The reader is strict: unknown keys,
// unknown roles and constraints naming undeclared dimensions are errors at
// their location, because a typo in a schema would otherwise silently allow
// an invalid lowering.
//
//===----------------------------------------------------------------------===//
#include "fastci/Workload/Schema.h"
#include "fastci/Support/YAML.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include <limits>

using namespace fastci;

llvm::StringRef fastci::stringifyDimensionRole(DimensionRole role) {
  switch (role) {
  case DimensionRole::Steps:
    return "steps";
  case DimensionRole::Depth:
    return "depth";
  case DimensionRole::Width:
    return "width";
  case DimensionRole::Sequence:
    return "sequence";
  case DimensionRole::Batch:
    return "batch";
  case DimensionRole::Checkpoint:
    return "checkpoint";
  case DimensionRole::Parallel:
    return "parallel";
  case DimensionRole::Precision:
    return "precision";
  }
  return "steps";
}

bool fastci::isShrinkableRole(DimensionRole role) {
  return role != DimensionRole::Parallel && role != DimensionRole::Precision;
}

const Dimension *Dialect::lookup(llvm::StringRef name) const {
  for (const Dimension &dim : dimensions)
    if (dim.name == name)
      return &dim;
  return nullptr;
}

const Dimension *Dialect::lookupFlag(llvm::StringRef flag) const {
  for (const Dimension &dim : dimensions)
    if ((!dim.flag.empty() && dim.flag == flag) ||
        llvm::is_contained(dim.aliases, flag))
      return &dim;
  return nullptr;
}

bool Dialect::knowsFlag(llvm::StringRef flag) const {
  return lookupFlag(flag) || flags.contains(flag);
}

std::vector<std::string>
Dialect::unknownFlagDimensions(llvm::StringRef flag) const {
  // The words of the flag's name (`--moe-layer-freq`: moe, layer, freq)
  // are matched as prefixes, so `layers` and `layer` match alike.
  llvm::SmallVector<llvm::StringRef> words;
  llvm::SplitString(flag, words, "-_.");
  std::vector<std::string> result;
  for (const auto &[word, dims] : unknownFlagWords)
    for (llvm::StringRef part : words)
      if (part.lower().rfind(word, 0) == 0) {
        for (const std::string &dim : dims)
          if (!llvm::is_contained(result, dim))
            result.push_back(dim);
        break;
      }
  if (!result.empty())
    return result;
  for (const Dimension &dim : dimensions)
    if (!dim.flag.empty() && llvm::is_contained(unknownFlagRoles, dim.role))
      result.push_back(dim.name);
  return result;
}

const Dialect *WorkloadSchema::lookup(llvm::StringRef name) const {
  for (const Dialect &dialect : dialects)
    if (dialect.name == name)
      return &dialect;
  return nullptr;
}

llvm::StringRef fastci::getDefaultWorkloadSchemaText() {
  static const char text[] =
#include "DefaultSchema.inc"
      ;
  return llvm::StringRef(text, sizeof(text) - 1);
}

namespace {
/// Reads one schema document, reporting the first error.
class SchemaReader {
public:
  explicit SchemaReader(DiagnosticEngine &diag) : diag(diag) {}

  std::optional<WorkloadSchema> read(const YAMLNode &root) {
    if (!expectKeys(root, {"version", "dialects"}))
      return std::nullopt;
    const YAMLNode *version = root.get("version");
    if (!version || version->getAsInt() != 1)
      return error(version ? *version : root,
                   "expected 'version: 1' in workload schema");
    const YAMLNode *dialects = root.get("dialects");
    if (!dialects || !dialects->isMapping())
      return error(dialects ? *dialects : root,
                   "expected a mapping of dialects under 'dialects'");
    WorkloadSchema schema;
    for (const auto &[name, body] : dialects->entries) {
      std::optional<Dialect> dialect = readDialect(name.scalar, body);
      if (!dialect)
        return std::nullopt;
      schema.dialects.push_back(std::move(*dialect));
    }
    return schema;
  }

private:
  std::nullopt_t error(const YAMLNode &node, const llvm::Twine &message) {
    diag.error(node.loc, message);
    return std::nullopt;
  }

  /// Reads the integer at \p key of \p node into \p out when the key is
  /// present; false, after a located error, when it is not an integer of at
  /// least \p lowest.
  bool readInt(const YAMLNode &node, llvm::StringRef key, int64_t &out,
               int64_t lowest = std::numeric_limits<int64_t>::min()) {
    const YAMLNode *value = node.get(key);
    if (!value)
      return true;
    if (std::optional<int64_t> parsed = value->getAsInt();
        parsed && *parsed >= lowest) {
      out = *parsed;
      return true;
    }
    llvm::StringRef kind = lowest == 0   ? "a non-negative integer"
                           : lowest == 1 ? "a positive integer"
                                         : "an integer";
    error(*value, "'" + key + "' must be " + kind);
    return false;
  }

  /// Rejects keys of \p node outside \p allowed; false on error.
  bool expectKeys(const YAMLNode &node,
                  std::initializer_list<llvm::StringRef> allowed) {
    return succeeded(checkMappingKeys(node, allowed, /*what=*/"", diag));
  }

  std::optional<std::vector<std::string>> readNames(const YAMLNode &node) {
    if (!node.isSequence())
      return error(node, "expected a list of dimension names");
    std::vector<std::string> names;
    for (const YAMLNode &element : node.elements) {
      if (!element.isScalar())
        return error(element, "expected a dimension name");
      names.push_back(element.scalar);
    }
    return names;
  }

  std::optional<DimensionRole> readRole(const YAMLNode &role) {
    std::optional<DimensionRole> parsed =
        llvm::StringSwitch<std::optional<DimensionRole>>(role.scalar)
            .Case("steps", DimensionRole::Steps)
            .Case("depth", DimensionRole::Depth)
            .Case("width", DimensionRole::Width)
            .Case("sequence", DimensionRole::Sequence)
            .Case("batch", DimensionRole::Batch)
            .Case("checkpoint", DimensionRole::Checkpoint)
            .Case("parallel", DimensionRole::Parallel)
            .Case("precision", DimensionRole::Precision)
            .Default(std::nullopt);
    if (!parsed)
      error(role, "unknown role '" + role.scalar +
                      "' (expected steps, depth, width, sequence, batch, "
                      "checkpoint, parallel or precision)");
    return parsed;
  }

  std::optional<std::vector<DimensionRole>> readRoles(const YAMLNode &node) {
    if (!node.isSequence())
      return error(node, "expected a list of roles");
    std::vector<DimensionRole> roles;
    for (const YAMLNode &element : node.elements) {
      std::optional<DimensionRole> role = readRole(element);
      if (!role)
        return std::nullopt;
      roles.push_back(*role);
    }
    return roles;
  }

  /// Every name in \p names is a dimension of \p dialect (or, with
  /// \p allowIntegers, an integer constant); reports the first that is not.
  bool checkDeclared(const YAMLNode &at, llvm::ArrayRef<std::string> names,
                     const Dialect &dialect, llvm::StringRef what,
                     bool allowIntegers = false) {
    for (const std::string &name : names) {
      int64_t constant;
      if (allowIntegers && !llvm::StringRef(name).getAsInteger(10, constant))
        continue;
      if (!dialect.lookup(name)) {
        error(at, what + " names undeclared dimension '" + name + "'");
        return false;
      }
    }
    return true;
  }

  /// Reads a flag, test-type or mode rule (docs/Workloads.md).
  std::optional<HarnessRule> readRule(llvm::StringRef name,
                                      const YAMLNode &node,
                                      const Dialect &dialect,
                                      llvm::StringRef what) {
    HarnessRule rule;
    rule.name = name.str();
    if (node.isNull())
      return rule;
    if (!expectKeys(node, {"scope", "pin", "pin-roles", "unpin", "requires",
                           "layer-list", "keep", "goldens", "why"}))
      return std::nullopt;
    std::string label = (what + " '" + name + "'").str();
    for (auto [key, out] :
         {std::pair{"scope", &rule.scopes}, std::pair{"pin", &rule.pins},
          std::pair{"unpin", &rule.unpins},
          std::pair{"requires", &rule.required}}) {
      const YAMLNode *list = node.get(key);
      if (!list)
        continue;
      std::optional<std::vector<std::string>> names = readNames(*list);
      if (!names)
        return std::nullopt;
      if (llvm::StringRef(key) == "scope") {
        for (const std::string &scope : *names)
          if (!dialect.scopes.contains(scope))
            return error(*list, label + " adds unknown scope '" + scope + "'");
      } else if (!checkDeclared(*list, *names, dialect, label)) {
        return std::nullopt;
      }
      *out = std::move(*names);
    }
    if (const YAMLNode *roles = node.get("pin-roles")) {
      std::optional<std::vector<DimensionRole>> parsed = readRoles(*roles);
      if (!parsed)
        return std::nullopt;
      rule.pinRoles = std::move(*parsed);
    }
    if (const YAMLNode *list = node.get("layer-list")) {
      if (!checkDeclared(*list, {list->scalar}, dialect, label))
        return std::nullopt;
      rule.layerList = list->scalar;
    }
    if (const YAMLNode *keep = node.get("keep")) {
      if (!keep->isScalar() || keep->scalar.empty())
        return error(*keep, "'keep' needs the reason the test is kept");
      rule.keep = keep->scalar;
    }
    if (const YAMLNode *goldens = node.get("goldens")) {
      std::optional<bool> value = goldens->getAsBool();
      if (!value)
        return error(*goldens, "'goldens' must be true or false");
      rule.goldens = *value;
    }
    if (const YAMLNode *why = node.get("why"))
      rule.why = why->scalar;
    // A rule that pins, frees or requires something says why: that reason
    // is what the plan shows next to the dimension.
    if (rule.why.empty() && (!rule.pins.empty() || !rule.pinRoles.empty() ||
                             !rule.unpins.empty() || !rule.layerList.empty()))
      return error(node, label + " needs a 'why'");
    return rule;
  }

  bool readRules(const YAMLNode &node, const Dialect &dialect,
                 llvm::StringRef what, llvm::StringMap<HarnessRule> &out) {
    if (!node.isMapping()) {
      error(node, "expected a mapping of " + what + "s");
      return false;
    }
    for (const auto &[name, body] : node.entries) {
      std::optional<HarnessRule> rule =
          readRule(name.scalar, body, dialect, what);
      if (!rule)
        return false;
      out[name.scalar] = std::move(*rule);
    }
    return true;
  }

  /// Reads the `harness:` section: test types, modes, compared metrics and
  /// the timing windows.
  bool readHarness(const YAMLNode &node, Dialect &dialect) {
    if (!expectKeys(node, {"test-types", "modes", "metrics", "timing"}))
      return false;
    if (const YAMLNode *types = node.get("test-types"))
      if (!readRules(*types, dialect, "test type", dialect.testTypes))
        return false;
    if (const YAMLNode *modes = node.get("modes"))
      if (!readRules(*modes, dialect, "mode", dialect.modes))
        return false;
    if (const YAMLNode *metrics = node.get("metrics")) {
      std::optional<std::vector<std::string>> names = readNames(*metrics);
      if (!names)
        return false;
      dialect.defaultMetrics = std::move(*names);
    }
    if (const YAMLNode *timing = node.get("timing")) {
      if (!expectKeys(*timing, {"metric", "windows"}))
        return false;
      const YAMLNode *metric = timing->get("metric");
      const YAMLNode *windows = timing->get("windows");
      if (!metric || !metric->isScalar() || !windows ||
          !windows->isSequence()) {
        error(*timing, "'timing' needs 'metric' and a list of 'windows'");
        return false;
      }
      dialect.timingMetric = metric->scalar;
      for (const YAMLNode &element : windows->elements) {
        if (!expectKeys(element, {"up-to", "first", "last"}))
          return false;
        TimingWindow window;
        if (element.get("up-to")) {
          int64_t upTo = 0;
          if (!readInt(element, "up-to", upTo, 1))
            return false;
          window.upTo = upTo;
        }
        if (!element.get("first") || !element.get("last")) {
          error(element, "a timing window needs 'first' and 'last'");
          return false;
        }
        if (!readInt(element, "first", window.first, 1) ||
            !readInt(element, "last", window.last, 1))
          return false;
        dialect.timingWindows.push_back(window);
      }
    }
    return true;
  }

  std::optional<Dimension> readDimension(const YAMLNode &node) {
    if (!expectKeys(node, {"name", "flag", "role", "min", "default", "cost",
                           "source", "derive", "lower", "follows", "aliases"}))
      return std::nullopt;
    Dimension dim;
    const YAMLNode *name = node.get("name");
    if (!name || !name->isScalar() || name->scalar.empty())
      return error(name ? *name : node, "dimension needs a 'name'");
    dim.name = name->scalar;
    if (const YAMLNode *flag = node.get("flag"))
      dim.flag = flag->scalar;
    if (const YAMLNode *aliases = node.get("aliases")) {
      std::optional<std::vector<std::string>> list = readNames(*aliases);
      if (!list)
        return std::nullopt;
      dim.aliases = std::move(*list);
    }
    const YAMLNode *role = node.get("role");
    if (!role)
      return error(node, "dimension '" + dim.name + "' needs a 'role'");
    std::optional<DimensionRole> parsedRole = readRole(*role);
    if (!parsedRole)
      return std::nullopt;
    dim.role = *parsedRole;
    if (!readInt(node, "min", dim.min, 0))
      return std::nullopt;
    if (node.get("default")) {
      int64_t value = 0;
      if (!readInt(node, "default", value))
        return std::nullopt;
      dim.defaultValue = value;
    }
    if (const YAMLNode *cost = node.get("cost")) {
      std::optional<double> value = cost->getAsNumber();
      if (!value || *value < 0)
        return error(*cost, "'cost' must be a non-negative number");
      dim.costExponent = *value;
    }
    if (const YAMLNode *lower = node.get("lower")) {
      std::optional<bool> value = lower->getAsBool();
      if (!value)
        return error(*lower, "'lower' must be true or false");
      dim.lower = *value;
    }
    if (const YAMLNode *source = node.get("source")) {
      if (source->scalar != "nproc" && source->scalar != "timing-window")
        return error(*source, "unknown source '" + source->scalar +
                                  "' (expected 'nproc' or 'timing-window')");
      dim.source = source->scalar;
    }
    if (const YAMLNode *follows = node.get("follows")) {
      if (!follows->isScalar() || follows->scalar.empty())
        return error(*follows, "'follows' must name a dimension");
      dim.follows = follows->scalar;
    }
    if (const YAMLNode *derive = node.get("derive")) {
      if (!expectKeys(*derive, {"num", "den", "round"}))
        return std::nullopt;
      if (const YAMLNode *round = derive->get("round")) {
        if (round->scalar != "down")
          return error(*round, "'round' must be 'down'");
        dim.deriveRoundDown = true;
      }
      for (auto [key, out] : {std::pair{"num", &dim.deriveNum},
                              std::pair{"den", &dim.deriveDen}}) {
        if (const YAMLNode *names = derive->get(key)) {
          std::optional<std::vector<std::string>> list = readNames(*names);
          if (!list)
            return std::nullopt;
          *out = std::move(*list);
        }
      }
    }
    return dim;
  }

  /// Reads a constraint or, with \p floor, a behaviour floor: a named
  /// `at-least` relation with a reason.
  std::optional<Constraint> readConstraint(const YAMLNode &node,
                                           const Dialect &dialect,
                                           bool floor = false) {
    if (floor ? !expectKeys(node, {"name", "at-least", "than", "factor", "plus",
                                   "when", "unless", "if-scope", "if-test-type",
                                   "why"})
              : !expectKeys(node,
                            {"divisible", "by", "factor", "less", "at-least",
                             "than", "plus", "preserve", "when", "unless",
                             "if-scope", "if-test-type", "capped", "why"}))
      return std::nullopt;
    Constraint constraint;
    if (floor) {
      const YAMLNode *name = node.get("name");
      if (!name || !name->isScalar() || name->scalar.empty())
        return error(node, "floor needs a 'name'");
      constraint.name = name->scalar;
      if (!node.get("at-least"))
        return error(node, "floor '" + constraint.name +
                               "' needs 'at-least: <dimension>'");
      // The reason is what a user reads when a floor keeps a test bigger.
      const YAMLNode *why = node.get("why");
      if (!why || !why->isScalar() || why->scalar.empty())
        return error(node, "floor '" + constraint.name + "' needs a 'why'");
    }
    if (const YAMLNode *why = node.get("why"))
      constraint.why = why->scalar;
    if (const YAMLNode *when = node.get("when"))
      constraint.when = when->scalar;
    if (const YAMLNode *scope = node.get("if-scope"))
      constraint.ifScope = scope->scalar;
    for (auto [key, out] : {std::pair{"unless", &constraint.unless},
                            std::pair{"if-test-type", &constraint.ifTestTypes}})
      if (const YAMLNode *value = node.get(key)) {
        // One name or a list of them.
        std::optional<std::vector<std::string>> names =
            value->isScalar() ? std::optional(std::vector{value->scalar})
                              : readNames(*value);
        if (!names)
          return std::nullopt;
        *out = std::move(*names);
      }
    if (const YAMLNode *capped = node.get("capped")) {
      std::optional<bool> value = capped->getAsBool();
      if (!value)
        return error(*capped, "'capped' must be true or false");
      constraint.capped = *value;
    }
    if (const YAMLNode *value = node.get("divisible")) {
      constraint.kind = Constraint::Kind::Divisible;
      constraint.value = value->scalar;
      const YAMLNode *by = node.get("by");
      if (!by)
        return error(node, "'divisible' needs 'by'");
      std::optional<std::vector<std::string>> names = readNames(*by);
      if (!names)
        return std::nullopt;
      constraint.operands = std::move(*names);
      if (!readInt(node, "factor", constraint.factor, 1))
        return std::nullopt;
      if (const YAMLNode *plus = node.get("plus"))
        return error(*plus, "'plus' only applies to 'less' and 'at-least'");
    } else if (const YAMLNode *value =
                   node.get("less") ? node.get("less") : node.get("at-least")) {
      constraint.kind =
          node.get("less") ? Constraint::Kind::Less : Constraint::Kind::AtLeast;
      constraint.value = value->scalar;
      const YAMLNode *than = node.get("than");
      if (!than)
        return error(node, "comparison needs 'than: <dimension>', a list of "
                           "dimensions or an integer");
      if (than->isScalar() && than->getAsInt()) {
        constraint.constant = *than->getAsInt();
      } else if (than->isScalar()) {
        constraint.operands = {than->scalar};
      } else {
        std::optional<std::vector<std::string>> names = readNames(*than);
        if (!names || names->empty())
          return error(*than, "'than' needs at least one dimension");
        constraint.operands = std::move(*names);
      }
      if (!readInt(node, "factor", constraint.factor, 1) ||
          !readInt(node, "plus", constraint.offset))
        return std::nullopt;
    } else if (const YAMLNode *preserve = node.get("preserve")) {
      constraint.kind = Constraint::Kind::Preserve;
      if (!expectKeys(*preserve, {"num", "den"}))
        return std::nullopt;
      const YAMLNode *num = preserve->get("num");
      if (!num)
        return error(*preserve, "'preserve' needs 'num'");
      std::optional<std::vector<std::string>> names = readNames(*num);
      if (!names)
        return std::nullopt;
      constraint.operands = std::move(*names);
      if (const YAMLNode *den = preserve->get("den")) {
        std::optional<std::vector<std::string>> denNames = readNames(*den);
        if (!denNames)
          return std::nullopt;
        constraint.denominators = std::move(*denNames);
      }
    } else {
      return error(node, "constraint needs one of 'divisible', 'less', "
                         "'at-least' or 'preserve'");
    }
    // Every name a constraint uses must be declared: a misspelt dimension
    // would make the constraint vacuous.
    std::vector<std::string> used = constraint.operands;
    llvm::append_range(used, constraint.denominators);
    if (!constraint.value.empty())
      used.push_back(constraint.value);
    if (!constraint.when.empty())
      used.push_back(constraint.when);
    llvm::append_range(used, constraint.unless);
    for (const std::string &name : used)
      if (!dialect.lookup(name))
        return error(node,
                     "constraint names undeclared dimension '" + name + "'");
    return constraint;
  }

  std::optional<Dialect> readDialect(llvm::StringRef name,
                                     const YAMLNode &node) {
    if (!expectKeys(node, {"dimensions", "constraints", "floors", "scopes",
                           "fixed-fraction", "name-scopes", "flags",
                           "neutral-flags", "unknown-flags", "harness"}))
      return std::nullopt;
    Dialect dialect;
    dialect.name = name.str();
    if (const YAMLNode *fixed = node.get("fixed-fraction")) {
      std::optional<double> value = fixed->getAsNumber();
      if (!value || *value < 0 || *value > 1)
        return error(*fixed, "'fixed-fraction' must be a number in [0, 1]");
      dialect.fixedFraction = *value;
    }
    const YAMLNode *dims = node.get("dimensions");
    if (!dims || !dims->isSequence())
      return error(dims ? *dims : node,
                   "dialect '" + name + "' needs a list of 'dimensions'");
    llvm::StringSet<> names;
    for (const YAMLNode &element : dims->elements) {
      std::optional<Dimension> dim = readDimension(element);
      if (!dim)
        return std::nullopt;
      if (!names.insert(dim->name).second)
        return error(element, "duplicate dimension '" + dim->name + "'");
      dialect.dimensions.push_back(std::move(*dim));
    }
    for (const Dimension &dim : dialect.dimensions) {
      for (const std::string &ref :
           llvm::concat<const std::string>(dim.deriveNum, dim.deriveDen))
        if (int64_t constant; !names.contains(ref) &&
                              llvm::StringRef(ref).getAsInteger(10, constant))
          return error(*dims, "dimension '" + dim.name +
                                  "' derives from undeclared '" + ref + "'");
      if (!dim.follows.empty() && !names.contains(dim.follows))
        return error(*dims, "dimension '" + dim.name +
                                "' follows undeclared '" + dim.follows + "'");
    }
    if (const YAMLNode *constraints = node.get("constraints")) {
      if (!constraints->isSequence())
        return error(*constraints, "expected a list of constraints");
      for (const YAMLNode &element : constraints->elements) {
        std::optional<Constraint> constraint = readConstraint(element, dialect);
        if (!constraint)
          return std::nullopt;
        dialect.constraints.push_back(std::move(*constraint));
      }
    }
    if (const YAMLNode *floors = node.get("floors")) {
      if (!floors->isSequence())
        return error(*floors, "expected a list of floors");
      llvm::StringSet<> floorNames;
      for (const YAMLNode &element : floors->elements) {
        std::optional<Constraint> floor =
            readConstraint(element, dialect, /*floor=*/true);
        if (!floor)
          return std::nullopt;
        if (!floorNames.insert(floor->name).second)
          return error(element, "duplicate floor '" + floor->name + "'");
        dialect.floors.push_back(std::move(*floor));
      }
    }
    if (const YAMLNode *scopes = node.get("scopes")) {
      if (!scopes->isMapping())
        return error(*scopes, "expected a mapping of scopes");
      for (const auto &[scope, pinned] : scopes->entries) {
        std::optional<std::vector<std::string>> list = readNames(pinned);
        if (!list)
          return std::nullopt;
        for (const std::string &dimName : *list)
          if (!names.contains(dimName))
            return error(pinned, "scope '" + scope.scalar +
                                     "' pins undeclared dimension '" + dimName +
                                     "'");
        dialect.scopes[scope.scalar] = std::move(*list);
      }
    }
    if (const YAMLNode *patterns = node.get("name-scopes")) {
      if (!patterns->isSequence())
        return error(*patterns, "expected a list of name scopes");
      for (const YAMLNode &element : patterns->elements) {
        if (!expectKeys(element, {"regex", "scope"}))
          return std::nullopt;
        const YAMLNode *regex = element.get("regex");
        const YAMLNode *scope = element.get("scope");
        if (!regex || !scope)
          return error(element, "a name scope needs 'regex' and 'scope'");
        std::string problem;
        if (!llvm::Regex(regex->scalar).isValid(problem))
          return error(*regex, "invalid regex: " + problem);
        if (!dialect.scopes.contains(scope->scalar))
          return error(*scope, "unknown scope '" + scope->scalar + "'");
        dialect.nameScopes.push_back({regex->scalar, scope->scalar});
      }
    }
    if (const YAMLNode *neutral = node.get("neutral-flags")) {
      std::optional<std::vector<std::string>> list = readNames(*neutral);
      if (!list)
        return std::nullopt;
      for (std::string &flag : *list)
        dialect.flags[flag].name = flag;
    }
    if (const YAMLNode *flags = node.get("flags"))
      if (!readRules(*flags, dialect, "flag", dialect.flags))
        return std::nullopt;
    if (const YAMLNode *unknown = node.get("unknown-flags")) {
      if (!expectKeys(*unknown, {"words", "otherwise-roles"}))
        return std::nullopt;
      if (const YAMLNode *words = unknown->get("words")) {
        if (!words->isMapping())
          return error(*words, "expected a mapping of words to dimensions");
        for (const auto &[word, dims] : words->entries) {
          std::optional<std::vector<std::string>> list = readNames(dims);
          if (!list ||
              !checkDeclared(dims, *list, dialect,
                             "unknown-flag word '" + word.scalar + "'"))
            return std::nullopt;
          dialect.unknownFlagWords.push_back({word.scalar, std::move(*list)});
        }
      }
      if (const YAMLNode *roles = unknown->get("otherwise-roles")) {
        std::optional<std::vector<DimensionRole>> parsed = readRoles(*roles);
        if (!parsed)
          return std::nullopt;
        dialect.unknownFlagRoles = std::move(*parsed);
      }
    }
    if (const YAMLNode *harness = node.get("harness"))
      if (!readHarness(*harness, dialect))
        return std::nullopt;
    // A misspelt test type would make its rules silently never apply.
    for (const Constraint &c :
         llvm::concat<const Constraint>(dialect.constraints, dialect.floors))
      for (const std::string &type : c.ifTestTypes)
        if (!dialect.testTypes.contains(type))
          return error(node, "'if-test-type' names unknown test type '" + type +
                                 "' (declare it under harness: "
                                 "test-types:)");
    return dialect;
  }

  DiagnosticEngine &diag;
};
} // namespace

std::optional<WorkloadSchema>
fastci::parseWorkloadSchema(unsigned bufferId, DiagnosticEngine &diag) {
  std::optional<YAMLNode> root = parseYAML(bufferId, diag);
  if (!root)
    return std::nullopt;
  return SchemaReader(diag).read(*root);
}

std::optional<WorkloadSchema>
fastci::loadWorkloadSchema(llvm::StringRef path, llvm::SMLoc loc,
                           DiagnosticEngine &diag) {
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  if (path.empty()) {
    buffer = llvm::MemoryBuffer::getMemBuffer(getDefaultWorkloadSchemaText(),
                                              "<default workload schema>");
  } else {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!file) {
      diag.error(loc, "cannot read workload schema '" + path +
                          "': " + file.getError().message());
      return std::nullopt;
    }
    buffer = std::move(*file);
  }
  return parseWorkloadSchema(diag.addBuffer(std::move(buffer)), diag);
}
