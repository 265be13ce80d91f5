//===- PytestFacts.cpp - The pytest facts of one file ---------------------===//
//
// What collecting a file's tests needs to know of it, recorded once per file
// so that it can be cached and read by collection in any other file: the
// marks of classes and test functions (parametrize reduced to ids and
// tags, `fastci` marks to scope, workload and floors), fixtures and their
// params, bases resolved through the file's bindings, `__test__`, the
// names parameterized.expand and torch's parametrize generate, and what
// import-time code does to classes.
//
//===----------------------------------------------------------------------===//
#include "PytestInternal.h"
#include "fastci/Pass/Parallel.h"
#include "fastci/Python/Pytest.h"
#include "fastci/Support/YAML.h"
#include "fastci/Workload/Manifest.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <functional>
#include <map>

using namespace fastci;
using namespace fastci::python;
using namespace fastci::python::detail;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// The facts one file contributes
//===----------------------------------------------------------------------===//

namespace {
/// The byte offsets at which the lines of a text start.
class LineTable {
public:
  explicit LineTable(StringRef text) {
    starts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        starts.push_back(i + 1);
  }
  size_t offset(uint32_t line, uint32_t column) const {
    if (line == 0 || line > starts.size())
      return std::string::npos;
    return starts[line - 1] + column;
  }
  size_t lineEnd(uint32_t line, size_t size) const {
    return line < starts.size() ? starts[line] : size;
  }

private:
  std::vector<size_t> starts;
};

/// \p value as the YAML a manifest would spell it in: str as a quoted
/// scalar, numbers and booleans as plain ones, dicts as mappings; anything
/// that is not a literal is null, which no field accepts.
YAMLNode toYAML(const PyValue &value) {
  YAMLNode node;
  switch (value.kind) {
  case PyValue::Kind::Str:
    node.kind = YAMLNode::Kind::Scalar;
    node.scalar = value.text;
    node.quoted = true;
    break;
  case PyValue::Kind::Int:
    node.kind = YAMLNode::Kind::Scalar;
    node.scalar = std::to_string(value.intValue);
    break;
  case PyValue::Kind::Float:
    node.kind = YAMLNode::Kind::Scalar;
    node.scalar = std::to_string(value.floatValue);
    break;
  case PyValue::Kind::Bool:
    node.kind = YAMLNode::Kind::Scalar;
    node.scalar = value.boolValue ? "true" : "false";
    break;
  case PyValue::Kind::Tuple:
  case PyValue::Kind::List:
  case PyValue::Kind::Set:
    node.kind = YAMLNode::Kind::Sequence;
    for (const PyValue &element : value.elements)
      node.elements.push_back(toYAML(element));
    break;
  case PyValue::Kind::Dict:
    node.kind = YAMLNode::Kind::Mapping;
    for (size_t i = 0; i + 1 < value.elements.size(); i += 2)
      node.entries.emplace_back(toYAML(value.elements[i]),
                                toYAML(value.elements[i + 1]));
    break;
  default:
    break;
  }
  return node;
}

/// Reads a `fastci` marker's `floors={...}` through the manifest's reader
/// (readFloorOverrideSpec), so that a test declares its floor overrides
/// alike in either place. A repeated key's last value wins, as in Python.
/// Returns the first problem, "" when there is none.
std::string readMarkerFloors(const PyValue &floors,
                             std::vector<FloorOverrideValue> &out) {
  std::string problem;
  DiagnosticEngine diag;
  diag.setHandler([&](const Diagnostic &diagnostic) {
    if (problem.empty())
      problem = diagnostic.message;
    return true;
  });
  AttrDict overrides;
  if (failed(readFloorOverrideSpec(toYAML(floors), overrides, diag)))
    return problem.empty() ? "malformed 'floors'" : problem;
  for (const auto &[name, spec] : overrides) {
    // lookup, not get: get returns a copy, which the StringRefs would
    // outlive.
    const AttrDict &fields = spec.getDict();
    FloorOverrideValue entry;
    entry.name = name;
    if (const Attribute *off = fields.lookup("off"))
      entry.off = off->asString().value_or("").str();
    if (const Attribute *atLeast = fields.lookup("at-least"))
      entry.atLeast = atLeast->asInt().value_or(0);
    if (const Attribute *why = fields.lookup("why"))
      entry.why = why->asString().value_or("").str();
    out.push_back(std::move(entry));
  }
  return "";
}

/// Converts decorators and `pytestmark` values into MarkSummary records.
class FactsBuilder {
public:
  FactsBuilder(StringRef moduleName, StringRef source, FileSummary &summary,
               llvm::ArrayRef<std::vector<PyValue>> decorators,
               const ImportTimeEffects &effects, const PytestConfig &config)
      : moduleName(moduleName), source(source), summary(summary),
        decorators(decorators), effects(effects), config(config) {}

