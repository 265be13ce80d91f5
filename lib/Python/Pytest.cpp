//===- Pytest.cpp - pytest's collection rules, statically -----------------===//
//
// Mirrors, in order: _pytest/python.py's IdMaker (parametrize ids),
// _pytest/compat.py's ascii_escaped, and _pytest/python.py's collectors
// (what is collected, in which order, along the MRO). Where pytest would need
// the run-time value of an expression to name a case, the test is emitted
// once with a `parametrized` attribute instead of guessing; where it would
// need a base class FastCI cannot see, the class gets an item of its own
// marked `inherited-unknown`.
//
// Work is split in two so that per-file summaries stay cacheable: each file
// records its facts (marks reduced to ids and tags, bases resolved through
// its imports, `__test__`), and collection runs on those facts, first with
// the file alone, then with the whole repository (linkPytestItems).
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/Pytest.h"
#include "fastci/Pass/Parallel.h"
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

//===----------------------------------------------------------------------===//
// Parametrize ids
//===----------------------------------------------------------------------===//

/// Callables known to return objects without a `__name__` that are not
/// str/bytes/numbers/bools/enums/patterns: pytest names their values
/// `argname<index>`.
static bool isPlainObjectFactory(StringRef callee) {
  static const char *const kFactories[] = {
      "object",      "list",       "dict",         "set",
      "frozenset",   "tuple",      "bytearray",    "torch.tensor",
      "torch.randn", "torch.rand", "torch.zeros",  "torch.ones",
      "torch.empty", "torch.full", "torch.arange", "torch.device",
      "torch.Size",  "np.array",   "numpy.array",  "np.zeros",
      "numpy.zeros", "np.ones",    "numpy.ones"};
  return llvm::is_contained(kFactories, callee);
}

/// torch's dtypes: objects without a `__name__` (pytest names them
/// `argname<index>`), met in nearly every training framework's tests.
static bool isTorchDtype(StringRef name) {
  static const char *const kDtypes[] = {"float32",
                                        "float",
                                        "float64",
                                        "double",
                                        "float16",
                                        "half",
                                        "bfloat16",
                                        "complex64",
                                        "cfloat",
                                        "complex128",
                                        "cdouble",
                                        "uint8",
                                        "int8",
                                        "int16",
                                        "short",
                                        "int32",
                                        "int",
                                        "int64",
                                        "long",
                                        "bool",
                                        "float8_e4m3fn",
                                        "float8_e5m2",
                                        "float8_e4m3fnuz",
                                        "float8_e5m2fnuz",
                                        "uint16",
                                        "uint32",
                                        "uint64",
                                        "complex32",
                                        "chalf"};
  return name.consume_front("torch.") && llvm::is_contained(kDtypes, name);
}

/// Python's float() of a string literal, or nothing when it would raise.
static std::optional<double> parsePythonFloat(StringRef text) {
  std::string digits = text.trim(" \t\n\r\f\v").str();
  llvm::erase(digits, '_');
  StringRef body = digits;
  bool negative = body.consume_front("-");
  if (!negative)
    body.consume_front("+");
  if (body.equals_insensitive("inf") || body.equals_insensitive("infinity"))
    return negative ? -HUGE_VAL : HUGE_VAL;
  if (body.equals_insensitive("nan"))
    return std::nan("");
  if (body.empty() || !(llvm::isDigit(body[0]) || body[0] == '.'))
    return std::nullopt;
  char *end = nullptr;
  double value = strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size())
    return std::nullopt;
  return value;
}

/// The id pytest derives from one argument value, or nothing when it
/// depends on run-time state.
static std::optional<std::string>
idFromValue(const PyValue &value, StringRef argname, size_t index,
            llvm::function_ref<bool(StringRef)> isLocalDef) {
  using K = PyValue::Kind;
  std::string byArgname = (argname + llvm::Twine(index)).str();
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
  case K::Tuple:
  case K::List:
  case K::Set:
  case K::Dict:
    // Containers have no `__name__`.
    return byArgname;
  case K::Name:
    // A class or function of this file is named by its `__name__`; what
    // any other name holds (a constant, an imported class, an enum member)
    // is not known here.
    if (!StringRef(value.text).contains('.') && isLocalDef(value.text))
      return value.text;
    if (isTorchDtype(value.text))
      return byArgname;
    return std::nullopt;
  case K::Call:
    if (isPlainObjectFactory(value.text))
      return byArgname;
    if (value.text == "float" && value.elements.size() == 1 &&
        value.keywords.empty() && value.elements[0].kind == K::Str)
      if (std::optional<double> number =
              parsePythonFloat(value.elements[0].text))
        return formatPythonFloat(*number);
    return std::nullopt;
  case K::Unknown:
    // An expression (`10**3`, `-x`, a comprehension) may well be a number
    // or a string.
    return std::nullopt;
  }
  return std::nullopt;
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

/// Suffixes duplicate ids with a counter, as IdMaker.make_unique_parameter
/// set_ids does. pytest 7.2 appends the counter directly; pytest 8 puts an
/// `_` before it when the id ends in a digit and skips counters whose id is
/// taken. Only the cases both agree on are answered.
static bool makeUnique(std::vector<std::string> &ids) {
  llvm::StringMap<unsigned> counts;
  for (const std::string &id : ids)
    ++counts[id];
  llvm::StringMap<unsigned> suffixes;
  std::vector<std::string> unique = ids;
  for (std::string &id : unique) {
    if (counts[id] <= 1)
      continue;
    if (!id.empty() && llvm::isDigit(id.back()))
      return false;
    id += std::to_string(suffixes[id]++);
    if (counts.count(id))
      return false;
  }
  ids = std::move(unique);
  return true;
}

/// The marker names of a `pytest.param(marks=...)` value.
static std::vector<std::string> getParamMarkNames(const PyValue *marks);

