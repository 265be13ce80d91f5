//===- Lowering.cpp - The smallest workload that still validates a test ---===//
//
// Implements scope inference and the constraint-respecting lowering search.
// Dimension values are int64 throughout: flags given as booleans count as 0/1
// and string-valued flags (`--fp8-format: hybrid`) as "present" (1), which is
// all constraints and scopes need from them; only integer-valued dimensions
// are ever lowered.
//
//===----------------------------------------------------------------------===//
#include "fastci/Workload/Lowering.h"
#include "fastci/Support/YAML.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

using namespace fastci;

/// Lower-cases \p text and turns every separator into '_', so `tp2-PP4` and
/// scope `dist-optimizer` tokenize alike.
static std::vector<std::string> tokenize(llvm::StringRef text) {
  std::vector<std::string> tokens;
  std::string current;
  for (char c : text) {
    if (llvm::isAlnum(c)) {
      current.push_back(llvm::toLower(c));
      continue;
    }
    if (!current.empty())
      tokens.push_back(std::move(current));
    current.clear();
  }
  if (!current.empty())
    tokens.push_back(std::move(current));
  return tokens;
}

/// The spelling scopes are compared in: lower case, `-` for `_`, so a
/// manifest's `dist_optimizer` is the schema's `dist-optimizer`.
static std::string canonicalScope(llvm::StringRef name) {
  std::string result = name.lower();
  std::replace(result.begin(), result.end(), '_', '-');
  return result;
}

/// True if \p scope names \p name, in canonical spelling.
static bool scopeContains(llvm::ArrayRef<std::string> scope,
                          llvm::StringRef name) {
  std::string wanted = canonicalScope(name);
  return llvm::any_of(scope, [&](const std::string &entry) {
    return canonicalScope(entry) == wanted;
  });
}

std::vector<std::string> fastci::inferScope(llvm::StringRef testName,
                                            const Dialect &dialect) {
  std::vector<std::string> tokens = tokenize(testName);
  std::vector<std::string> scope;
  auto add = [&](llvm::StringRef name) {
    if (!llvm::is_contained(scope, name))
      scope.push_back(name.str());
  };
  // Scopes are visited in sorted order so the result does not depend on the
  // StringMap's hash order.
  std::vector<llvm::StringRef> names;
  for (const auto &entry : dialect.scopes)
    names.push_back(entry.getKey());
  llvm::sort(names);
  for (llvm::StringRef name : names) {
    std::vector<std::string> scopeTokens = tokenize(name);
    if (scopeTokens.empty())
      continue;
    // A multi-token scope (`dist-optimizer`) matches consecutive tokens.
    for (size_t i = 0; i + scopeTokens.size() <= tokens.size(); ++i) {
      if (std::equal(scopeTokens.begin(), scopeTokens.end(),
                     tokens.begin() + i)) {
        add(name);
        break;
      }
    }
    // A degree token (`tp2`, `ep8`) names a parallel scope when above one.
    if (scopeTokens.size() != 1)
      continue;
    for (const std::string &token : tokens) {
      llvm::StringRef rest(token);
      unsigned degree;
      if (rest.consume_front(scopeTokens[0]) && !rest.empty() &&
          !rest.getAsInteger(10, degree) && degree > 1)
        add(name);
    }
  }
  for (const NameScope &pattern : dialect.nameScopes) {
    llvm::Regex regex(pattern.regex);
    if (llvm::any_of(tokens, [&](const std::string &token) {
          return regex.match(token);
        }))
      add(pattern.scope);
  }
  return scope;
}

/// The string attribute \p key of \p test, or "".
static llvm::StringRef stringAttr(const Test &test, llvm::StringRef key) {
  Attribute value = test.attrs.get(key);
  return value.isString() ? value.getString() : llvm::StringRef();
}

/// The harness rules that apply to \p test: its test type's, its mode's
/// and those of the known flags its workload names.
static std::vector<const HarnessRule *>
applicableRules(const Test &test, const Dialect &dialect) {
  std::vector<const HarnessRule *> rules;
  auto addFrom = [&](const llvm::StringMap<HarnessRule> &map,
                     llvm::StringRef key) {
    auto it = key.empty() ? map.end() : map.find(key);
    if (it != map.end())
      rules.push_back(&it->second);
  };
  addFrom(dialect.testTypes, stringAttr(test, workload::attr::kTestType));
  addFrom(dialect.modes, stringAttr(test, workload::attr::kMode));
  for (const auto &entry : test.workload)
    addFrom(dialect.flags, entry.first);
  return rules;
}