  void run(llvm::ArrayRef<PyValue> moduleMarks);

private:
  std::vector<MarkSummary> convertMarks(llvm::ArrayRef<const PyValue *> marks,
                                        StringRef owner, uint32_t line,
                                        uint32_t column);
  std::string resolveBase(StringRef base, uint32_t line);
  /// Fills the fixture facts of \p id from its `@pytest.fixture(...)`.
  void readFixture(LocalId id, PytestEntitySummary &facts) const;
  bool isLocalDef(StringRef name) const {
    return llvm::any_of(summary.entities, [&](const EntitySummary &entity) {
      return entity.parent == kModuleScope && entity.name == name;
    });
  }

  /// Fills \p facts.generator and the generated names when a decorator of
  /// the test function \p id replaces it (parameterized.expand, torch's
  /// parametrize).
  void readGenerator(LocalId id, PytestEntitySummary &facts);
  /// Whether \p name, bound at module level, is (re-exported from) torch's
  /// common_utils (or not bound: a star import).
  bool isTorchName(StringRef name);

  StringRef moduleName, source;
  FileSummary &summary;
  llvm::ArrayRef<std::vector<PyValue>> decorators;
  const ImportTimeEffects &effects;
  const PytestConfig &config;
  /// Built on the first class: most files have none.
  std::optional<LineTable> lines;
  std::optional<llvm::StringMap<std::vector<Binding>>> bindings;
};
} // namespace

/// The module-level bindings of a summary by name, in source order.
llvm::StringMap<std::vector<Binding>>
detail::getModuleBindings(const FileSummary &summary) {
  llvm::StringMap<std::vector<Binding>> bindings;
  for (auto [id, entity] : llvm::enumerate(summary.entities))
    if (entity.parent == kModuleScope)
      bindings[entity.name].push_back(
          {entity.range.startLine, static_cast<LocalId>(id), {}});
  forEachEdge(summary, [&](const EdgeRef &edge) {
    if (edge.kind != EdgeKind::Import || edge.from != kModuleScope)
      return;
    StringRef target = edge.target;
    if (!edge.alias.empty()) {
      // `from m import x as y` and `import a.b as y` bind y to the target.
      if (!edge.modulePrefix || edge.modulePrefix < target.size())
        bindings[edge.alias].push_back({edge.line, kModuleScope, target.str()});
    } else if (edge.modulePrefix && edge.modulePrefix < target.size()) {
      // `from m import x` binds x.
      StringRef name = target.drop_front(edge.modulePrefix + 1);
      bindings[name].push_back({edge.line, kModuleScope, target.str()});
    } else if (!edge.modulePrefix) {
      // `import a.b` binds `a`, to the module `a`.
      StringRef head = target.split('.').first;
      bindings[head].push_back({edge.line, kModuleScope, head.str()});
    }
  });
  for (auto &entry : bindings)
    llvm::stable_sort(entry.second, [](const Binding &a, const Binding &b) {
      return a.line < b.line;
    });
  return bindings;
}

std::string detail::symbolOf(StringRef moduleName,
                             const EntitySummary &entity) {
  return moduleName.empty() ? entity.qualname
                            : (moduleName + "." + entity.qualname).str();
}