std::optional<std::vector<std::string>> fastci::python::computeParametrizeIds(
    const PyValue &call, llvm::function_ref<bool(StringRef)> isLocalDef,
    std::vector<std::vector<std::string>> *caseTags) {
  auto argument = [&](size_t position, StringRef keyword) -> const PyValue * {
    if (position < call.elements.size())
      return &call.elements[position];
    return call.getKeyword(keyword);
  };
  const PyValue *argnamesValue = argument(0, "argnames");
  const PyValue *argvalues = argument(1, "argvalues");
  const PyValue *explicitIds = argument(3, "ids");
  if (!argnamesValue || !argvalues || !argvalues->isSequence())
    return std::nullopt;
  std::optional<std::vector<std::string>> argnames =
      getArgnames(*argnamesValue);
  if (!argnames)
    return std::nullopt;
  if (argvalues->elements.empty()) {
    // pytest still makes one (skipped) item, its values all NOTSET.
    std::vector<std::string> parts;
    for (const std::string &argname : *argnames)
      parts.push_back(argname + "0");
    if (caseTags)
      caseTags->assign(1, {});
    return std::vector<std::string>{llvm::join(parts, "-")};
  }
  if (explicitIds && explicitIds->kind != PyValue::Kind::None &&
      (!explicitIds->isSequence() ||
       explicitIds->elements.size() != argvalues->elements.size()))
    return std::nullopt;

  std::vector<std::string> ids;
  std::vector<std::vector<std::string>> tags;
  for (auto [index, parameterSet] : llvm::enumerate(argvalues->elements)) {
    llvm::ArrayRef<PyValue> values(parameterSet);
    const PyValue *paramId = nullptr;
    bool isParam =
        parameterSet.kind == PyValue::Kind::Call &&
        (parameterSet.text == "pytest.param" || parameterSet.text == "param");
    tags.emplace_back();
    if (isParam) {
      values = parameterSet.elements;
      paramId = parameterSet.getKeyword("id");
      if (paramId && paramId->kind == PyValue::Kind::None)
        paramId = nullptr;
      tags.back() = getParamMarkNames(parameterSet.getKeyword("marks"));
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
        // ids= entries must be str, bytes, numbers, bools or named objects.
        if (id.kind != PyValue::Kind::Str && id.kind != PyValue::Kind::Bytes &&
            id.kind != PyValue::Kind::Int && id.kind != PyValue::Kind::Float &&
            id.kind != PyValue::Kind::Bool && id.kind != PyValue::Kind::Name)
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
  if (!makeUnique(ids))
    return std::nullopt;
  if (caseTags)
    *caseTags = std::move(tags);
  return ids;
}

bool fastci::python::isPytestTestFile(StringRef fileName) {
  return fileName.ends_with(".py") &&
         (fileName.starts_with("test_") || fileName.ends_with("_test.py"));
}

/// The name of the marker a decorator applies (`slow` for
/// `@pytest.mark.slow` or `@mark.slow(...)`), or "".
static StringRef getMarkerName(const PyValue &decorator) {
  if (decorator.kind != PyValue::Kind::Name &&
      decorator.kind != PyValue::Kind::Call)
    return {};
  StringRef name = decorator.text;
  if (!name.consume_front("pytest.mark.") && !name.consume_front("mark."))
    return {};
  return name.contains('.') ? StringRef() : name;
}

static std::vector<std::string> getParamMarkNames(const PyValue *marks) {
  std::vector<std::string> names;
  if (!marks)
    return names;
  auto add = [&](const PyValue &mark) {
    StringRef name = getMarkerName(mark);
    if (!name.empty() && !llvm::is_contained(names, name))
      names.push_back(name.str());
  };
  if (marks->isSequence())
    llvm::for_each(marks->elements, add);
  else
    add(*marks);
  return names;
}

//===----------------------------------------------------------------------===//
// Class headers and bodies, read from the source text
//===----------------------------------------------------------------------===//

/// Skips a string literal starting at \p i (on its quote) and returns the
/// offset after it.
static size_t skipString(StringRef text, size_t i) {
  char quote = text[i];
  bool triple = text.substr(i, 3) == std::string(3, quote);
  size_t pos = i + (triple ? 3 : 1);
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '\\') {
      pos += 2;
      continue;
    }
    if (!triple && c == '\n')
      return pos;
    if (c == quote && (!triple || text.substr(pos, 3) == std::string(3, quote)))
      return pos + (triple ? 3 : 1);
    ++pos;
  }
  return pos;
}

/// Reduces one base expression to its dotted name ("" if it is not one).
static std::string baseToName(StringRef expression) {
  std::string name;
  for (char c : expression)
    if (!llvm::isSpace(c) && c != '\\')
      name.push_back(c);
  // `Generic[T]` and `Base[int]` subclass the subscripted class.
  if (size_t bracket = name.find('['); bracket != std::string::npos) {
    if (name.back() != ']')
      return {};
    name.resize(bracket);
  }
  StringRef ref = name;
  if (ref.empty() || ref.front() == '.' || ref.back() == '.' ||
      ref.contains(".."))
    return {};
  for (char c : ref) {
    auto uc = static_cast<unsigned char>(c);
    if (!llvm::isAlnum(c) && c != '_' && c != '.' && uc < 0x80)
      return {};
  }
  if (llvm::isDigit(ref.front()))
    return {};
  return name;
}

std::vector<std::string> fastci::python::parseClassBases(StringRef source,
                                                         size_t offset) {
  std::vector<std::string> bases;
  StringRef text = source.drop_front(std::min(offset, source.size()));
  if (!text.consume_front("class"))
    return bases;
  // The class name, then optional PEP 695 type parameters, then `(`.
  size_t pos = 0;
  auto skipSpace = [&] {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\\' ||
            text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  };
  skipSpace();
  while (pos < text.size() && !llvm::isSpace(text[pos]) && text[pos] != '(' &&
         text[pos] != ':' && text[pos] != '[' && text[pos] != '\\')
    ++pos;
  skipSpace();
  int depth = 0;
  if (pos < text.size() && text[pos] == '[') {
    for (; pos < text.size(); ++pos) {
      if (text[pos] == '[')
        ++depth;
      else if (text[pos] == ']' && --depth == 0)
        break;
    }
    ++pos;
    skipSpace();
  }
  if (pos >= text.size() || text[pos] != '(')
    return bases;

  // Split the argument list at top-level commas, dropping comments.
  std::vector<std::string> arguments(1);
  depth = 0;
  for (++pos; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '#') {
      while (pos < text.size() && text[pos] != '\n')
        ++pos;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t end = skipString(text, pos);
      arguments.back() += text.slice(pos, end);
      pos = end - 1;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth-- == 0)
        break;
    } else if (c == ',' && depth == 0) {
      arguments.emplace_back();
      continue;
    }
    arguments.back().push_back(c);
  }
  for (StringRef argument : arguments) {
    argument = argument.trim(" \t\r\n\\");
    if (argument.empty())
      continue;
    // Keyword arguments (`metaclass=ABCMeta`) are not bases.
    size_t length = 0;
    while (length < argument.size() &&
           (llvm::isAlnum(argument[length]) || argument[length] == '_'))
      ++length;
    StringRef after = argument.drop_front(length).ltrim();
    if (length && after.starts_with("=") && !after.starts_with("=="))
      continue;
    if (argument.starts_with("**"))
      continue;
    bases.push_back(argument.starts_with("*") ? std::string()
                                              : baseToName(argument));
  }
  return bases;
}

/// The `__test__` assignment among the statements of a class body, given
/// as the text from the end of the header to the end of the class: 1 for
/// False, 2 for True, 0 when none.
static uint8_t findTestAttribute(StringRef body) {
  if (!body.contains("__test__"))
    return 0;
  auto check = [](StringRef statement) -> uint8_t {
    statement = statement.trim();
    if (!statement.consume_front("__test__"))
      return 0;
    statement = statement.ltrim();
    if (statement.consume_front(":")) // an annotation
      statement =
          statement.drop_front(std::min(statement.find('='), statement.size()));
    if (!statement.consume_front("=") || statement.starts_with("="))
      return 0;
    statement = statement.split('#').first.trim();
    if (statement == "False")
      return 1;
    if (statement == "True")
      return 2;
    return 0;
  };
  // The rest of the header line: a one-line body (`class A: __test__ = 0`).
  auto [first, rest] = body.split('\n');
  if (!first.trim().empty() && !first.trim().starts_with("#")) {
    llvm::SmallVector<StringRef, 4> statements;
    first.split(statements, ';');
    for (StringRef statement : statements)
      if (uint8_t found = check(statement))
        return found;
    return 0;
  }
  // Otherwise the statements at the body's indentation.
  std::optional<size_t> indent;
  uint8_t result = 0;
  while (!rest.empty()) {
    StringRef line;
    std::tie(line, rest) = rest.split('\n');
    StringRef content = line.ltrim(" \t");
    if (content.trim().empty() || content.starts_with("#"))
      continue;
    size_t lineIndent = line.size() - content.size();
    if (!indent)
      indent = lineIndent;
    if (lineIndent != *indent)
      continue;
    // The last assignment wins, as in the class namespace.
    if (uint8_t found = check(content))
      result = found;
  }
  return result;
}

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

