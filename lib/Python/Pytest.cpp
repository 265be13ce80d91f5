//===- Pytest.cpp - pytest's collection rules, statically -----------------===//
//
// Mirrors, in order: _pytest/python.py (what is collected, in which order),
// _pytest/python.py's IdMaker (parametrize ids) and _pytest/compat.py's
// ascii_escaped. Where pytest would need the run-time value of an expression
// to name a case, the test is emitted once with a `parametrized` attribute
// instead of guessing.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/Pytest.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;

PyValue::PyValue() = default;
PyValue::PyValue(const PyValue &) = default;
PyValue::PyValue(PyValue &&) noexcept = default;
PyValue &PyValue::operator=(const PyValue &) = default;
PyValue &PyValue::operator=(PyValue &&) noexcept = default;
PyValue::~PyValue() = default;

const PyValue *PyValue::getKeyword(StringRef name) const {
  for (const auto &[keyword, value] : keywords)
    if (keyword == name)
      return &value;
  return nullptr;
}

std::string fastci::python::formatPythonFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  // The shortest precision that round-trips, as repr() chooses.
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    snprintf(buffer, sizeof(buffer), "%.*e", precision - 1, value);
    if (strtod(buffer, nullptr) == value)
      break;
  }
  StringRef scientific(buffer);
  std::string sign;
  if (scientific.consume_front("-"))
    sign = "-";
  auto [mantissa, exponentText] = scientific.split('e');
  int exponent = atoi(exponentText.str().c_str());
  std::string digits;
  for (char c : mantissa)
    if (c != '.')
      digits.push_back(c);
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();

  std::string result = sign;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      result += "0." + std::string(-exponent - 1, '0') + digits;
    } else {
      size_t intDigits = exponent + 1;
      if (digits.size() <= intDigits)
        result += digits + std::string(intDigits - digits.size(), '0') + ".0";
      else
        result += digits.substr(0, intDigits) + "." + digits.substr(intDigits);
    }
    return result;
  }
  result += digits.substr(0, 1);
  if (digits.size() > 1)
    result += "." + digits.substr(1);
  char exponentBuffer[16];
  snprintf(exponentBuffer, sizeof(exponentBuffer), "e%c%02d",
           exponent < 0 ? '-' : '+', std::abs(exponent));
  return result + exponentBuffer;
}

/// Escapes what pytest's _translate_non_printable escapes.
static void appendAsciiByte(std::string &out, unsigned char c) {
  if (c == '\t')
    out += "\\t";
  else if (c == '\n')
    out += "\\n";
  else if (c == '\r')
    out += "\\r";
  else if (c < 0x20 || c >= 0x7f)
    out += llvm::formatv("\\x{0:x-2}", static_cast<unsigned>(c)).str();
  else
    out.push_back(static_cast<char>(c));
}

std::string fastci::python::asciiEscapeStr(StringRef utf8) {
  // str.encode("unicode_escape"): backslashes doubled, \t \n \r named,
  // other control and non-ASCII code points as \xhh, \uhhhh or \Uhhhhhhhh.
  std::string out;
  for (size_t i = 0; i < utf8.size();) {
    unsigned char c = utf8[i];
    uint32_t cp = c;
    size_t length = 1;
    if (c >= 0xC0 && c < 0xE0 && i + 1 < utf8.size()) {
      cp = (c & 0x1F) << 6 | (utf8[i + 1] & 0x3F);
      length = 2;
    } else if (c >= 0xE0 && c < 0xF0 && i + 2 < utf8.size()) {
      cp = (c & 0x0F) << 12 | (utf8[i + 1] & 0x3F) << 6 | (utf8[i + 2] & 0x3F);
      length = 3;
    } else if (c >= 0xF0 && i + 3 < utf8.size()) {
      cp = (c & 0x07) << 18 | (utf8[i + 1] & 0x3F) << 12 |
           (utf8[i + 2] & 0x3F) << 6 | (utf8[i + 3] & 0x3F);
      length = 4;
    }
    i += length;
    if (cp == '\\')
      out += "\\\\";
    else if (cp < 0x80)
      appendAsciiByte(out, static_cast<unsigned char>(cp));
    else if (cp < 0x100)
      out += llvm::formatv("\\x{0:x-2}", cp).str();
    else if (cp < 0x10000)
      out += llvm::formatv("\\u{0:x-4}", cp).str();
    else
      out += llvm::formatv("\\U{0:x-8}", cp).str();
  }
  return out;
}