std::vector<std::string> fastci::harnessScopes(const Test &test,
                                               const Dialect &dialect) {
  std::vector<std::string> scopes;
  for (const HarnessRule *rule : applicableRules(test, dialect))
    for (const std::string &scope : rule->scopes)
      if (!llvm::is_contained(scopes, scope))
        scopes.push_back(scope);
  return scopes;
}

std::vector<std::string> fastci::unknownFlags(const Test &test,
                                              const Dialect &dialect) {
  std::vector<std::string> flags;
  if (dialect.unknownFlagWords.empty() && dialect.unknownFlagRoles.empty())
    return flags;
  for (const auto &entry : test.workload)
    if (!dialect.knowsFlag(entry.first))
      flags.push_back(entry.first);
  return flags;
}

/// The number of entries of a per-layer list written as a flag value: a
/// YAML list, or Megatron's Python list expression (`[1,0,1]`,
/// `([0]*3+[1]*9)`, evaluated by args' eval of list-typed flags). nullopt
/// when \p value is no list.
static std::optional<int64_t> listLength(const Attribute &value) {
  if (value.isList())
    return int64_t(value.getList().size());
  if (!value.isString())
    return std::nullopt;
  std::string text;
  for (char c : value.getString())
    if (!llvm::isSpace(c))
      text.push_back(c);
  llvm::StringRef rest(text);
  while (rest.consume_front("(") && rest.consume_back(")")) {
  }
  if (!rest.starts_with("["))
    return std::nullopt;
  // Terms `[a,b,...]` or `[a,...]*n`, joined by `+`.
  int64_t length = 0;
  while (!rest.empty()) {
    if (!rest.consume_front("["))
      return std::nullopt;
    size_t close = rest.find(']');
    if (close == llvm::StringRef::npos)
      return std::nullopt;
    llvm::StringRef items = rest.take_front(close);
    rest = rest.drop_front(close + 1);
    llvm::SmallVector<llvm::StringRef> parts;
    items.split(parts, ',', -1, /*KeepEmpty=*/false);
    int64_t count = parts.size(), times = 1;
    if (rest.consume_front("*")) {
      size_t end = rest.find('+');
      if (rest.take_front(end).getAsInteger(10, times))
        return std::nullopt;
      rest = end == llvm::StringRef::npos ? llvm::StringRef()
                                          : rest.drop_front(end);
    }
    length += count * times;
    if (!rest.empty() && !rest.consume_front("+"))
      return std::nullopt;
  }
  return length;
}

namespace {
/// A floor the search enforces for one test: the dialect's, not turned off
/// by the test, with the test's raised bound if it gave one.
struct ActiveFloor {
  const Constraint *floor;
  const FloorOverride *raise;
};

/// The search state: one value per dialect dimension, absent when the
/// workload does not name it and it has no default.
class LoweringSearch {
public:
  LoweringSearch(const Test &test, llvm::ArrayRef<std::string> scope,
                 const Dialect &dialect, const LoweringOptions &options)
      : test(test), scope(scope), dialect(dialect), options(options),
        useFloors(options.floors), rules(applicableRules(test, dialect)) {
    hasGoldens = test.attrs.contains(workload::attr::kGolden);
    for (const HarnessRule *rule : rules)
      hasGoldens |= rule->goldens;
    testType = stringAttr(test, workload::attr::kTestType).str();
    bool allowAll = llvm::is_contained(options.allowedFlags, "*");
    for (const std::string &flag : unknownFlags(test, dialect)) {
      if (allowAll || llvm::is_contained(options.allowedFlags, flag))
        continue;
      for (const std::string &dim : dialect.unknownFlagDimensions(flag))
        if (!blockedBy.count(dim))
          blockedBy[dim] = flag;
    }
    for (const Constraint &c : dialect.floors) {
      const FloorOverride *override = nullptr;
      for (const FloorOverride &o : options.floorOverrides)
        if (o.name == c.name)
          override = &o;
      if (!override || !override->off)
        floors.push_back({&c, override});
    }
  }

  LoweringResult run();

private:
  /// A dimension's value; std::nullopt when absent.
  using Value = std::optional<int64_t>;

  LoweringResult runSearch();