/// A module-level binding: a definition or an import.
struct Binding {
  uint32_t line;
  /// The entity, or kModuleScope for an import.
  LocalId entity;
  /// For an import, the dotted target.
  std::string target;
};

/// The module-level bindings of a summary by name, in source order.
llvm::StringMap<std::vector<Binding>>
getModuleBindings(const FileSummary &summary) {
  llvm::StringMap<std::vector<Binding>> bindings;
  for (auto [id, entity] : llvm::enumerate(summary.entities))
    if (entity.parent == kModuleScope)
      bindings[entity.name].push_back(
          {entity.range.startLine, static_cast<LocalId>(id), {}});
  for (const EdgeSummary &edge : summary.edges) {
    if (edge.kind != EdgeKind::Import || edge.from != kModuleScope)
      continue;
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
  }
  for (auto &entry : bindings)
    llvm::stable_sort(entry.second, [](const Binding &a, const Binding &b) {
      return a.line < b.line;
    });
  return bindings;
}

std::string symbolOf(StringRef moduleName, const EntitySummary &entity) {
  return moduleName.empty() ? entity.qualname
                            : (moduleName + "." + entity.qualname).str();
}

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

//===----------------------------------------------------------------------===//
// Collection
//===----------------------------------------------------------------------===//

namespace {
/// An entity of some file of the repository.
struct EntityRef {
  uint32_t file = 0;
  LocalId id = kModuleScope;
  bool operator==(const EntityRef &other) const {
    return file == other.file && id == other.id;
  }
};

/// One file as collection sees it, with indexes over its summary.
struct FileView {
  StringRef path, moduleName;
  FileSummary *summary = nullptr;
  /// Children of each entity (index parent + 1), in source order.
  std::vector<std::vector<LocalId>> children;
  llvm::DenseMap<LocalId, const PytestEntitySummary *> facts;
  llvm::StringMap<std::vector<Binding>> bindings;

  FileView(StringRef path, StringRef moduleName, FileSummary *summary)
      : path(path), moduleName(moduleName), summary(summary),
        children(summary->entities.size() + 1),
        bindings(getModuleBindings(*summary)) {
    for (auto [id, entity] : llvm::enumerate(summary->entities))
      children[entity.parent + 1].push_back(static_cast<LocalId>(id));
    for (const PytestEntitySummary &entry : summary->pytestEntities)
      facts[entry.entity] = &entry;
  }

  const EntitySummary &entity(LocalId id) const {
    return summary->entities[id];
  }
  const PytestEntitySummary *getFacts(LocalId id) const {
    return facts.lookup(id);
  }
};

/// The files collection can see: one (a file analysed alone) or all.
class Repository {
public:
  explicit Repository(const PytestConfig &config) : config(config) {}
  const PytestConfig &config;

  void addFile(StringRef path, StringRef moduleName, FileSummary *summary) {
    uint32_t index = files.size();
    files.emplace_back(path, moduleName, summary);
    modules.try_emplace(moduleName, index);
    // Only what collection looks up: base classes, imported tests and
    // imported fixtures.
    for (auto [id, entity] : llvm::enumerate(summary->entities))
      if (entity.kind == EntityKind::Class || entity.isFixture ||
          StringRef(entity.name).starts_with("test") ||
          config.isTestFunctionName(entity.name))
        symbols.try_emplace(symbolOf(moduleName, entity),
                            EntityRef{index, static_cast<LocalId>(id)});
  }

  /// The class or function a dotted name denotes, following re-exports
  /// (`from .common import Base` in a package's `__init__.py`).
  std::optional<EntityRef> resolve(StringRef dotted) const {
    std::string name = dotted.str();
    for (unsigned hop = 0; hop < 8; ++hop) {
      auto it = symbols.find(name);
      if (it != symbols.end())
        return it->second;
      auto [module, last] = StringRef(name).rsplit('.');
      auto file = modules.find(module);
      if (last.empty() || file == modules.end())
        return std::nullopt;
      auto binding = files[file->second].bindings.find(last);
      if (binding == files[file->second].bindings.end() ||
          binding->second.back().entity != kModuleScope)
        return std::nullopt;
      name = binding->second.back().target;
    }
    return std::nullopt;
  }

  std::vector<FileView> files;

private:
  llvm::StringMap<uint32_t> modules;
  llvm::StringMap<EntityRef> symbols;
};

/// unittest.TestCase subclasses of test frameworks outside the repository
/// that add no tests of their own: torch's (1.13-2.x), read from its source.
bool isKnownFrameworkTestCase(StringRef name) {
  return name == "torch.testing._internal.common_utils.TestCase" ||
         name == "expecttest.TestCase";
}

/// Class decorators that give the class an `__init__` (pytest then refuses
/// to collect it): dataclasses and attrs.
bool isInitGeneratingDecorator(StringRef name) {
  static const char *const kDecorators[] = {"dataclass",
                                            "dataclasses.dataclass",
                                            "pydantic.dataclasses.dataclass",
                                            "attr.s",
                                            "attr.attrs",
                                            "attr.define",
                                            "attr.mutable",
                                            "attr.frozen",
                                            "attrs.define",
                                            "attrs.mutable",
                                            "attrs.frozen"};
  return llvm::is_contained(kDecorators, name);
}

/// Base classes that are known to contribute no tests, `__init__` or
/// `__test__` pytest would see.
bool isInertBase(StringRef name) {
  static const char *const kInert[] = {"object",
                                       "abc.ABC",
                                       "typing.Generic",
                                       "typing.Protocol",
                                       "unittest.TestCase",
                                       "unittest.IsolatedAsyncioTestCase"};
  return llvm::is_contained(kInert, name) || isKnownFrameworkTestCase(name);
}

/// Collects the items of one test file.
class ItemCollector {
public:
  ItemCollector(const Repository &repo, uint32_t file)
      : repo(repo), file(file), view(repo.files[file]) {}

  std::vector<TestSummary> run();

private:
  /// Marks in iteration order, and whether their parametrize order
  /// differs between pytest versions.
  struct MarkChain {
    std::vector<const MarkSummary *> marks;
    bool ambiguousOrder = false;
  };