std::vector<MarkSummary>
FactsBuilder::convertMarks(llvm::ArrayRef<const PyValue *> marks,
                           StringRef owner, uint32_t line, uint32_t column) {
  std::vector<MarkSummary> result;
  for (const PyValue *mark : marks) {
    MarkSummary &summaryMark = result.emplace_back();
    summaryMark.name = getMarkerName(*mark).str();
    if (summaryMark.name == "usefixtures") {
      for (const PyValue &argument : mark->elements)
        if (argument.kind == PyValue::Kind::Str)
          summaryMark.names.push_back(argument.text);
      continue;
    }
    if (summaryMark.name == "parametrize") {
      if (const PyValue *indirect = mark->getKeyword("indirect"))
        summaryMark.indirect = indirect->kind == PyValue::Kind::Bool
                                   ? indirect->boolValue
                               : indirect->kind == PyValue::Kind::None ? 0
                                                                       : 2;
      // The argnames, which no fixture supplies for this test.
      if (const PyValue *argnames = mark->elements.empty()
                                        ? mark->getKeyword("argnames")
                                        : &mark->elements[0])
        if (std::optional<std::vector<std::string>> names =
                getArgnames(*argnames))
          summaryMark.names = std::move(*names);
      std::optional<std::vector<std::string>> ids = computeParametrizeIds(
          *mark, [&](StringRef name) { return isLocalDef(name); },
          &summaryMark.caseTags);
      summaryMark.idsKnown = ids.has_value();
      if (ids)
        summaryMark.ids = std::move(*ids);
      else
        summaryMark.caseTags.clear();
      continue;
    }
    if (summaryMark.name != "fastci")
      continue;
    bool literal = mark->kind == PyValue::Kind::Call;
    if (const PyValue *scope = mark->getKeyword("scope")) {
      literal &= scope->isSequence();
      for (const PyValue &element : scope->elements) {
        if (element.kind == PyValue::Kind::Str)
          summaryMark.scope.push_back(element.text);
        else
          literal = false;
      }
    }
    if (const PyValue *workload = mark->getKeyword("workload")) {
      literal &= workload->kind == PyValue::Kind::Dict;
      for (size_t i = 0; i + 1 < workload->elements.size(); i += 2) {
        const PyValue &key = workload->elements[i];
        const PyValue &value = workload->elements[i + 1];
        Attribute attr;
        switch (value.kind) {
        case PyValue::Kind::Int:
          attr = Attribute::getInt(value.intValue);
          break;
        case PyValue::Kind::Float:
          attr = Attribute::getFloat(value.floatValue);
          break;
        case PyValue::Kind::Bool:
          attr = Attribute::getBool(value.boolValue);
          break;
        case PyValue::Kind::Str:
          attr = Attribute::getString(value.text);
          break;
        default:
          break;
        }
        if (key.kind != PyValue::Kind::Str || !attr) {
          literal = false;
          continue;
        }
        summaryMark.workload.push_back({key.text, std::move(attr)});
      }
    }
    if (!literal)
      summary.warnings.push_back(
          {line, column,
           "@pytest.mark.fastci on '" + owner.str() +
               "' takes literal scope=[...] and workload={...}; "
               "non-literal parts ignored"});
    if (const PyValue *floors = mark->getKeyword("floors")) {
      FloorOverrides &overrides = summaryMark.floors;
      overrides.present = true;
      overrides.error = readMarkerFloors(*floors, overrides.entries);
      if (!overrides.error.empty()) {
        overrides.entries.clear();
        summary.warnings.push_back({line, column,
                                    "@pytest.mark.fastci on '" + owner.str() +
                                        "': " + overrides.error +
                                        "; lower-workload will reject the "
                                        "test's floor_overrides"});
      }
    }
  }
  return result;
}