  void readOriginalValues();
  void deriveValues(std::vector<Value> &values) const;
  std::string pinReason(const Dimension &dim) const;
  bool constraintApplies(const Constraint &c,
                         const std::vector<Value> &values) const;
  bool holds(const Constraint &c, const std::vector<Value> &values,
             bool isFloor = false,
             std::optional<int64_t> raisedTo = std::nullopt) const;
  bool holds(const ActiveFloor &f, const std::vector<Value> &values) const {
    return holds(*f.floor, values, /*isFloor=*/true,
                 f.raise ? std::optional<int64_t>(f.raise->atLeast)
                         : std::nullopt);
  }
  bool decided(const Constraint &c, size_t variable) const;
  bool search(size_t variable);
  double predictSeconds() const;
  void explainFloors(LoweringResult &result);
  std::string describeFloor(const ActiveFloor &f, bool limited) const;
  void listOverrides(LoweringResult &result) const;
  llvm::StringRef flagOf(llvm::StringRef name) const {
    const Dimension *dim = dialect.lookup(name);
    return dim && !dim->flag.empty() ? llvm::StringRef(dim->flag) : name;
  }
  void keepFollowers(LoweringResult &result) const;
  void updateFollowers(std::vector<Value> &values) const;
  /// The spelling of \p dim in the test's workload: its flag or the alias
  /// the workload uses.
  llvm::StringRef spelling(const Dimension &dim) const {
    if (!test.workload.contains(dim.flag))
      for (const std::string &alias : dim.aliases)
        if (test.workload.contains(alias))
          return alias;
    return dim.flag;
  }
  bool inWorkload(const Dimension &dim) const {
    return !dim.flag.empty() && test.workload.contains(spelling(dim));
  }
  std::optional<int64_t> timingWindowEnd() const;
  std::string keepReason(LoweringResult &result) const;
  std::vector<std::string> comparedMetrics() const;

  size_t indexOf(llvm::StringRef name) const {
    for (size_t i = 0; i < dialect.dimensions.size(); ++i)
      if (dialect.dimensions[i].name == name)
        return i;
    return dialect.dimensions.size();
  }
  Value valueOf(const std::vector<Value> &values, llvm::StringRef name) const {
    size_t i = indexOf(name);
    return i < values.size() ? values[i] : std::nullopt;
  }

  const Test &test;
  llvm::ArrayRef<std::string> scope;
  const Dialect &dialect;
  const LoweringOptions &options;

  std::vector<Value> original, current;
  /// Per dimension: the search may change it.
  std::vector<bool> variable;
  /// Per dimension: absent, unpinned, and following another dimension.
  std::vector<bool> tracksFollowed;
  /// Per dimension: the position in the variable order, or SIZE_MAX.
  std::vector<size_t> order;
  std::vector<size_t> variables;
  /// The floors in force: the dialect's, less those the test turned off.
  std::vector<ActiveFloor> floors;
  /// The floors that kept a dimension larger (set by explainFloors).
  std::vector<const Constraint *> limiting;
  unsigned checks = 0;
  /// False for the floor-free search that tells which floors limited
  /// lowering (and when the options turn floors off).
  bool useFloors;
  /// The harness rules of the test's type, mode and known flags.
  std::vector<const HarnessRule *> rules;
  /// True if the test is compared with golden values: it names a golden
  /// file or its test type is compared with them by the harness.
  bool hasGoldens = false;
  /// The test's harness test type, or "".
  std::string testType;
  /// Dimension -> the unknown flag that blocks its lowering.
  std::map<std::string, std::string> blockedBy;

public:
  /// Makes run() search without the dialect's floors.
  void disableFloors() { useFloors = false; }
};
} // namespace

void LoweringSearch::readOriginalValues() {
  original.assign(dialect.dimensions.size(), std::nullopt);
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    if (dim.source == "nproc") {
      Attribute nproc = test.attrs.get("nproc");
      if (nproc.isInt())
        original[i] = nproc.getInt();
      else if (test.cost.gpus > 0)
        original[i] = test.cost.gpus;
      continue;
    }
    if (dim.flag.empty())
      continue;
    const Attribute *attr = test.workload.lookup(spelling(dim));
    if (!attr) {
      original[i] = dim.defaultValue;
      continue;
    }
    if (attr->isInt())
      original[i] = attr->getInt();
    else if (attr->isBool())
      original[i] = attr->getBool() ? 1 : 0;
    else if (attr->isString() || attr->isFloat())
      original[i] = 1;
  }
  // A dimension the workload leaves to the framework takes the value of the
  // one it follows (read above, so chains of one step resolve).
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    if (!dim.follows.empty() && !dim.flag.empty() && !inWorkload(dim))
      original[i] = valueOf(original, dim.follows);
  }
  deriveValues(original);
  // Read after the steps, which the timing window may fall back on.
  for (size_t i = 0; i < dialect.dimensions.size(); ++i)
    if (dialect.dimensions[i].source == "timing-window")
      original[i] = timingWindowEnd();
}

std::vector<std::string> LoweringSearch::comparedMetrics() const {
  std::vector<std::string> metrics;
  Attribute named = test.attrs.get(workload::attr::kMetrics);
  if (named.isList()) {
    for (const Attribute &metric : named.getList())
      if (metric.isString())
        metrics.push_back(metric.getString().str());
    return metrics;
  }
  return dialect.defaultMetrics;
}