  std::vector<EntityRef> getMro(EntityRef cls, bool &unknown,
                                unsigned depth = 0);
  /// A namespace's names in order of first binding, each with its last
  /// value (an entity of the namespace's file, or an imported one).
  std::vector<std::pair<std::string, std::optional<EntityRef>>>
  getNamespace(EntityRef scope) const;
  /// Whether a class derives from unittest.TestCase, as far as the
  /// repository shows.
  enum class CaseKind {
    /// No base leads to unittest.TestCase.
    No,
    /// Some base is unittest.TestCase or a repository class deriving it.
    Yes,
    /// Some base outside the repository is named like a TestCase
    /// (`absltest.TestCase`, `django.test.SimpleTestCase`).
    Maybe,
  };
  CaseKind getCaseKind(EntityRef cls, unsigned depth = 0) const;
  /// Collects the class or function \p value bound to \p name in a module
  /// or class namespace, if pytest would.
  void collectMember(EntityRef value, StringRef name, const std::string &prefix,
                     const MarkChain &outer, unsigned depth);
  /// Whether the first `__test__` along \p mro is False.
  bool isDisabled(llvm::ArrayRef<EntityRef> mro) const;
  /// The marks of the classes of \p mro (base-first), then \p outer's.
  MarkChain getClassMarks(llvm::ArrayRef<EntityRef> mro,
                          const MarkChain &outer) const;
  /// The item for a whole class whose inherited tests are not known.
  void addUnknownClassItem(EntityRef cls, const std::string &prefix,
                           const MarkChain &chain);
  void collectClass(EntityRef cls, StringRef name, const std::string &prefix,
                    const MarkChain &outer, unsigned depth);
  /// A unittest.TestCase subclass, as pytest's unittest plugin collects it.
  void collectUnittestClass(EntityRef cls, const std::string &prefix,
                            const MarkChain &outer, bool maybe);
  /// \p unittest: an item of a TestCase, which pytest does not parametrize.
  void collectFunction(EntityRef function, StringRef name,
                       const std::string &prefix, const MarkChain &outer,
                       bool unittest = false);
  /// A fixture definition and the names it requests.
  struct FixtureDef {
    EntityRef ref;
    const PytestEntitySummary *facts;
  };
  /// Fixtures by name, each name's definitions from the outermost scope to
  /// the innermost (pytest's `getfixturedefs` order).
  using FixtureMap = llvm::StringMap<std::vector<FixtureDef>>;
  /// Adds the fixtures of the namespace \p scope (a module, or a class along
  /// \p mro) to \p map and the autouse ones to \p autouse.
  void addScopeFixtures(llvm::ArrayRef<EntityRef> mro, FixtureMap &map,
                        std::vector<std::string> &autouse) const;
  /// What the fixtures the test \p function (its marks \p marks) uses
  /// directly or through other fixtures do to its ids.
  struct FixtureParamsInfo {
    /// Some fixture it uses is declared with `params=`.
    bool parametrized = false;
    /// The ids are known: those of \c applied, in pytest's order.
    bool exact = false;
    std::vector<const PytestEntitySummary *> applied;
  };
  FixtureParamsInfo getFixtureParams(EntityRef function,
                                     llvm::ArrayRef<const MarkSummary *> marks);
  /// pytest's argnames of a function: its recorded parameters less `self`
  /// for a method.
  llvm::ArrayRef<std::string> getArgnames(EntityRef function) const {
    const FileView &owner = repo.files[function.file];
    const EntitySummary &entity = owner.entity(function.id);
    llvm::ArrayRef<std::string> names = entity.parameters;
    if (entity.parent != kModuleScope &&
        owner.entity(entity.parent).kind == EntityKind::Class &&
        !llvm::is_contained(entity.decorators, "staticmethod") &&
        !names.empty())
      names = names.drop_front();
    return names;
  }
  bool isTestFunction(EntityRef ref) const {
    const EntitySummary &entity = repo.files[ref.file].entity(ref.id);
    return entity.kind == EntityKind::Function && !entity.isFixture;
  }
  /// Whether a class has members whose names import-time code decides
  /// (parameterized.expand or torch parametrize with non-literal cases,
  /// `setattr`).
  bool hasUnknownMembers(EntityRef cls) const;
  /// The item for a whole class or file that stands for tests whose names
  /// are not known.
  void addEnclosingItem(const std::string &nodeId, EntityRef entry,
                        StringRef reason,
                        llvm::ArrayRef<const MarkSummary *> marks);
  void setEntry(TestSummary &test, EntityRef entry, LocalId fallback) const {
    if (entry.file == file) {
      test.entry = entry.id;
      return;
    }
    const FileView &other = repo.files[entry.file];
    test.entry = fallback;
    test.entrySymbol = symbolOf(other.moduleName, other.entity(entry.id));
  }
  static void addTag(std::vector<std::string> &tags, StringRef name) {
    if (name != "parametrize" && !llvm::is_contained(tags, name))
      tags.push_back(name.str());
  }

  const Repository &repo;
  uint32_t file;
  const FileView &view;
  std::vector<TestSummary> tests;
  /// The local class the items being collected belong to (an entry for
  /// tests whose function lives in another file).
  LocalId localClass = kModuleScope;
  llvm::DenseMap<std::pair<uint32_t, LocalId>, std::vector<EntityRef>> mros;
  /// The MROs of the classes being collected, outermost first: their
  /// fixtures are visible to the tests inside.
  std::vector<std::vector<EntityRef>> classMros;
  /// The fixtures of the conftest.py files above the test file and of the
  /// test module, built on first use.
  std::optional<FixtureMap> moduleFixtures;
  std::vector<std::string> moduleAutouse;
};
} // namespace

std::vector<EntityRef> ItemCollector::getMro(EntityRef cls, bool &unknown,
                                             unsigned depth) {
  auto cached = mros.find({cls.file, cls.id});
  if (cached != mros.end() && depth == 0)
    return cached->second;
  std::vector<EntityRef> result = {cls};
  // A cycle cannot exist in Python; a misresolved name could make one.
  if (depth > 32) {
    unknown = true;
    return result;
  }
  std::vector<std::vector<EntityRef>> sequences;
  std::vector<EntityRef> bases;
  if (const PytestEntitySummary *facts = repo.files[cls.file].getFacts(cls.id))
    for (const std::string &base : facts->bases) {
      if (isInertBase(base))
        continue;
      std::optional<EntityRef> ref =
          base.empty() ? std::nullopt : repo.resolve(base);
      if (!ref ||
          repo.files[ref->file].entity(ref->id).kind != EntityKind::Class) {
        unknown = true;
        continue;
      }
      bases.push_back(*ref);
      sequences.push_back(getMro(*ref, unknown, depth + 1));
    }
  sequences.push_back(bases);
  // C3 linearization: repeatedly take the first head that is in no tail.
  for (;;) {
    llvm::erase_if(sequences,
                   [](const std::vector<EntityRef> &s) { return s.empty(); });
    if (sequences.empty())
      break;
    std::optional<EntityRef> next;
    for (const std::vector<EntityRef> &candidate : sequences) {
      EntityRef head = candidate.front();
      bool inTail = llvm::any_of(sequences, [&](const auto &s) {
        return std::find(s.begin() + 1, s.end(), head) != s.end();
      });
      if (!inTail) {
        next = head;
        break;
      }
    }
    if (!next) {
      // Python rejects an inconsistent hierarchy; take what is left in
      // order rather than guess further.
      unknown = true;
      for (const auto &s : sequences)
        for (EntityRef ref : s)
          if (!llvm::is_contained(result, ref))
            result.push_back(ref);
      break;
    }
    result.push_back(*next);
    for (auto &s : sequences)
      if (s.front() == *next)
        s.erase(s.begin());
  }
  if (depth == 0)
    mros[{cls.file, cls.id}] = result;
  return result;
}

