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
#include <algorithm>
#include <cmath>

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
  return scope;
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
        useFloors(options.floors) {
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
      Attribute nproc = test.attrs.get(workload::attr::kNproc);
      if (nproc.isInt())
        original[i] = nproc.getInt();
      else if (test.cost.gpus > 0)
        original[i] = test.cost.gpus;
      continue;
    }
    if (dim.flag.empty())
      continue;
    const Attribute *attr = test.workload.lookup(dim.flag);
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
    if (!dim.follows.empty() && !dim.flag.empty() &&
        !test.workload.contains(dim.flag))
      original[i] = valueOf(original, dim.follows);
  }
  deriveValues(original);
}

void LoweringSearch::deriveValues(std::vector<Value> &values) const {
  for (size_t i = 0; i < dialect.dimensions.size(); ++i) {
    const Dimension &dim = dialect.dimensions[i];
    if (dim.deriveNum.empty())
      continue;
    int64_t num = 1, den = 1;
    bool known = true;
    for (const std::string &name : dim.deriveNum) {
      Value v = valueOf(values, name);
      known &= v.has_value();
      num *= v.value_or(1);
    }
    for (const std::string &name : dim.deriveDen)
      den *= valueOf(values, name).value_or(1);
    values[i] = known && den > 0 && num % den == 0 ? Value(num / den)
                                                   : std::nullopt;
  }
}

std::string LoweringSearch::pinReason(const Dimension &dim) const {
  if (!isShrinkableRole(dim.role))
    return stringifyDimensionRole(dim.role).str();
  // Sorted, so the reason never depends on the StringMap's hash order.
  std::vector<llvm::StringRef> names;
  for (const auto &entry : dialect.scopes)
    names.push_back(entry.getKey());
  llvm::sort(names);
  for (llvm::StringRef name : names)
    if (scopeContains(scope, name) &&
        llvm::is_contained(dialect.scopes.find(name)->second, dim.name))
      return "scope " + name.str();
  if (!dim.lower)
    return "not lowered by the schema";
  bool hasGolden = test.attrs.contains(workload::attr::kGolden);
  Attribute tolerant = test.attrs.get(workload::attr::kTolerant);
  bool isTolerant = tolerant.isBool() && tolerant.getBool();
  if (hasGolden && !isTolerant && dim.role != DimensionRole::Steps)
    return "golden values (test not tolerant)";
  const Attribute *attr = test.workload.lookup(dim.flag);
  if (attr && !attr->isInt())
    return "not an integer";
  return {};
}

bool LoweringSearch::constraintApplies(const Constraint &c,
                                       const std::vector<Value> &values) const {
  if (!c.ifScope.empty() && !scopeContains(scope, c.ifScope))
    return false;
  if (!c.when.empty() && valueOf(values, c.when).value_or(0) == 0)
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
    if (isFloor)
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
  auto isDecided = [&](llvm::StringRef name) {
    size_t i = indexOf(name);
    return i >= order.size() || order[i] == SIZE_MAX || order[i] <= variable;
  };
  if (!c.value.empty() && !isDecided(c.value))
    return false;
  if (!c.when.empty() && !isDecided(c.when))
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
  for (int64_t candidate = std::min<int64_t>(std::max<int64_t>(dim.min, 1), upper);
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
    scale *= std::pow(double(*current[i]) / double(*original[i]),
                      dim.costExponent);
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
    if (dim.flag.empty() || !test.workload.contains(dim.flag))
      continue;
    std::string why = pinReason(dim);
    if (!why.empty()) {
      result.pinned.set(dim.flag, Attribute::getString(why));
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
                        !test.workload.contains(dim.flag) &&
                        pinReason(dim).empty();
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

  bool hasGolden = test.attrs.contains(workload::attr::kGolden);
  for (size_t i : variables) {
    const Dimension &dim = dialect.dimensions[i];
    if (current[i] == original[i]) {
      if (!result.floors.contains(dim.flag))
        result.pinned.set(dim.flag,
                          Attribute::getString("smallest valid value"));
      continue;
    }
    result.lowered = true;
    result.overrides.set(dim.flag, Attribute::getInt(*current[i]));
    if (!hasGolden)
      continue;
    if (dim.role == DimensionRole::Steps && dim.costExponent >= 1)
      result.goldenSteps = *current[i];
    else if (dim.role != DimensionRole::Steps)
      result.goldenInvalidated = true;
  }
  if (!result.lowered) {
    result.reason = "every lowerable dimension is already at its smallest "
                    "valid value";
    return result;
  }
  keepFollowers(result);
  result.predictedSeconds = predictSeconds();
  return result;
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
  Attribute attr = test.attrs.get(workload::attr::kFloorOverrides);
  if (!attr)
    return overrides;
  auto fail = [&](const llvm::Twine &message) {
    diag.error(test.loc, "test '" + test.name + "': " + message);
    return std::nullopt;
  };
  if (!attr.isDict())
    return fail(llvm::Twine("'") + workload::attr::kFloorOverrides +
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
    if (dim.follows.empty() || dim.flag.empty() ||
        test.workload.contains(dim.flag) || !original[i])
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