std::string fastci::python::asciiEscapeBytes(StringRef bytes) {
  // bytes.decode("ascii", "backslashreplace"), then non-printables escaped;
  // unlike str, a backslash is kept as is.
  std::string out;
  for (unsigned char c : bytes)
    appendAsciiByte(out, c);
  return out;
}

/// The id pytest derives from one argument value, or nothing when it
/// depends on run-time state.
static std::optional<std::string>
idFromValue(const PyValue &value, StringRef argname, size_t index,
            llvm::function_ref<bool(StringRef)> isLocalDef) {
  using K = PyValue::Kind;
  switch (value.kind) {
  case K::Str:
    return asciiEscapeStr(value.text);
  case K::Bytes:
    return asciiEscapeBytes(value.text);
  case K::None:
    return std::string("None");
  case K::Bool:
    return std::string(value.boolValue ? "True" : "False");
  case K::Int:
    return std::to_string(value.intValue);
  case K::Float:
    return formatPythonFloat(value.floatValue);
  case K::Name:
    // A class or function of this file has a __name__; other names are
    // taken to be plain objects.
    if (!StringRef(value.text).contains('.') && isLocalDef(value.text))
      return value.text;
    break;
  case K::Call: {
    // Builtin conversions yield values whose str() we cannot know here.
    static const char *const kValueCalls[] = {"float", "int",   "str",
                                              "bool",  "bytes", "complex"};
    if (llvm::is_contained(kValueCalls, value.text))
      return std::nullopt;
    break;
  }
  default:
    break;
  }
  return (argname + llvm::Twine(index)).str();
}

/// Splits parametrize's argnames ("a, b" or a sequence of strings).
static std::optional<std::vector<std::string>>
getArgnames(const PyValue &value) {
  std::vector<std::string> names;
  if (value.kind == PyValue::Kind::Str) {
    llvm::SmallVector<StringRef, 4> parts;
    StringRef(value.text).split(parts, ',');
    for (StringRef part : parts)
      if (!part.trim().empty())
        names.push_back(part.trim().str());
  } else if (value.isSequence()) {
    for (const PyValue &element : value.elements) {
      if (element.kind != PyValue::Kind::Str)
        return std::nullopt;
      names.push_back(element.text);
    }
  } else {
    return std::nullopt;
  }
  if (names.empty())
    return std::nullopt;
  return names;
}

/// pytest 8's IdMaker.make_unique_parameterset_ids: duplicates get a
/// counter, after an `_` when the id already ends in a digit.
static void makeUnique(std::vector<std::string> &ids) {
  // `current` mirrors pytest's `set(resolved_ids)`, which sees replacements
  // made so far.
  llvm::StringMap<unsigned> counts, current;
  for (const std::string &id : ids)
    ++counts[id];
  current = counts;
  llvm::StringMap<unsigned> suffixes;
  for (std::string &id : ids) {
    if (counts[id] <= 1)
      continue;
    std::string base = id;
    std::string separator =
        !base.empty() && llvm::isDigit(base.back()) ? "_" : "";
    unsigned &suffix = suffixes[base];
    std::string candidate = base + separator + std::to_string(suffix);
    while (current.lookup(candidate))
      candidate = base + separator + std::to_string(++suffix);
    --current[base];
    ++current[candidate];
    id = std::move(candidate);
    ++suffix;
  }
}