void FactsBuilder::readFixture(LocalId id, PytestEntitySummary &facts) const {
  facts.fixtureName = summary.entities[id].name;
  if (static_cast<size_t>(id) >= decorators.size())
    return;
  for (const PyValue &decorator : decorators[id]) {
    if (decorator.kind != PyValue::Kind::Call ||
        (decorator.text != "pytest.fixture" && decorator.text != "fixture" &&
         decorator.text != "pytest.yield_fixture"))
      continue;
    // fixture(fixture_function=None, *, scope, params, autouse, ids, name);
    // a positional argument is the decorated function itself.
    if (const PyValue *params = decorator.getKeyword("params"))
      facts.fixtureParams = params->kind != PyValue::Kind::None;
    if (const PyValue *autouse = decorator.getKeyword("autouse"))
      facts.fixtureAutouse =
          autouse->kind != PyValue::Kind::None &&
          !(autouse->kind == PyValue::Kind::Bool && !autouse->boolValue) &&
          !(autouse->kind == PyValue::Kind::Int && autouse->intValue == 0);
    if (const PyValue *name = decorator.getKeyword("name"))
      if (name->kind == PyValue::Kind::Str)
        facts.fixtureName = name->text;
    if (const PyValue *scope = decorator.getKeyword("scope")) {
      static const char *const kScopes[] = {"function", "class", "module",
                                            "package", "session"};
      facts.fixtureScope = 5;
      if (scope->kind == PyValue::Kind::Str)
        for (auto [order, scopeName] : llvm::enumerate(kScopes))
          if (scope->text == scopeName)
            facts.fixtureScope = order;
    }
    // The params' ids are those of
    // `metafunc.parametrize(name, params, indirect=True, ids=ids)`.
    if (const PyValue *params = decorator.getKeyword("params");
        params && params->kind != PyValue::Kind::None) {
      PyValue call;
      call.kind = PyValue::Kind::Call;
      call.text = "pytest.mark.parametrize";
      PyValue argname;
      argname.kind = PyValue::Kind::Str;
      argname.text = facts.fixtureName;
      call.elements = {std::move(argname), *params};
      if (const PyValue *ids = decorator.getKeyword("ids"))
        call.keywords.emplace_back("ids", *ids);
      std::optional<std::vector<std::string>> ids = computeParametrizeIds(
          call, [&](StringRef name) { return isLocalDef(name); },
          &facts.fixtureCaseTags);
      facts.fixtureIdsKnown = ids.has_value();
      if (ids)
        facts.fixtureIds = std::move(*ids);
      else
        facts.fixtureCaseTags.clear();
    }
  }
}

std::string FactsBuilder::resolveBase(StringRef base, uint32_t line) {
  // The binding of the head in effect where the class is defined: the
  // last one above it (Python runs the module top to bottom).
  auto [head, rest] = base.split('.');
  auto it = bindings->find(head);
  if (it == bindings->end())
    return base.str();
  const Binding *binding = &it->second.front();
  for (const Binding &candidate : it->second)
    if (candidate.line < line)
      binding = &candidate;
  std::string resolved =
      binding->entity == kModuleScope
          ? binding->target
          : symbolOf(moduleName, summary.entities[binding->entity]);
  return rest.empty() ? resolved : resolved + "." + rest.str();
}

bool FactsBuilder::isTorchName(StringRef name) {
  if (!bindings)
    bindings.emplace(getModuleBindings(summary));
  auto it = bindings->find(name);
  if (it == bindings->end())
    return true;
  const Binding &binding = it->second.back();
  return binding.entity == kModuleScope &&
         StringRef(binding.target).contains("common_utils");
}

/// parameterized's `to_safe_name`: runs of characters other than ASCII
/// letters, digits and `_` become one `_`.
static std::string toSafeName(StringRef text) {
  std::string out;
  bool inRun = false;
  for (char c : text) {
    if (llvm::isAlnum(c) || c == '_') {
      out += c;
      inRun = false;
    } else if (!inRun) {
      out += '_';
      inRun = true;
    }
  }
  return out;
}