std::optional<int64_t> LoweringSearch::timingWindowEnd() const {
  // Only tests whose compared metrics include the timing metric have a
  // window to keep.
  if (dialect.timingMetric.empty() || dialect.timingWindows.empty() ||
      !llvm::is_contained(comparedMetrics(), dialect.timingMetric))
    return std::nullopt;
  // The goldens' last step of the metric; without a golden file at hand,
  // the harness records every step up to --train-iters (run_ci_test.sh
  // passes --step-size 1 and --train-iters to the extractor).
  std::optional<int64_t> last;
  Attribute lastSteps = test.attrs.get(workload::attr::kGoldenLastStep);
  if (lastSteps.isDict())
    last = lastSteps.getDict().get(dialect.timingMetric).asInt();
  if (!last)
    for (size_t i = 0; i < dialect.dimensions.size(); ++i)
      if (dialect.dimensions[i].role == DimensionRole::Steps &&
          dialect.dimensions[i].costExponent >= 1 && original[i])
        last = original[i];
  if (!last)
    return std::nullopt;
  for (const TimingWindow &window : dialect.timingWindows) {
    if (window.upTo && *last > *window.upTo)
      continue;
    // A run that ends inside the window compares up to its end; one that
    // ends before it keeps every step.
    return std::min(window.last, *last);
  }
  return std::nullopt;
}

void LoweringSearch::deriveValues(std::vector<Value> &values) const {
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    if (dim.deriveNum.empty())
      continue;
    int64_t num = 1, den = 1;
    bool known = true;
    // An entry that is an integer is a constant (`den: [2]`).
    auto term = [&](llvm::StringRef name) -> Value {
      int64_t constant;
      if (!name.getAsInteger(10, constant))
        return constant;
      return valueOf(values, name);
    };
    for (const std::string &name : dim.deriveNum) {
      Value v = term(name);
      known &= v.has_value();
      num *= v.value_or(1);
    }
    for (const std::string &name : dim.deriveDen)
      den *= term(name).value_or(1);
    bool exact = den > 0 && (dim.deriveRoundDown || num % den == 0);
    values[i] = known && exact ? Value(num / den) : std::nullopt;
  }
}

std::string LoweringSearch::pinReason(const Dimension &dim) const {
  if (!isShrinkableRole(dim.role))
    return stringifyDimensionRole(dim.role).str();
  if (auto blocked = blockedBy.find(dim.name); blocked != blockedBy.end())
    return "unknown flag '" + blocked->second +
           "' could depend on it (allow it with lower-workload{allow-flags=" +
           blocked->second + "})";
  bool unpinned = false;
  for (const HarnessRule *rule : rules) {
    // A list-valued per-layer flag fixes the dimension it lists.
    if (!rule->layerList.empty() && rule->layerList == dim.name) {
      const Attribute *value = test.workload.lookup(rule->name);
      if (value && listLength(*value))
        return rule->why;
    }
    if (llvm::is_contained(rule->pins, dim.name) ||
        llvm::is_contained(rule->pinRoles, dim.role))
      return rule->why;
    unpinned |= llvm::is_contained(rule->unpins, dim.name);
  }
  // Sorted, so the reason never depends on the StringMap's hash order.
  std::vector<llvm::StringRef> names;
  for (const auto &entry : dialect.scopes)
    names.push_back(entry.getKey());
  llvm::sort(names);
  for (llvm::StringRef name : names)
    if (!unpinned && scopeContains(scope, name) &&
        llvm::is_contained(dialect.scopes.find(name)->second, dim.name))
      return "scope " + name.str();
  if (!dim.lower && !unpinned)
    return "not lowered by the schema";
  // Spelt another way (NeMo's `trainer.max_steps`), a dimension whose
  // pinned followers the workload leaves to the framework cannot shrink:
  // the follower's flag (--lr-decay-iters) is not that framework's, so the
  // schedule could not be kept.
  if (llvm::StringRef(spelling(dim)) != dim.flag)
    for (const Dimension &other : dialect.dimensions)
      if (other.follows == dim.name && !inWorkload(other) &&
          (!other.lower || !isShrinkableRole(other.role)))
        return "spelt " + spelling(dim).str() + ", whose framework's " +
               "spelling of " + other.flag +
               " is unknown, so its schedule could not be kept";
  Attribute tolerant = test.attrs.get("tolerant");
  bool isTolerant = tolerant.isBool() && tolerant.getBool();
  // Goldens hold for the model they were recorded with; how often it
  // saves a checkpoint does not change what it computes.
  if (hasGoldens && !isTolerant && dim.role != DimensionRole::Steps &&
      dim.role != DimensionRole::Checkpoint)
    return "golden values (test not tolerant)";
  const Attribute *attr = test.workload.lookup(spelling(dim));
  if (attr && !attr->isInt())
    return "not an integer";
  return {};
}

