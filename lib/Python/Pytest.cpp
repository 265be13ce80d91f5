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
// its imports, `__test__`; PytestFacts.cpp), and collection runs on those
// facts, first with the file alone, then with the whole repository
// (linkPytestItems; PytestCollect.cpp). This file holds the values and ids
// both use, and the reading of class headers.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/Pytest.h"
#include "PytestInternal.h"
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
using namespace fastci::python::detail;

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
std::optional<std::vector<std::string>>
detail::getArgnames(const PyValue &value) {
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
StringRef detail::getMarkerName(const PyValue &decorator) {
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
size_t detail::skipString(StringRef text, size_t i) {
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
uint8_t detail::findTestAttribute(StringRef body) {
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