std::optional<std::vector<std::string>> fastci::python::computeParametrizeIds(
    const PyValue &call, llvm::function_ref<bool(StringRef)> isLocalDef) {
  auto argument = [&](size_t position, StringRef keyword) -> const PyValue * {
    if (position < call.elements.size())
      return &call.elements[position];
    return call.getKeyword(keyword);
  };
  const PyValue *argnamesValue = argument(0, "argnames");
  const PyValue *argvalues = argument(1, "argvalues");
  const PyValue *explicitIds = argument(3, "ids");
  if (!argnamesValue || !argvalues || !argvalues->isSequence() ||
      argvalues->elements.empty())
    return std::nullopt;
  std::optional<std::vector<std::string>> argnames =
      getArgnames(*argnamesValue);
  if (!argnames)
    return std::nullopt;
  if (explicitIds && explicitIds->kind != PyValue::Kind::None &&
      (!explicitIds->isSequence() ||
       explicitIds->elements.size() != argvalues->elements.size()))
    return std::nullopt;

  std::vector<std::string> ids;
  for (auto [index, parameterSet] : llvm::enumerate(argvalues->elements)) {
    llvm::ArrayRef<PyValue> values(parameterSet);
    const PyValue *paramId = nullptr;
    bool isParam =
        parameterSet.kind == PyValue::Kind::Call &&
        (parameterSet.text == "pytest.param" || parameterSet.text == "param");
    if (isParam) {
      values = parameterSet.elements;
      paramId = parameterSet.getKeyword("id");
      if (paramId && paramId->kind == PyValue::Kind::None)
        paramId = nullptr;
    } else if (argnames->size() > 1) {
      if (!parameterSet.isSequence())
        return std::nullopt;
      values = parameterSet.elements;
    }
    if (values.size() != argnames->size())
      return std::nullopt;

    if (paramId) {
      if (paramId->kind != PyValue::Kind::Str)
        return std::nullopt;
      ids.push_back(asciiEscapeStr(paramId->text));
      continue;
    }
    if (explicitIds && explicitIds->kind != PyValue::Kind::None) {
      const PyValue &id = explicitIds->elements[index];
      if (id.kind != PyValue::Kind::None) {
        if (id.kind != PyValue::Kind::Str && id.kind != PyValue::Kind::Int &&
            id.kind != PyValue::Kind::Float && id.kind != PyValue::Kind::Bool)
          return std::nullopt;
        std::optional<std::string> text =
            idFromValue(id, "", index, isLocalDef);
        if (!text)
          return std::nullopt;
        ids.push_back(std::move(*text));
        continue;
      }
    }
    std::vector<std::string> parts;
    for (auto [value, argname] : llvm::zip(values, *argnames)) {
      std::optional<std::string> part =
          idFromValue(value, argname, index, isLocalDef);
      if (!part)
        return std::nullopt;
      parts.push_back(std::move(*part));
    }
    ids.push_back(llvm::join(parts, "-"));
  }
  makeUnique(ids);
  return ids;
}

bool fastci::python::isPytestTestFile(StringRef fileName) {
  return fileName.ends_with(".py") &&
         (fileName.starts_with("test_") || fileName.ends_with("_test.py"));
}

namespace {
/// The name of the marker a decorator applies (`slow` for
/// `@pytest.mark.slow` or `@mark.slow(...)`), or "".
StringRef getMarkerName(const PyValue &decorator) {
  if (decorator.kind != PyValue::Kind::Name &&
      decorator.kind != PyValue::Kind::Call)
    return {};
  StringRef name = decorator.text;
  if (!name.consume_front("pytest.mark.") && !name.consume_front("mark."))
    return {};
  return name.contains('.') ? StringRef() : name;
}

class Collector {
public:
  Collector(StringRef path, FileSummary &summary,
            llvm::ArrayRef<std::vector<PyValue>> decorators,
            llvm::ArrayRef<PyValue> moduleMarks)
      : path(path), summary(summary), decorators(decorators),
        children(summary.entities.size() + 1) {
    for (auto [id, entity] : llvm::enumerate(summary.entities))
      children[entity.parent + 1].push_back(static_cast<LocalId>(id));
    for (const PyValue &mark : moduleMarks)
      this->moduleMarks.push_back(&mark);
  }

  void run() { collectScope(kModuleScope, path.str(), moduleMarks); }

private:
  using MarkList = std::vector<const PyValue *>;

  /// The marks \p id's decorators apply, innermost (closest to the `def`)
  /// first, which is the order pytest applies and iterates them in.
  MarkList getOwnMarks(LocalId id) const {
    MarkList marks;
    for (const PyValue &decorator : llvm::reverse(decorators[id]))
      if (!getMarkerName(decorator).empty())
        marks.push_back(&decorator);
    return marks;
  }

  bool isLocalDef(StringRef name) const {
    return llvm::any_of(children[0], [&](LocalId id) {
      return summary.entities[id].name == name;
    });
  }

  void collectScope(LocalId scope, const std::string &prefix,
                    const MarkList &inherited);
  void collectFunction(LocalId id, const std::string &prefix,
                       const MarkList &marks);