std::vector<std::pair<std::string, std::optional<EntityRef>>>
ItemCollector::getNamespace(EntityRef scope) const {
  const FileView &owner = repo.files[scope.file];
  // Definitions, and at module level the names imports bind, by line.
  struct Entry {
    uint32_t line;
    std::string name;
    std::optional<EntityRef> value;
  };
  std::vector<Entry> entries;
  const PytestEntitySummary *scopeFacts =
      scope.id == kModuleScope ? nullptr : owner.getFacts(scope.id);
  for (LocalId id : owner.children[scope.id + 1]) {
    const EntitySummary &entity = owner.entity(id);
    // parameterized.expand binds generated functions in place of the
    // decorated one (which becomes None); torch's parametrize does so when
    // the class is instantiated.
    if (const PytestEntitySummary *facts = owner.getFacts(id);
        facts &&
        (facts->generator == 1 ||
         (facts->generator == 2 && scopeFacts && scopeFacts->instantiated))) {
      for (const std::string &generated : facts->generatedNames)
        entries.push_back(
            {entity.range.startLine, generated, EntityRef{scope.file, id}});
      entries.push_back({entity.range.startLine, entity.name, std::nullopt});
      continue;
    }
    entries.push_back(
        {entity.range.startLine, entity.name, EntityRef{scope.file, id}});
  }
  if (scope.id == kModuleScope)
    for (const auto &[name, bindings] : owner.bindings)
      for (const Binding &binding : bindings)
        if (binding.entity == kModuleScope)
          entries.push_back(
              {binding.line, name.str(), repo.resolve(binding.target)});
  llvm::stable_sort(
      entries, [](const Entry &a, const Entry &b) { return a.line < b.line; });
  std::vector<std::pair<std::string, std::optional<EntityRef>>> result;
  llvm::StringMap<size_t> position;
  for (Entry &entry : entries) {
    auto [it, inserted] = position.try_emplace(entry.name, result.size());
    if (inserted)
      result.emplace_back(entry.name, entry.value);
    else
      result[it->second].second = entry.value;
  }
  return result;
}

std::vector<TestSummary> ItemCollector::run() {
  MarkChain moduleChain;
  for (const MarkSummary &mark : view.summary->moduleMarks)
    moduleChain.marks.push_back(&mark);
  // A file whose tests are not all known statically: the file item (pytest
  // runs every test of a file given its path) stands for them. A file with
  // syntax errors may have lost tests tree-sitter could not recover.
  if (view.summary->parseError || view.summary->dynamicTests)
    addEnclosingItem(view.path.str(), {file, kModuleScope},
                     view.summary->parseError ? "parse-error" : "dynamic-tests",
                     moduleChain.marks);
  for (const auto &[name, value] : getNamespace({file, kModuleScope})) {
    if (!value)
      continue;
    localClass = kModuleScope;
    collectMember(*value, name, view.path.str(), moduleChain, 0);
  }
  return std::move(tests);
}

/// unittest's TestCase classes, which contribute no tests of their own.
static bool isUnittestCaseBase(StringRef name) {
  if (isKnownFrameworkTestCase(name))
    return true;
  static const char *const kCases[] = {
      "unittest.TestCase",
      "unittest.IsolatedAsyncioTestCase",
      "unittest.FunctionTestCase",
      "unittest.case.TestCase",
      "unittest.case.FunctionTestCase",
      "unittest.async_case.IsolatedAsyncioTestCase"};
  return llvm::is_contained(kCases, name);
}

ItemCollector::CaseKind ItemCollector::getCaseKind(EntityRef cls,
                                                   unsigned depth) const {
  const PytestEntitySummary *facts = repo.files[cls.file].getFacts(cls.id);
  if (!facts || depth > 32)
    return CaseKind::No;
  CaseKind result = CaseKind::No;
  for (const std::string &base : facts->bases) {
    if (isUnittestCaseBase(base))
      return CaseKind::Yes;
    if (base.empty() || isInertBase(base))
      continue;
    std::optional<EntityRef> ref = repo.resolve(base);
    if (!ref ||
        repo.files[ref->file].entity(ref->id).kind != EntityKind::Class) {
      // A class from outside the repository: frameworks' TestCase classes
      // (absltest, django, torch's common_utils) say so in their name.
      if (StringRef(base).ends_with("TestCase"))
        result = CaseKind::Maybe;
      continue;
    }
    CaseKind kind = getCaseKind(*ref, depth + 1);
    if (kind == CaseKind::Yes)
      return kind;
    if (kind == CaseKind::Maybe)
      result = kind;
  }
  return result;
}

void ItemCollector::collectMember(EntityRef value, StringRef name,
                                  const std::string &prefix,
                                  const MarkChain &outer, unsigned depth) {
  const EntitySummary &entity = repo.files[value.file].entity(value.id);
  if (entity.kind != EntityKind::Class) {
    if (isTestFunction(value) && repo.config.isTestFunctionName(name))
      collectFunction(value, name, prefix, outer);
    return;
  }
  // Deleted or replaced at import time (torch's device-type classes,
  // parameterized_class): the name pytest sees holds no tests.
  if (const PytestEntitySummary *facts =
          repo.files[value.file].getFacts(value.id);
      facts && facts->replaced)
    return;
  // pytest's unittest plugin takes any subclass of unittest.TestCase,
  // whatever its name, before the python plugin's `Test*` rule. A class
  // whose framework base is only named like a TestCase keeps the `Test*`
  // rule when it matches it.
  CaseKind kind = getCaseKind(value);
  bool isTestName = repo.config.isTestClassName(name);
  if (kind == CaseKind::No && !isTestName)
    return;
  if (kind == CaseKind::Maybe && isTestName)
    kind = CaseKind::No;
  LocalId saved = localClass;
  if (value.file == file)
    localClass = value.id;
  std::string classPrefix = prefix + "::" + name.str();
  if (kind == CaseKind::No)
    collectClass(value, name, classPrefix, outer, depth);
  else
    collectUnittestClass(value, classPrefix, outer, kind == CaseKind::Maybe);
  localClass = saved;
}

bool ItemCollector::isDisabled(llvm::ArrayRef<EntityRef> mro) const {
  for (EntityRef ref : mro)
    if (const PytestEntitySummary *facts =
            repo.files[ref.file].getFacts(ref.id))
      if (facts->testAttribute)
        return facts->testAttribute == 1;
  return false;
}

bool ItemCollector::hasUnknownMembers(EntityRef cls) const {
  const FileView &owner = repo.files[cls.file];
  const PytestEntitySummary *classFacts = owner.getFacts(cls.id);
  if (classFacts && classFacts->dynamicMembers)
    return true;
  for (LocalId member : owner.children[cls.id + 1])
    if (const PytestEntitySummary *facts = owner.getFacts(member))
      if ((facts->generator == 1 ||
           (facts->generator == 2 && classFacts && classFacts->instantiated)) &&
          !facts->generatedKnown)
        return true;
  return false;
}

void ItemCollector::addEnclosingItem(
    const std::string &nodeId, EntityRef entry, StringRef reason,
    llvm::ArrayRef<const MarkSummary *> marks) {
  TestSummary item;
  item.nodeId = nodeId;
  if (entry.id == kModuleScope && entry.file == file)
    item.entry = kModuleScope;
  else
    setEntry(item, entry, localClass);
  for (const MarkSummary *mark : marks)
    addTag(item.tags, mark->name);
  item.enclosing = true;
  item.reason = reason.str();
  tests.push_back(std::move(item));
}