bool LoweringSearch::constraintApplies(const Constraint &c,
                                       const std::vector<Value> &values) const {
  if (!c.ifScope.empty() && !scopeContains(scope, c.ifScope))
    return false;
  if (!c.ifTestTypes.empty() && !llvm::is_contained(c.ifTestTypes, testType))
    return false;
  if (!c.when.empty() && valueOf(values, c.when).value_or(0) == 0)
    return false;
  for (const std::string &name : c.unless)
    if (valueOf(values, name).value_or(0) != 0)
      return false;
  return true;
}

bool LoweringSearch::holds(const Constraint &c,
                           const std::vector<Value> &values, bool isFloor,
                           std::optional<int64_t> raisedTo) const {
  if (!constraintApplies(c, values))
    return true;
  switch (c.kind) {
  case Constraint::Kind::Divisible: {
    Value value = valueOf(values, c.value);
    if (!value)
      return true;
    __int128 divisor = c.factor;
    for (const std::string &name : c.operands)
      divisor *= valueOf(values, name).value_or(1);
    return divisor > 0 && *value % divisor == 0;
  }
  case Constraint::Kind::Less:
  case Constraint::Kind::AtLeast: {
    Value value = valueOf(values, c.value);
    if (!value)
      return true;
    // A test's raised bound holds wherever the floor does, even when a
    // dimension the floor's own bound needs is absent.
    std::optional<__int128> bound;
    if (c.constant) {
      bound = *c.constant;
    } else {
      bound = c.factor;
      for (const std::string &name : c.operands) {
        Value other = valueOf(values, name);
        if (!other) {
          bound.reset();
          break;
        }
        *bound *= *other;
      }
    }
    if (bound)
      *bound += c.offset;
    if (raisedTo)
      bound = std::max<__int128>(bound.value_or(*raisedTo), *raisedTo);
    if (!bound)
      return true;
    // A floor keeps what the full-size run has; it never asks for more.
    if (isFloor || c.capped)
      if (Value originalValue = valueOf(original, c.value))
        bound = std::min<__int128>(*bound, *originalValue);
    return c.kind == Constraint::Kind::Less ? *value < *bound
                                            : *value >= *bound;
  }
  case Constraint::Kind::Preserve: {
    // num/den == num0/den0, cross-multiplied to stay exact; skipped unless
    // every dimension it names is present (an absent virtual-pipeline flag
    // means there is no virtual-pipeline degree to preserve).
    __int128 num = 1, den = 1, num0 = 1, den0 = 1;
    for (const std::string &name : c.operands) {
      Value v = valueOf(values, name), v0 = valueOf(original, name);
      if (!v || !v0)
        return true;
      num *= *v;
      num0 *= *v0;
    }
    for (const std::string &name : c.denominators) {
      Value v = valueOf(values, name), v0 = valueOf(original, name);
      if (!v || !v0)
        return true;
      den *= *v;
      den0 *= *v0;
    }
    return num * den0 == num0 * den;
  }
  }
  return true;
}

bool LoweringSearch::decided(const Constraint &c, size_t variable) const {
  // A constraint can be checked once every variable it names has been
  // given a value, i.e. sits at or before `variable` in the search order.
  std::function<bool(llvm::StringRef)> isDecided = [&](llvm::StringRef name) {
    size_t i = indexOf(name);
    if (i >= order.size())
      return true;
    // A derived dimension is decided once what it derives from is.
    const Dimension &dim = dialect.dimensions[i];
    if (!dim.deriveNum.empty())
      return llvm::all_of(dim.deriveNum, isDecided) &&
             llvm::all_of(dim.deriveDen, isDecided);
    return order[i] == SIZE_MAX || order[i] <= variable;
  };
  if (!c.value.empty() && !isDecided(c.value))
    return false;
  if (!c.when.empty() && !isDecided(c.when))
    return false;
  if (!llvm::all_of(c.unless, isDecided))
    return false;
  return llvm::all_of(c.operands, isDecided) &&
         llvm::all_of(c.denominators, isDecided);
}