  StringRef path;
  FileSummary &summary;
  llvm::ArrayRef<std::vector<PyValue>> decorators;
  std::vector<std::vector<LocalId>> children;
  MarkList moduleMarks;
};
} // namespace

void Collector::collectScope(LocalId scope, const std::string &prefix,
                             const MarkList &inherited) {
  // A namespace keeps a name at the position of its first binding and the
  // value of its last, and pytest walks the namespace.
  std::vector<StringRef> order;
  llvm::StringMap<LocalId> last;
  for (LocalId id : children[scope + 1]) {
    StringRef name = summary.entities[id].name;
    auto [it, inserted] = last.try_emplace(name, id);
    if (inserted)
      order.push_back(name);
    else
      it->second = id;
  }
  for (StringRef name : order) {
    LocalId id = last[name];
    const EntitySummary &entity = summary.entities[id];
    if (entity.kind == EntityKind::Class) {
      if (!name.starts_with("Test"))
        continue;
      // pytest refuses classes with a constructor (with a warning).
      bool hasConstructor = llvm::any_of(children[id + 1], [&](LocalId m) {
        StringRef member = summary.entities[m].name;
        return summary.entities[m].kind == EntityKind::Function &&
               (member == "__init__" || member == "__new__");
      });
      if (hasConstructor)
        continue;
      MarkList marks = getOwnMarks(id);
      llvm::append_range(marks, inherited);
      collectScope(id, prefix + "::" + name.str(), marks);
      continue;
    }
    if (name.starts_with("test") && !entity.isFixture) {
      MarkList marks = getOwnMarks(id);
      llvm::append_range(marks, inherited);
      collectFunction(id, prefix, marks);
    }
  }
}

void Collector::collectFunction(LocalId id, const std::string &prefix,
                                const MarkList &marks) {
  const EntitySummary &entity = summary.entities[id];
  TestSummary base;
  base.entry = id;
  llvm::StringSet<> seenTags;
  std::vector<std::vector<std::string>> cases = {{}};
  bool hasParametrize = false, undetermined = false, seenFastci = false;
  for (const PyValue *mark : marks) {
    StringRef marker = getMarkerName(*mark);
    if (marker == "parametrize") {
      hasParametrize = true;
      if (undetermined)
        continue;
      std::optional<std::vector<std::string>> ids = computeParametrizeIds(
          *mark, [&](StringRef name) { return isLocalDef(name); });
      if (!ids) {
        undetermined = true;
        continue;
      }
      std::vector<std::vector<std::string>> product;
      for (const std::vector<std::string> &prefixIds : cases)
        for (const std::string &id : *ids) {
          product.push_back(prefixIds);
          product.back().push_back(id);
        }
      cases = std::move(product);
      continue;
    }
    if (seenTags.insert(marker).second)
      base.tags.push_back(marker.str());
    if (marker != "fastci" || seenFastci)
      continue;
    seenFastci = true;
    bool literal = mark->kind == PyValue::Kind::Call;
    if (const PyValue *scope = mark->getKeyword("scope")) {
      literal &= scope->isSequence();
      for (const PyValue &element : scope->elements) {
        if (element.kind == PyValue::Kind::Str)
          base.scope.push_back(element.text);
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
        base.workload.push_back({key.text, std::move(attr)});
      }
    }
    if (!literal)
      summary.warnings.push_back(
          {entity.range.startLine, entity.range.startColumn + 1,
           "@pytest.mark.fastci on '" + entity.name +
               "' takes literal scope=[...] and workload={...}; "
               "non-literal parts ignored"});
  }

  std::string nodeId = prefix + "::" + entity.name;
  if (!hasParametrize || undetermined) {
    base.nodeId = std::move(nodeId);
    base.parametrized = hasParametrize;
    summary.tests.push_back(std::move(base));
    return;
  }
  for (const std::vector<std::string> &ids : cases) {
    TestSummary test = base;
    test.nodeId = nodeId + "[" + llvm::join(ids, "-") + "]";
    summary.tests.push_back(std::move(test));
  }
}

void fastci::python::collectPytestItems(
    StringRef path, FileSummary &summary,
    llvm::ArrayRef<std::vector<PyValue>> decorators,
    llvm::ArrayRef<PyValue> moduleMarks) {
  Collector(path, summary, decorators, moduleMarks).run();
}