/// The names `parameterized.expand(input)` gives a function \p name
/// (parameterized >= 0.8: `name_func` default), or nothing when the input
/// is not a literal list of literal cases.
static std::optional<std::vector<std::string>>
expandParameterizedNames(const PyValue &call, StringRef name) {
  if (call.getKeyword("name_func") || call.getKeyword("testcase_func_name") ||
      call.elements.size() != 1 || !call.elements[0].isSequence())
    return std::nullopt;
  const std::vector<PyValue> &cases = call.elements[0].elements;
  if (cases.empty())
    return std::nullopt;
  std::vector<std::string> names;
  size_t digits = std::to_string(cases.size() - 1).size();
  for (auto [index, value] : llvm::enumerate(cases)) {
    // param.from_decorator: a param(...), a string as one argument, any
    // other iterable as the arguments.
    const PyValue *first = nullptr;
    if (value.kind == PyValue::Kind::Call &&
        (value.text == "param" || StringRef(value.text).ends_with(".param"))) {
      if (!value.elements.empty())
        first = &value.elements[0];
    } else if (value.kind == PyValue::Kind::Str) {
      first = &value;
    } else if (value.isSequence()) {
      if (!value.elements.empty())
        first = &value.elements[0];
    } else {
      return std::nullopt;
    }
    std::string number = std::to_string(index);
    std::string generated =
        (name + "_" + std::string(digits - number.size(), '0') + number).str();
    if (first && first->kind == PyValue::Kind::Str)
      generated += "_" + toSafeName(first->text);
    else if (first && first->kind == PyValue::Kind::Unknown)
      return std::nullopt; // a string or not: the name depends on it
    names.push_back(std::move(generated));
  }
  return names;
}

/// torch's `dtype_name`: the dtype's canonical name.
static std::optional<std::string> torchDtypeName(StringRef dotted) {
  if (!dotted.consume_front("torch."))
    return std::nullopt;
  static const std::pair<const char *, const char *> kAliases[] = {
      {"float", "float32"},    {"double", "float64"},
      {"half", "float16"},     {"long", "int64"},
      {"int", "int32"},        {"short", "int16"},
      {"cfloat", "complex64"}, {"cdouble", "complex128"},
      {"chalf", "complex32"}};
  for (const auto &[alias, canonical] : kAliases)
    if (dotted == alias)
      return std::string(canonical);
  static const char *const kCanonical[] = {
      "float32",   "float64",   "float16",   "bfloat16", "int8",
      "int16",     "int32",     "int64",     "uint8",    "bool",
      "complex32", "complex64", "complex128"};
  if (llvm::is_contained(kCanonical, dotted))
    return dotted.str();
  return std::nullopt;
}