ItemCollector::MarkChain
ItemCollector::getClassMarks(llvm::ArrayRef<EntityRef> mro,
                             const MarkChain &outer) const {
  // Class marks: pytest >= 7.3 takes them base-first (reverse MRO), 7.2
  // subclass-first; parametrize ids depend on that order only when two
  // classes of the MRO parametrize.
  MarkChain chain;
  unsigned parametrizing = 0;
  for (EntityRef ref : llvm::reverse(mro)) {
    const PytestEntitySummary *facts = repo.files[ref.file].getFacts(ref.id);
    if (!facts)
      continue;
    bool any = false;
    for (const MarkSummary &mark : facts->marks) {
      chain.marks.push_back(&mark);
      any |= mark.name == "parametrize";
    }
    parametrizing += any;
  }
  chain.ambiguousOrder = outer.ambiguousOrder || parametrizing > 1;
  llvm::append_range(chain.marks, outer.marks);
  return chain;
}

void ItemCollector::addUnknownClassItem(EntityRef cls,
                                        const std::string &prefix,
                                        const MarkChain &chain) {
  // A base we cannot see may hold more tests: an item for the whole class
  // (pytest runs all of a class given its node id).
  TestSummary item;
  item.nodeId = prefix;
  setEntry(item, cls, localClass);
  for (const MarkSummary *mark : chain.marks)
    addTag(item.tags, mark->name);
  item.inheritedUnknown = true;
  item.enclosing = true;
  item.reason = "inherited-unknown";
  tests.push_back(std::move(item));
}

void ItemCollector::collectUnittestClass(EntityRef cls,
                                         const std::string &prefix,
                                         const MarkChain &outer, bool maybe) {
  // _pytest/unittest.py's UnitTestCase.collect: no `__init__` rule, no
  // nested classes, and the names unittest's TestLoader gives.
  bool unknown = maybe;
  std::vector<EntityRef> mro = getMro(cls, unknown);
  if (isDisabled(mro))
    return;
  MarkChain chain = getClassMarks(mro, outer);
  if (unknown)
    addUnknownClassItem(cls, prefix, chain);
  else if (llvm::any_of(mro,
                        [&](EntityRef ref) { return hasUnknownMembers(ref); }))
    addEnclosingItem(prefix, cls, "dynamic-tests", chain.marks);
  // TestLoader.getTestCaseNames: every callable attribute (a function or a
  // class) whose name starts with `test`, along the MRO, sorted by name.
  std::map<std::string, EntityRef> members;
  for (EntityRef ref : mro)
    for (auto &[memberName, value] : getNamespace(ref))
      if (value)
        members.try_emplace(memberName, *value);
  bool found = false;
  auto collect = [&](StringRef memberName, EntityRef member) {
    found = true;
    const EntitySummary &entity = repo.files[member.file].entity(member.id);
    if (entity.kind == EntityKind::Function) {
      collectFunction(member, memberName, prefix, chain, /*unittest=*/true);
      return;
    }
    TestSummary item;
    item.nodeId = prefix + "::" + memberName.str();
    setEntry(item, member, localClass);
    if (const PytestEntitySummary *facts =
            repo.files[member.file].getFacts(member.id))
      for (const MarkSummary &mark : facts->marks)
        addTag(item.tags, mark.name);
    for (const MarkSummary *mark : chain.marks)
      addTag(item.tags, mark->name);
    tests.push_back(std::move(item));
  };
  for (const auto &[memberName, member] : members)
    if (StringRef(memberName).starts_with("test"))
      collect(memberName, member);
  // Without test methods, a `runTest` method is the test.
  if (!found) {
    auto runTest = members.find("runTest");
    if (runTest != members.end() &&
        repo.files[runTest->second.file].entity(runTest->second.id).kind ==
            EntityKind::Function)
      collect("runTest", runTest->second);
  }
}

void ItemCollector::collectClass(EntityRef cls, StringRef name,
                                 const std::string &prefix,
                                 const MarkChain &outer, unsigned depth) {
  if (depth > 32)
    return;
  bool unknown = false;
  std::vector<EntityRef> mro = getMro(cls, unknown);
  // `__test__` is looked up along the MRO.
  if (isDisabled(mro))
    return;
  // pytest refuses classes with a constructor (with a warning), inherited
  // ones included.
  for (EntityRef ref : mro) {
    // Dataclass-like decorators generate an `__init__`.
    if (ref.id != kModuleScope)
      for (StringRef decorator : repo.files[ref.file].entity(ref.id).decorators)
        if (isInitGeneratingDecorator(decorator))
          return;
    for (LocalId member : repo.files[ref.file].children[ref.id + 1]) {
      const EntitySummary &entity = repo.files[ref.file].entity(member);
      if (entity.kind == EntityKind::Function &&
          (entity.name == "__init__" || entity.name == "__new__"))
        return;
    }
  }

  MarkChain chain = getClassMarks(mro, outer);
  if (unknown)
    addUnknownClassItem(cls, prefix, chain);
  else if (llvm::any_of(mro,
                        [&](EntityRef ref) { return hasUnknownMembers(ref); }))
    addEnclosingItem(prefix, cls, "dynamic-tests", chain.marks);
  classMros.push_back(mro);
  auto popClass = llvm::make_scope_exit([&] { classMros.pop_back(); });

  // Members by class along the MRO, a name taken from the first class that
  // has it; base classes' members come first.
  llvm::StringSet<> seen;
  std::vector<std::vector<std::pair<std::string, EntityRef>>> groups;
  for (EntityRef ref : mro) {
    auto &group = groups.emplace_back();
    for (auto &[memberName, value] : getNamespace(ref))
      if (value && seen.insert(memberName).second)
        group.emplace_back(memberName, *value);
  }
  for (const auto &group : llvm::reverse(groups))
    for (const auto &[memberName, member] : group)
      collectMember(member, memberName, prefix, chain, depth + 1);
}