bool LoweringSearch::search(size_t position) {
  if (position == variables.size())
    return true;
  size_t dimIndex = variables[position];
  const Dimension &dim = dialect.dimensions[dimIndex];
  int64_t upper = *original[dimIndex];
  for (int64_t candidate =
           std::min<int64_t>(std::max<int64_t>(dim.min, 1), upper);
       candidate <= upper; ++candidate) {
    current[dimIndex] = candidate;
    updateFollowers(current);
    deriveValues(current);
    bool ok = true;
    for (const Constraint &c : dialect.constraints) {
      if (!decided(c, position))
        continue;
      if (++checks > options.searchBudget)
        return false;
      if (!holds(c, current)) {
        ok = false;
        break;
      }
    }
    for (size_t f = 0; ok && useFloors && f < floors.size(); ++f) {
      if (!decided(*floors[f].floor, position))
        continue;
      if (++checks > options.searchBudget)
        return false;
      ok = holds(floors[f], current);
    }
    if (ok && search(position + 1))
      return true;
    if (checks > options.searchBudget)
      return false;
  }
  current[dimIndex] = original[dimIndex];
  updateFollowers(current);
  deriveValues(current);
  return false;
}

void LoweringSearch::updateFollowers(std::vector<Value> &values) const {
  for (size_t i = 0; i < dialect.dimensions.size(); ++i)
    if (tracksFollowed[i])
      values[i] = valueOf(values, dialect.dimensions[i].follows);
}

double LoweringSearch::predictSeconds() const {
  double scale = 1;
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    if (dim.costExponent == 0 || !original[i] || !current[i] ||
        *original[i] <= 0)
      continue;
    scale *=
        std::pow(double(*current[i]) / double(*original[i]), dim.costExponent);
  }
  double fixed = dialect.fixedFraction;
  return test.cost.seconds * (fixed + (1 - fixed) * scale);
}

LoweringResult LoweringSearch::run() {
  LoweringResult result = runSearch();
  // Every override is listed, whatever the outcome, so a plan shows what
  // the test changed about its floors even where that did not matter.
  if (useFloors && !options.floorOverrides.empty())
    listOverrides(result);
  return result;
}

LoweringResult LoweringSearch::runSearch() {
  LoweringResult result;
  result.predictedSeconds = test.cost.seconds;
  readOriginalValues();
  if (std::string why = keepReason(result); !why.empty()) {
    result.reason = why;
    return result;
  }

  for (const Constraint &c : dialect.constraints) {
    if (!holds(c, original)) {
      result.reason = "the original workload violates '" +
                      (c.why.empty() ? std::string("a constraint") : c.why) +
                      "'";
      return result;
    }
  }

  order.assign(dialect.dimensions.size(), SIZE_MAX);
  variable.assign(dialect.dimensions.size(), false);
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    if (!inWorkload(dim))
      continue;
    std::string why = pinReason(dim);
    if (!why.empty()) {
      result.pinned.set(spelling(dim), Attribute::getString(why));
      continue;
    }
    variable[i] = true;
    order[i] = variables.size();
    variables.push_back(i);
  }
  // A dimension the workload leaves to the framework follows its source
  // during the search unless it is pinned (then keepFollowers sets it).
  tracksFollowed.assign(dialect.dimensions.size(), false);
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    tracksFollowed[i] = !dim.follows.empty() && !dim.flag.empty() &&
                        !inWorkload(dim) && pinReason(dim).empty();
  }
  if (variables.empty()) {
    result.reason = "every workload dimension is validated, parallel, "
                    "precision or pinned";
    return result;
  }

  current = original;
  if (!search(0)) {
    current = original;
    result.reason = checks > options.searchBudget
                        ? "no valid lowering found within the search budget"
                        : "no smaller workload satisfies the constraints";
    return result;
  }

  if (useFloors && !floors.empty())
    explainFloors(result);

  for (size_t i : variables) {
    const Dimension &dim = dialect.dimensions[i];
    if (current[i] == original[i]) {
      if (!result.floors.contains(dim.flag))
        result.pinned.set(spelling(dim),
                          Attribute::getString("smallest valid value"));
      continue;
    }
    result.lowered = true;
    result.overrides.set(spelling(dim), Attribute::getInt(*current[i]));
    if (!hasGoldens)
      continue;
    if (dim.role == DimensionRole::Steps && dim.costExponent >= 1)
      result.goldenSteps = *current[i];
    else if (dim.role != DimensionRole::Steps &&
             dim.role != DimensionRole::Checkpoint)
      result.goldenInvalidated = true;
  }
  if (!result.lowered) {
    result.reason = "every lowerable dimension is already at its smallest "
                    "valid value";
    return result;
  }
  keepFollowers(result);
  result.predictedSeconds = predictSeconds();
  // The harness compares these metrics with the goldens; after lowering,
  // they stay comparable over the steps that still run, unless the model
  // shrank. A golden file that lacks one fails the harness's own check
  // (test_pretraining_regular_pipeline.py:44-57), so it is left out.
  // Only tests the harness runs (with a test type) or that name their
  // metrics: another runner's comparison is its own.
  bool harnessCompared =
      !testType.empty() || test.attrs.contains(workload::attr::kMetrics);
  if (hasGoldens && harnessCompared && !result.goldenInvalidated) {
    Attribute recorded = test.attrs.get(workload::attr::kGoldenLastStep);
    for (const std::string &metric : comparedMetrics())
      if (!recorded.isDict() || recorded.getDict().contains(metric))
        result.goldenMetrics.push_back(metric);
  }
  return result;
}