/// The suffixes torch's `parametrize(arg_str, arg_values)` gives its cases
/// (`_default_subtest_name`, `subtest(name=)`), or nothing when they are not
/// static.
static std::optional<std::vector<std::string>>
torchParametrizeSuffixes(const PyValue &call) {
  if (call.getKeyword("name_fn") || call.elements.size() != 2 ||
      call.elements[0].kind != PyValue::Kind::Str)
    return std::nullopt;
  llvm::SmallVector<StringRef, 4> argNames;
  StringRef(call.elements[0].text).split(argNames, ',');
  for (StringRef &argName : argNames)
    argName = argName.trim();
  std::vector<PyValue> values;
  const PyValue &argValues = call.elements[1];
  if (argValues.isSequence()) {
    values = argValues.elements;
  } else if (argValues.kind == PyValue::Kind::Call &&
             argValues.text == "range") {
    int64_t bounds[3] = {0, 0, 1};
    size_t count = argValues.elements.size();
    if (count < 1 || count > 3 || !argValues.keywords.empty())
      return std::nullopt;
    for (size_t i = 0; i < count; ++i)
      if (argValues.elements[i].kind != PyValue::Kind::Int)
        return std::nullopt;
    if (count == 1) {
      bounds[1] = argValues.elements[0].intValue;
    } else {
      bounds[0] = argValues.elements[0].intValue;
      bounds[1] = argValues.elements[1].intValue;
      if (count == 3)
        bounds[2] = argValues.elements[2].intValue;
    }
    if (bounds[2] == 0 || (bounds[1] - bounds[0]) / bounds[2] > 10000)
      return std::nullopt;
    for (int64_t v = bounds[0]; bounds[2] > 0 ? v < bounds[1] : v > bounds[1];
         v += bounds[2]) {
      PyValue element;
      element.kind = PyValue::Kind::Int;
      element.intValue = v;
      values.push_back(std::move(element));
    }
  } else {
    return std::nullopt;
  }
  if (values.empty())
    return std::nullopt;
  auto format = [](StringRef argName,
                   const PyValue &value) -> std::optional<std::string> {
    std::string shown;
    switch (value.kind) {
    case PyValue::Kind::Int:
      shown = std::to_string(value.intValue);
      break;
    case PyValue::Kind::Float:
      shown = formatPythonFloat(value.floatValue);
      break;
    case PyValue::Kind::Str:
      shown = value.text;
      break;
    case PyValue::Kind::Bool:
      shown = value.boolValue ? "True" : "False";
      break;
    case PyValue::Kind::None:
      shown = "None";
      break;
    case PyValue::Kind::Name:
      // A dtype shows as its name alone.
      return torchDtypeName(value.text);
    default:
      return std::nullopt;
    }
    std::replace(shown.begin(), shown.end(), '.', '_');
    return (argName + "_" + shown).str();
  };
  std::vector<std::string> suffixes;
  for (const PyValue &entry : values) {
    const PyValue *caseValues = &entry;
    if (entry.kind == PyValue::Kind::Call &&
        (entry.text == "subtest" ||
         StringRef(entry.text).ends_with(".subtest"))) {
      const PyValue *name = entry.getKeyword("name");
      if (name && name->kind == PyValue::Kind::Str && !name->text.empty()) {
        if (StringRef(name->text).contains('.'))
          return std::nullopt;
        suffixes.push_back(name->text);
        continue;
      }
      if (entry.elements.empty())
        return std::nullopt;
      caseValues = &entry.elements[0];
    }
    std::vector<const PyValue *> parts;
    if (argNames.size() == 1) {
      parts.push_back(caseValues);
    } else {
      if (!caseValues->isSequence() ||
          caseValues->elements.size() != argNames.size())
        return std::nullopt;
      for (const PyValue &part : caseValues->elements)
        parts.push_back(&part);
    }
    std::vector<std::string> pieces;
    for (auto [argName, part] : llvm::zip(argNames, parts)) {
      std::optional<std::string> piece = format(argName, *part);
      if (!piece)
        return std::nullopt;
      pieces.push_back(std::move(*piece));
    }
    suffixes.push_back(llvm::join(pieces, "_"));
  }
  return suffixes;
}

void FactsBuilder::readGenerator(LocalId id, PytestEntitySummary &facts) {
  const EntitySummary &entity = summary.entities[id];
  // Decorators apply innermost first; torch composes stacked parametrize
  // decorators as `<outer>_<inner>`, the inner one varying slowest.
  std::vector<std::string> torchNames;
  bool torch = false, torchKnown = true;
  for (const PyValue &decorator : llvm::reverse(decorators[id])) {
    if (decorator.kind != PyValue::Kind::Call)
      continue;
    StringRef callee = decorator.text;
    if (callee == "parameterized.expand" ||
        callee.ends_with(".parameterized.expand")) {
      facts.generator = 1;
      std::optional<std::vector<std::string>> names =
          expandParameterizedNames(decorator, entity.name);
      facts.generatedKnown = names.has_value();
      facts.generatedNames =
          names ? std::move(*names) : std::vector<std::string>();
      return;
    }
    bool isTorch = (callee == "parametrize" && isTorchName("parametrize")) ||
                   callee.ends_with("common_utils.parametrize");
    if (!isTorch)
      continue;
    torch = true;
    std::optional<std::vector<std::string>> suffixes =
        torchParametrizeSuffixes(decorator);
    if (!suffixes) {
      torchKnown = false;
      continue;
    }
    if (torchNames.empty()) {
      torchNames = std::move(*suffixes);
      continue;
    }
    std::vector<std::string> combined;
    for (const std::string &inner : torchNames)
      for (const std::string &outer : *suffixes)
        combined.push_back(outer.empty()   ? inner
                           : inner.empty() ? outer
                                           : outer + "_" + inner);
    torchNames = std::move(combined);
  }
  if (!torch)
    return;
  facts.generator = 2;
  facts.generatedKnown = torchKnown;
  if (torchKnown)
    for (const std::string &suffix : torchNames)
      facts.generatedNames.push_back(entity.name + "_" + suffix);
}