void ItemCollector::collectFunction(EntityRef function, StringRef name,
                                    const std::string &prefix,
                                    const MarkChain &outer, bool unittest) {
  const FileView &owner = repo.files[function.file];
  const EntitySummary &entity = owner.entity(function.id);
  TestSummary base;
  setEntry(base, function, localClass);
  std::vector<const MarkSummary *> marks;
  if (const PytestEntitySummary *facts = owner.getFacts(function.id))
    for (const MarkSummary &mark : facts->marks)
      marks.push_back(&mark);
  size_t ownMarks = marks.size();
  llvm::append_range(marks, outer.marks);

  // Each parametrize multiplies the cases; the first one iterated (the
  // decorator nearest the def) varies slowest and comes first in the id.
  struct Case {
    std::vector<std::string> ids;
    std::vector<std::string> tags;
  };
  // Repeats every case once per id of one parametrization (a mark's or a
  // fixture's), appending the id and that case's tags: the cartesian
  // product pytest builds.
  auto multiply = [](std::vector<Case> &cases, llvm::ArrayRef<std::string> ids,
                     llvm::ArrayRef<std::vector<std::string>> caseTags) {
    std::vector<Case> product;
    for (const Case &prefixCase : cases)
      for (auto [caseIndex, id] : llvm::enumerate(ids)) {
        Case &next = product.emplace_back(prefixCase);
        next.ids.push_back(id);
        if (caseIndex < caseTags.size())
          for (const std::string &tag : caseTags[caseIndex])
            addTag(next.tags, tag);
      }
    cases = std::move(product);
  };
  std::vector<Case> cases(1);
  bool hasParametrize = false, undetermined = false, seenFastci = false;
  std::vector<std::string> ownTags, outerTags;
  for (auto [index, mark] : llvm::enumerate(marks)) {
    addTag(index < ownMarks ? ownTags : outerTags, mark->name);
    if (mark->name == "parametrize") {
      // pytest does not parametrize the methods of a TestCase.
      if (unittest)
        continue;
      hasParametrize = true;
      // A class-level mark's position depends on the pytest version when
      // several classes of the MRO parametrize.
      if (!mark->idsKnown || (index >= ownMarks && outer.ambiguousOrder)) {
        undetermined = true;
        continue;
      }
      multiply(cases, mark->ids, mark->caseTags);
      continue;
    }
    if (mark->name == "fastci" && !seenFastci) {
      seenFastci = true;
      base.scope = mark->scope;
      base.workload = mark->workload;
      base.floors = mark->floors;
    }
  }
  // A fixture declared with `params=` repeats the test once per param.
  // pytest applies fixture params before parametrize marks, so their ids
  // come first and vary slowest; where they are not certain, the one item
  // stands for all cases.
  if (!unittest) {
    FixtureParamsInfo fixtures = getFixtureParams(function, marks);
    if (fixtures.parametrized) {
      hasParametrize = true;
      undetermined |= !fixtures.exact;
    }
    std::vector<Case> fixtureCases(1);
    for (const PytestEntitySummary *fixture : fixtures.applied)
      multiply(fixtureCases, fixture->fixtureIds, fixture->fixtureCaseTags);
    if (!fixtures.applied.empty()) {
      std::vector<Case> combined;
      for (const Case &fixtureCase : fixtureCases)
        for (const Case &markCase : cases) {
          Case &next = combined.emplace_back(fixtureCase);
          llvm::append_range(next.ids, markCase.ids);
          for (const std::string &tag : markCase.tags)
            addTag(next.tags, tag);
        }
      cases = std::move(combined);
    }
  }
  std::string nodeId = prefix + "::" + name.str();
  auto makeTags = [&](llvm::ArrayRef<std::string> caseTags) {
    // pytest's order: the function's marks, the case's, then the class's
    // and the module's.
    std::vector<std::string> tags = ownTags;
    for (const std::string &tag : caseTags)
      addTag(tags, tag);
    for (const std::string &tag : outerTags)
      addTag(tags, tag);
    return tags;
  };
  if (!hasParametrize || undetermined) {
    base.nodeId = std::move(nodeId);
    base.parametrized = hasParametrize;
    if (hasParametrize) {
      // `path::test_x` runs every case: pytest accepts it, but it is not
      // one of the ids `--collect-only` prints.
      base.enclosing = true;
      base.reason = "parametrized";
    }
    base.tags = makeTags({});
    tests.push_back(std::move(base));
    return;
  }
  for (const Case &parametrized : cases) {
    TestSummary test = base;
    test.nodeId = nodeId + "[" + llvm::join(parametrized.ids, "-") + "]";
    test.tags = makeTags(parametrized.tags);
    tests.push_back(std::move(test));
  }
}

void ItemCollector::addScopeFixtures(llvm::ArrayRef<EntityRef> mro,
                                     FixtureMap &map,
                                     std::vector<std::string> &autouse) const {
  // pytest's parsefactories reads the holder's attributes in dir() order
  // (sorted by name): along a class's MRO, the first class that binds a
  // name decides.
  llvm::StringSet<> seen;
  std::vector<std::pair<std::string, EntityRef>> members;
  for (EntityRef scope : mro)
    for (const auto &[name, value] : getNamespace(scope))
      if (seen.insert(name).second && value)
        members.emplace_back(name, *value);
  llvm::stable_sort(
      members, [](const auto &a, const auto &b) { return a.first < b.first; });
  for (const auto &[name, value] : members) {
    const EntitySummary &entity = repo.files[value.file].entity(value.id);
    const PytestEntitySummary *facts =
        repo.files[value.file].getFacts(value.id);
    if (!entity.isFixture || !facts || facts->fixtureName.empty())
      continue;
    map[facts->fixtureName].push_back({value, facts});
    if (facts->fixtureAutouse)
      autouse.push_back(facts->fixtureName);
  }
}

ItemCollector::FixtureParamsInfo
ItemCollector::getFixtureParams(EntityRef function,
                                llvm::ArrayRef<const MarkSummary *> marks) {
  if (!moduleFixtures) {
    // conftest.py files from the root down to the test file's directory,
    // then the module itself.
    moduleFixtures.emplace();
    StringRef directory = view.path.rsplit('/').first;
    if (!view.path.contains('/'))
      directory = "";
    std::vector<std::pair<size_t, uint32_t>> conftests;
    for (auto [index, other] : llvm::enumerate(repo.files)) {
      StringRef otherPath = other.path;
      if (otherPath != "conftest.py" && !otherPath.ends_with("/conftest.py"))
        continue;
      StringRef otherDirectory =
          otherPath.size() > 11 ? otherPath.drop_back(12) : StringRef();
      if (otherDirectory.empty() || directory == otherDirectory ||
          directory.starts_with((otherDirectory + "/").str()))
        conftests.emplace_back(otherDirectory.size(), index);
    }
    llvm::sort(conftests);
    for (auto [length, index] : conftests)
      addScopeFixtures({EntityRef{index, kModuleScope}}, *moduleFixtures,
                       moduleAutouse);
    addScopeFixtures({EntityRef{file, kModuleScope}}, *moduleFixtures,
                     moduleAutouse);
  }
  FixtureMap classFixtures;
  std::vector<std::string> requested = moduleAutouse;
  for (const std::vector<EntityRef> &mro : classMros)
    addScopeFixtures(mro, classFixtures, requested);
  auto definitions = [&](StringRef name) {
    std::vector<FixtureDef> result;
    auto it = moduleFixtures->find(name);
    if (it != moduleFixtures->end())
      result = it->second;
    auto local = classFixtures.find(name);
    if (local != classFixtures.end())
      llvm::append_range(result, local->second);
    return result;
  };

  // getfixtureinfo's initial names: autouse fixtures, usefixtures, then the
  // function's arguments. The names a parametrize mark supplies directly
  // (not `indirect=`) are not looked up as fixtures.
  FixtureParamsInfo info;
  bool certain = true;
  llvm::StringSet<> markArgnames, ignored;
  for (const MarkSummary *mark : marks) {
    if (mark->name == "usefixtures") {
      llvm::append_range(requested, mark->names);
    } else if (mark->name == "parametrize") {
      for (const std::string &name : mark->names) {
        markArgnames.insert(name);
        if (mark->indirect == 0)
          ignored.insert(name);
      }
      // An `indirect=` list: pytest 7 then looks up every argname, pytest
      // 8 only the indirect ones; looking up all of them is the larger set.
      certain &= mark->indirect != 2;
    }
  }
  llvm::append_range(requested, getArgnames(function));
  std::vector<std::string> initial;
  llvm::StringSet<> seen;
  for (const std::string &name : requested)
    if (seen.insert(name).second)
      initial.push_back(name);

  // The closure as pytest 7 computes it (breadth first, over the innermost
  // definition's arguments) ...
  std::vector<std::string> breadthFirst = initial;
  for (size_t i = 0; i < breadthFirst.size(); ++i) {
    if (ignored.contains(breadthFirst[i]))
      continue;
    std::vector<FixtureDef> defs = definitions(breadthFirst[i]);
    if (!defs.empty())
      for (const std::string &argument : getArgnames(defs.back().ref))
        if (seen.insert(argument).second)
          breadthFirst.push_back(argument);
  }
  // ... and as pytest 8's traverse_fixture_closure does (depth first,
  // following an override chain into the overridden definitions).
  std::vector<std::string> depthFirst;
  llvm::StringMap<int> chainIndex;
  std::function<void(StringRef, unsigned)> visit = [&](StringRef name,
                                                       unsigned depth) {
    if (depth > 64) {
      certain = false;
      return;
    }
    auto found = chainIndex.find(name);
    if (found != chainIndex.end() && found->second == -1)
      return;
    if (found == chainIndex.end()) {
      depthFirst.push_back(name.str());
      chainIndex[name] = -1;
    }
    if (ignored.contains(name))
      return;
    std::vector<FixtureDef> defs = definitions(name);
    int index = chainIndex[name];
    if (defs.empty() || static_cast<size_t>(-index) > defs.size())
      return;
    const FixtureDef &def = defs[defs.size() + index];
    chainIndex[name] = index - 1;
    for (const std::string &argument : getArgnames(def.ref))
      visit(argument, depth + 1);
    chainIndex[name] = index;
  };
  for (const std::string &name : initial)
    visit(name, 0);

  // Both sort the closure by scope, widest first, and then parametrize
  // each name (fixtures.py's pytest_generate_tests): not one the test
  // parametrizes itself; the innermost definition with params, passing
  // to an outer one only while each requests its own name.
  auto applied = [&](std::vector<std::string> closure) {
    auto scopeOf = [&](StringRef name) -> unsigned {
      std::vector<FixtureDef> defs = definitions(name);
      return defs.empty() ? 0 : defs.back().facts->fixtureScope;
    };
    llvm::stable_sort(closure, [&](const std::string &a, const std::string &b) {
      return scopeOf(a) > scopeOf(b);
    });
    std::vector<const PytestEntitySummary *> result;
    for (const std::string &name : closure) {
      if (markArgnames.contains(name))
        continue;
      std::vector<FixtureDef> defs = definitions(name);
      for (const FixtureDef &def : llvm::reverse(defs)) {
        if (def.facts->fixtureParams) {
          result.push_back(def.facts);
          break;
        }
        if (!llvm::is_contained(getArgnames(def.ref), name))
          break;
      }
    }
    return result;
  };
  std::vector<const PytestEntitySummary *> older = applied(breadthFirst);
  info.applied = applied(depthFirst);
  info.parametrized = !older.empty() || !info.applied.empty();
  // Exact ids only where both agree, every id is static, and the fixture
  // is function-scoped: wider scopes make pytest reorder the items.
  info.exact = certain && older == info.applied &&
               llvm::all_of(info.applied, [](const PytestEntitySummary *f) {
                 return f->fixtureIdsKnown && f->fixtureScope == 0;
               });
  if (!info.exact)
    info.applied.clear();
  return info;
}