std::string LoweringSearch::keepReason(LoweringResult &result) const {
  for (const HarnessRule *rule : rules)
    if (!rule->keep.empty())
      return rule->keep;
  // _run_training.sh:121-126 runs later phases with MODEL_ARGS_<n> when a
  // config has them; lowering rewrites one argument set.
  Attribute variants = test.attrs.get(workload::attr::kRunVariants);
  if (variants.isList() && !variants.getList().empty())
    return "the config gives later runs their own arguments (MODEL_ARGS_2...), "
           "which lowering does not rewrite";
  for (const HarnessRule *rule : rules)
    for (const std::string &name : rule->required) {
      const Dimension *dim = dialect.lookup(name);
      if (dim && !inWorkload(*dim)) {
        std::string why = "test type '" + rule->name + "' needs " + dim->flag +
                          ", which the workload lacks";
        result.warnings.push_back(why);
        return why;
      }
    }
  // A per-layer list must have one entry per layer, or Megatron stops at
  // start-up (gpt_layer_specs.py:651-657).
  for (const HarnessRule *rule : rules) {
    if (rule->layerList.empty())
      continue;
    const Attribute *value = test.workload.lookup(rule->name);
    std::optional<int64_t> length = value ? listLength(*value) : std::nullopt;
    Value count = valueOf(original, rule->layerList);
    if (length && count && *length != *count) {
      std::string why = rule->name + " lists " + std::to_string(*length) +
                        " entries but " + flagOf(rule->layerList).str() +
                        " is " + std::to_string(*count);
      result.warnings.push_back(why);
      return why;
    }
  }
  return {};
}

void LoweringSearch::explainFloors(LoweringResult &result) {
  // The floors that limited lowering are those the floor-free workload
  // breaks; each dimension that ended up larger because of them names the
  // broken floors that constrain it (or all of them, when it grew only to
  // let another dimension meet a floor).
  LoweringSearch unfloored(test, scope, dialect, options);
  unfloored.disableFloors();
  unfloored.run();
  if (unfloored.current.empty())
    return;
  const std::vector<Value> &free = unfloored.current;
  std::vector<const ActiveFloor *> broken;
  for (const ActiveFloor &f : floors)
    if (!holds(f, free))
      broken.push_back(&f);
  for (size_t i : variables) {
    if (!free[i] || !current[i] || *current[i] <= *free[i])
      continue;
    const Dimension &dim = dialect.dimensions[i];
    auto names = [&](const ActiveFloor *f) {
      return f->floor->value == dim.name ||
             llvm::is_contained(f->floor->operands, dim.name);
    };
    std::vector<const ActiveFloor *> reasons;
    llvm::copy_if(broken, std::back_inserter(reasons), names);
    if (reasons.empty())
      reasons = broken;
    std::string text;
    for (const ActiveFloor *f : reasons) {
      text += (text.empty() ? "" : "; ") + describeFloor(*f, /*limited=*/true);
      if (!llvm::is_contained(limiting, f->floor))
        limiting.push_back(f->floor);
    }
    if (!text.empty())
      result.floors.set(dim.flag, Attribute::getString(text));
  }
}

/// `name: why`, with what the test did to the floor's bound, for a floor
/// that kept a dimension larger (\p limited) or that the test raised.
std::string LoweringSearch::describeFloor(const ActiveFloor &f,
                                          bool limited) const {
  std::string text = f.floor->name;
  if (const FloorOverride *raise = f.raise) {
    text += ", raised to at least " + std::to_string(raise->atLeast) +
            " for this test";
    if (!raise->why.empty())
      text += " (" + raise->why + ")";
    Value originalValue = valueOf(original, f.floor->value);
    if (originalValue && *originalValue < raise->atLeast)
      text += ", capped at the original " + std::to_string(*originalValue);
    if (!limited)
      text += ", did not limit lowering";
  }
  return text + ": " + f.floor->why;
}