void FactsBuilder::run(llvm::ArrayRef<PyValue> moduleMarkValues) {
  for (auto [index, entity] : llvm::enumerate(summary.entities)) {
    LocalId id = static_cast<LocalId>(index);
    bool inScope = entity.parent == kModuleScope ||
                   summary.entities[entity.parent].kind == EntityKind::Class;
    bool isClass = entity.kind == EntityKind::Class;
    bool isFixture = inScope && entity.isFixture;
    bool isTest = inScope && (StringRef(entity.name).starts_with("test") ||
                              config.isTestFunctionName(entity.name));
    if (!isClass && !isFixture && !isTest)
      continue;
    PytestEntitySummary facts;
    facts.entity = id;
    if (isFixture)
      readFixture(id, facts);
    if (isTest && !isClass && static_cast<size_t>(id) < decorators.size())
      readGenerator(id, facts);
    if (isClass) {
      // Import-time code and class decorators that change the class.
      facts.instantiated = effects.instantiated.contains(entity.qualname);
      facts.dynamicMembers = effects.dynamicMembers.contains(entity.qualname);
      facts.replaced = effects.replaced.contains(entity.qualname);
      for (StringRef decorator : entity.decorators) {
        StringRef last = decorator.substr(decorator.rfind('.') + 1);
        if (last == "instantiate_parametrized_tests")
          facts.instantiated = true;
        // parameterized_class moves the tests into new classes named
        // `Cls_0`, ...; the decorated name keeps none.
        if (last == "parameterized_class") {
          facts.replaced = true;
          summary.dynamicTests = true;
        }
      }
    }
    // pytest applies (and iterates) marks innermost first.
    std::vector<const PyValue *> marks;
    if (static_cast<size_t>(id) < decorators.size())
      for (const PyValue &decorator : llvm::reverse(decorators[id]))
        if (!getMarkerName(decorator).empty())
          marks.push_back(&decorator);
    facts.marks = convertMarks(marks, entity.name, entity.range.startLine,
                               entity.range.startColumn + 1);
    if (isClass) {
      if (!lines) {
        lines.emplace(source);
        bindings.emplace(getModuleBindings(summary));
      }
      size_t offset =
          lines->offset(entity.range.startLine, entity.range.startColumn);
      if (offset < source.size()) {
        for (const std::string &base : parseClassBases(source, offset))
          facts.bases.push_back(
              base.empty() ? base : resolveBase(base, entity.range.startLine));
        // The body: from the header's end to the class's end.
        size_t colon = offset;
        int depth = 0;
        for (; colon < source.size(); ++colon) {
          char c = source[colon];
          if (c == '"' || c == '\'') {
            colon = skipString(source, colon) - 1;
          } else if (c == '#') {
            colon = std::min(source.find('\n', colon), source.size()) - 1;
          } else if (c == '(' || c == '[' || c == '{') {
            ++depth;
          } else if (c == ')' || c == ']' || c == '}') {
            --depth;
          } else if (c == ':' && depth == 0) {
            break;
          }
        }
        size_t end = lines->lineEnd(entity.range.endLine, source.size());
        if (colon < end)
          facts.testAttribute = findTestAttribute(source.slice(colon + 1, end));
      }
    }
    if (!facts.marks.empty() || !facts.bases.empty() || facts.testAttribute ||
        isFixture || facts.generator || facts.instantiated ||
        facts.dynamicMembers || facts.replaced)
      summary.pytestEntities.push_back(std::move(facts));
  }
  std::vector<const PyValue *> marks;
  for (const PyValue &mark : moduleMarkValues)
    if (!getMarkerName(mark).empty())
      marks.push_back(&mark);
  summary.moduleMarks = convertMarks(marks, "pytestmark", 0, 0);
}

void detail::buildPytestFacts(StringRef moduleName, StringRef source,
                              FileSummary &summary,
                              llvm::ArrayRef<std::vector<PyValue>> decorators,
                              llvm::ArrayRef<PyValue> moduleMarks,
                              const ImportTimeEffects &effects,
                              const PytestConfig &config) {
  FactsBuilder(moduleName, source, summary, decorators, effects, config)
      .run(moduleMarks);
}