void fastci::python::collectPytestItems(
    StringRef path, StringRef moduleName, StringRef source,
    FileSummary &summary, llvm::ArrayRef<std::vector<PyValue>> decorators,
    llvm::ArrayRef<PyValue> moduleMarks, const ImportTimeEffects &effects,
    const PytestConfig &config) {
  FactsBuilder(moduleName, source, summary, decorators, effects, config)
      .run(moduleMarks);
  if (!config.isTestFile(path))
    return;
  Repository repo(config);
  repo.addFile(path, moduleName, &summary);
  summary.tests = ItemCollector(repo, 0).run();
}

/// True when the items of a test file may depend on other files: a class
/// with a base that is not one of the file's classes, or a name imported
/// at module level with `from` (a `Test*` class, a `test*` function, or a
/// unittest.TestCase subclass of any name). Other files keep their per-file
/// items, which keeps the link step cheap on large repositories.
static bool dependsOnOtherFiles(StringRef moduleName,
                                const FileSummary &summary) {
  llvm::StringSet<> local;
  for (const EntitySummary &entity : summary.entities)
    if (entity.kind == EntityKind::Class)
      local.insert(symbolOf(moduleName, entity));
  for (const PytestEntitySummary &facts : summary.pytestEntities)
    for (const std::string &base : facts.bases)
      if (!base.empty() && !isInertBase(base) && !local.contains(base))
        return true;
  for (const EdgeSummary &edge : summary.edges) {
    if (edge.kind != EdgeKind::Import || edge.from != kModuleScope ||
        !edge.modulePrefix || edge.modulePrefix >= edge.target.size())
      continue;
    // Only imports of names from the standard library's unittest cannot
    // bind a repository class.
    StringRef module = StringRef(edge.target).take_front(edge.modulePrefix);
    if (module != "unittest" && !module.starts_with("unittest.") &&
        module != "pytest")
      return true;
  }
  return false;
}

/// True when a conftest.py may give the tests below it fixtures: it
/// defines one, or imports names at module level.
static bool providesFixtures(const FileSummary &summary) {
  for (const EntitySummary &entity : summary.entities)
    if (entity.isFixture && entity.parent == kModuleScope)
      return true;
  return llvm::any_of(summary.edges, [](const EdgeSummary &edge) {
    return edge.kind == EdgeKind::Import && edge.from == kModuleScope;
  });
}

std::vector<size_t> fastci::python::linkPytestItems(
    llvm::ArrayRef<SourceFile> files,
    llvm::function_ref<FileSummary *(size_t)> summaryOf,
    const PytestConfig &config, unsigned jobs) {
  // Directories whose conftest.py provides fixtures ("" for the root).
  llvm::StringSet<> conftestDirectories;
  for (auto [index, file] : llvm::enumerate(files)) {
    StringRef path = file.path;
    FileSummary *summary = summaryOf(index);
    if (summary && (path == "conftest.py" || path.ends_with("/conftest.py")) &&
        providesFixtures(*summary))
      conftestDirectories.insert(
          path.drop_back(StringRef("conftest.py").size()).rtrim('/'));
  }
  auto underConftest = [&](StringRef path) {
    if (conftestDirectories.empty())
      return false;
    if (conftestDirectories.contains(""))
      return true;
    for (size_t slash = path.rfind('/'); slash != StringRef::npos;
         slash = path.take_front(slash).rfind('/'))
      if (conftestDirectories.contains(path.take_front(slash)))
        return true;
    return false;
  };
  std::vector<size_t> dependent;
  for (auto [index, file] : llvm::enumerate(files)) {
    StringRef path = file.path;
    FileSummary *summary = summaryOf(index);
    if (summary && config.isTestFile(path) &&
        (dependsOnOtherFiles(file.moduleName, *summary) || underConftest(path)))
      dependent.push_back(index);
  }
  if (dependent.empty())
    return dependent;
  Repository repo(config);
  llvm::DenseMap<size_t, uint32_t> positions;
  for (auto [index, file] : llvm::enumerate(files))
    if (FileSummary *summary = summaryOf(index)) {
      positions[index] = repo.files.size();
      repo.addFile(file.path, file.moduleName, summary);
    }
  // Each collector reads the repository and writes its own file's items.
  parallelFor(
      0, dependent.size(),
      [&](size_t k) {
        uint32_t position = positions.lookup(dependent[k]);
        repo.files[position].summary->tests =
            ItemCollector(repo, position).run();
      },
      jobs);
  return dependent;
}