void LoweringSearch::listOverrides(LoweringResult &result) const {
  // Under the flag of the dimension each overridden floor constrains, after
  // the floors that limited it (explainFloors), in schema order.
  for (const Constraint &c : dialect.floors) {
    const FloorOverride *override = nullptr;
    for (const FloorOverride &o : options.floorOverrides)
      if (o.name == c.name)
        override = &o;
    if (!override)
      continue;
    std::string item;
    if (override->off) {
      item = c.name + ", off for this test: " + override->why;
    } else {
      if (llvm::is_contained(limiting, &c))
        continue; // already explained as a floor that limited lowering
      item = describeFloor({&c, override}, /*limited=*/false);
    }
    llvm::StringRef flag = flagOf(c.value);
    Attribute previous = result.floors.get(flag);
    if (previous.isString())
      item = previous.getString().str() + "; " + item;
    result.floors.set(flag, Attribute::getString(item));
  }
}

std::optional<std::vector<FloorOverride>>
fastci::readFloorOverrides(const Test &test, const Dialect &dialect,
                           DiagnosticEngine &diag) {
  std::vector<FloorOverride> overrides;
  Attribute attr = test.attrs.get(kFloorOverridesAttr);
  if (!attr)
    return overrides;
  auto fail = [&](const llvm::Twine &message) {
    diag.error(test.loc, "test '" + test.name + "': " + message);
    return std::nullopt;
  };
  if (!attr.isDict())
    return fail(llvm::Twine("'") + kFloorOverridesAttr +
                "' must map floor names to overrides");
  std::vector<llvm::StringRef> names;
  for (const Constraint &c : dialect.floors)
    names.push_back(c.name);
  for (const auto &[name, value] : attr.getDict()) {
    const Constraint *floor = nullptr;
    for (const Constraint &c : dialect.floors)
      if (c.name == name)
        floor = &c;
    if (!floor) {
      if (names.empty())
        return fail("overrides floor '" + name + "', but dialect '" +
                    dialect.name + "' has no floors");
      return fail("overrides unknown floor '" + name + "' of dialect '" +
                  dialect.name + "'; expected " + formatChoices(names));
    }
    FloorOverride override;
    override.name = name;
    Attribute off = value.isDict() ? value.getDict().get("off") : Attribute();
    Attribute atLeast =
        value.isDict() ? value.getDict().get("at-least") : Attribute();
    Attribute why = value.isDict() ? value.getDict().get("why") : Attribute();
    size_t known = size_t(bool(off)) + bool(atLeast) + bool(why);
    if (!value.isDict() || value.getDict().size() != known ||
        bool(off) == bool(atLeast) || (off && why))
      return fail("floor override '" + name +
                  "' must be {off = \"<reason>\"} or {\"at-least\" = <n>} "
                  "with an optional why");
    if (off) {
      if (!off.isString() || llvm::StringRef(off.getString()).trim().empty())
        return fail("turning floor '" + name + "' off needs a reason");
      override.off = true;
      override.why = off.getString().str();
    } else {
      if (!atLeast.isInt() || atLeast.getInt() < 0)
        return fail("'at-least' of floor '" + name +
                    "' must be a non-negative integer");
      override.atLeast = atLeast.getInt();
      if (why && (!why.isString() || why.getString().trim().empty()))
        return fail("'why' of floor '" + name + "' must be a reason");
      if (why)
        override.why = why.getString().str();
      // A raise below a constant floor would read as lowering it, which the
      // search (taking the larger bound) would silently not do.
      if (floor->constant &&
          override.atLeast < *floor->constant + floor->offset)
        return fail("'at-least: " + llvm::Twine(override.atLeast) +
                    "' would lower floor '" + name + "' (" + floor->value +
                    " at least " +
                    llvm::Twine(*floor->constant + floor->offset) +
                    "); a test may raise a floor or turn it off");
    }
    overrides.push_back(std::move(override));
  }
  return overrides;
}

void LoweringSearch::keepFollowers(LoweringResult &result) const {
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    if (dim.follows.empty() || dim.flag.empty() || inWorkload(dim) ||
        !original[i])
      continue;
    size_t followed = indexOf(dim.follows);
    if (followed >= current.size() || current[followed] == original[followed])
      continue;
    std::string why = pinReason(dim);
    if (why.empty())
      continue; // free to follow the lowered value, as the framework does
    // The framework would derive it from the lowered dimension; pin it at
    // the value the full-size run had, so a schedule built on it (and the
    // per-step goldens) stay the same.
    result.overrides.set(dim.flag, Attribute::getInt(*original[i]));
    result.pinned.set(
        dim.flag, Attribute::getString(why + "; set explicitly, it follows " +
                                       dialect.dimensions[followed].flag));
  }
}

LoweringResult fastci::lowerWorkload(const Test &test,
                                     llvm::ArrayRef<std::string> scope,
                                     const Dialect &dialect,
                                     const LoweringOptions &options) {
  return LoweringSearch(test, scope, dialect, options).run();
}
