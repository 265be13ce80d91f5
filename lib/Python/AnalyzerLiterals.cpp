//===- AnalyzerLiterals.cpp - Literal values of decorator arguments -------===//
//
// Evaluates the syntax tree of an expression to a PyValue the way CPython
// would read the literal: numbers in any base, strings with Python's escape
// rules (`\N{...}` through LLVM's Unicode name table), containers, and
// names and calls kept as such, so that parametrize ids and fastci marks
// can be computed statically. Also reads the parameters pytest injects.
//
//===----------------------------------------------------------------------===//
#include "AnalyzerInternal.h"

using namespace fastci;
using namespace fastci::python;
using namespace fastci::python::detail;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Literal evaluation (decorator arguments, pytestmark)
//===----------------------------------------------------------------------===//

/// Appends code point \p cp to \p out as UTF-8 (surrogates included, as
/// CPython's str can hold them).
static void appendCodePoint(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | cp >> 6));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | cp >> 12));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | cp >> 18));
    out.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// The code point a `\N{name}` escape denotes, as CPython's unicodedata
/// finds it: names and aliases in any case, but the algorithmic CJK and
/// Hangul names in upper case only. Nothing for what LLVM's table does not
/// know (the abbreviation aliases such as `BOM`), which then stays unknown.
static std::optional<uint32_t> lookupUnicodeName(StringRef name) {
  std::string upper = name.upper();
  if ((StringRef(upper).starts_with("CJK UNIFIED IDEOGRAPH-") ||
       StringRef(upper).starts_with("HANGUL SYLLABLE ")) &&
      upper != name)
    return std::nullopt;
  if (std::optional<char32_t> cp =
          llvm::sys::unicode::nameToCodepointStrict(upper))
    return static_cast<uint32_t>(*cp);
  return std::nullopt;
}

/// Decodes the body of one string literal with Python's escape rules.
/// Returns false for escapes that cannot be decoded statically (a `\N{...}`
/// name LLVM's Unicode table lacks).
static bool decodeEscapes(StringRef body, bool isBytes, bool isFString,
                          std::string &out) {
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (isFString && (c == '{' || c == '}') && i + 1 < body.size() &&
        body[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '\\' || i + 1 == body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    auto hex = [&](unsigned digits) -> std::optional<uint32_t> {
      uint32_t value = 0;
      for (unsigned k = 1; k <= digits; ++k) {
        if (i + k >= body.size() || !llvm::isHexDigit(body[i + k]))
          return std::nullopt;
        value = value * 16 + llvm::hexDigitValue(body[i + k]);
      }
      i += digits;
      return value;
    };
    switch (e) {
    case '\n':
      break;
    case '\\':
    case '\'':
    case '"':
      out.push_back(e);
      break;
    case 'a':
      out.push_back('\a');
      break;
    case 'b':
      out.push_back('\b');
      break;
    case 'f':
      out.push_back('\f');
      break;
    case 'n':
      out.push_back('\n');
      break;
    case 'r':
      out.push_back('\r');
      break;
    case 't':
      out.push_back('\t');
      break;
    case 'v':
      out.push_back('\v');
      break;
    case 'x': {
      std::optional<uint32_t> value = hex(2);
      if (!value)
        return false;
      if (isBytes)
        out.push_back(static_cast<char>(*value));
      else
        appendCodePoint(out, *value);
      break;
    }
    case 'u':
    case 'U': {
      if (isBytes) {
        out.push_back('\\');
        out.push_back(e);
        break;
      }
      std::optional<uint32_t> value = hex(e == 'u' ? 4 : 8);
      if (!value || *value > 0x10FFFF)
        return false;
      appendCodePoint(out, *value);
      break;
    }
    case 'N': {
      if (isBytes) {
        out.push_back('\\');
        out.push_back(e);
        break;
      }
      if (i + 1 >= body.size() || body[i + 1] != '{')
        return false;
      size_t close = body.find('}', i + 2);
      if (close == StringRef::npos)
        return false;
      std::optional<uint32_t> value =
          lookupUnicodeName(body.slice(i + 2, close));
      if (!value)
        return false;
      appendCodePoint(out, *value);
      i = close;
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        uint32_t value = e - '0';
        for (unsigned k = 0; k < 2 && i + 1 < body.size() &&
                             body[i + 1] >= '0' && body[i + 1] <= '7';
             ++k)
          value = value * 8 + (body[++i] - '0');
        if (isBytes)
          out.push_back(static_cast<char>(value & 0xFF));
        else
          appendCodePoint(out, value);
        break;
      }
      // Unknown escapes are kept verbatim.
      out.push_back('\\');
      out.push_back(e);
      break;
    }
  }
  return true;
}

std::vector<std::string> FileAnalyzer::getFixtureRequests(TSNode def) const {
  std::vector<std::string> names;
  TSNode parameters = field(def, grammar.parameters);
  if (ts_node_is_null(parameters))
    return names;
  forEachChild(parameters, [&](TSNode child, TSFieldId) {
    StringRef type = ts_node_type(child);
    if (type == "positional_separator") {
      // Positional-only parameters cannot be requested by keyword.
      names.clear();
    } else if (type == "identifier") {
      names.push_back(text(child).str());
    } else if (type == "typed_parameter") {
      // `x: int`; a typed `*args` holds a splat pattern instead.
      TSNode first = ts_node_named_child(child, 0);
      if (grammar.kindOf(first) == Kind::Identifier)
        names.push_back(text(first).str());
    }
    // Parameters with defaults, `*args`, `**kwargs` and `*` are not
    // requests.
  });
  return names;
}

std::optional<PyValue> FileAnalyzer::evaluateString(TSNode node) const {
  bool hasInterpolation = false;
  forEachChild(node, [&](TSNode child, TSFieldId) {
    hasInterpolation |= grammar.kindOf(child) == Kind::Interpolation;
  });
  if (hasInterpolation)
    return std::nullopt;
  StringRef literal = text(node);
  size_t quote = literal.find_first_of("'\"");
  if (quote == StringRef::npos)
    return std::nullopt;
  std::string prefix = literal.take_front(quote).lower();
  StringRef rest = literal.drop_front(quote);
  size_t quoteLength =
      rest.starts_with("'''") || rest.starts_with("\"\"\"") ? 3 : 1;
  if (rest.size() < 2 * quoteLength)
    return std::nullopt;
  StringRef body = rest.drop_front(quoteLength).drop_back(quoteLength);
  PyValue value;
  bool isBytes = StringRef(prefix).contains('b');
  value.kind = isBytes ? PyValue::Kind::Bytes : PyValue::Kind::Str;
  if (StringRef(prefix).contains('r')) {
    value.text = body.str();
    return value;
  }
  if (!decodeEscapes(body, isBytes, StringRef(prefix).contains('f'),
                     value.text))
    return std::nullopt;
  return value;
}

std::optional<PyValue> FileAnalyzer::evaluate(TSNode node,
                                              unsigned depth) const {
  if (ts_node_is_null(node) || depth > 32)
    return std::nullopt;
  PyValue value;
  switch (grammar.kindOf(node)) {
  case Kind::True:
  case Kind::False:
    value.kind = PyValue::Kind::Bool;
    value.boolValue = grammar.kindOf(node) == Kind::True;
    return value;
  case Kind::None:
    value.kind = PyValue::Kind::None;
    return value;
  case Kind::Integer: {
    std::string digits = text(node).str();
    llvm::erase(digits, '_');
    StringRef ref = digits;
    if (ref.ends_with("j") || ref.ends_with("J"))
      return std::nullopt;
    unsigned radix = 10;
    if (ref.starts_with_insensitive("0x"))
      radix = 16;
    else if (ref.starts_with_insensitive("0o"))
      radix = 8;
    else if (ref.starts_with_insensitive("0b"))
      radix = 2;
    if (radix != 10)
      ref = ref.drop_front(2);
    unsigned long long parsed;
    if (llvm::getAsUnsignedInteger(ref, radix, parsed) ||
        parsed > static_cast<unsigned long long>(INT64_MAX))
      return std::nullopt;
    value.kind = PyValue::Kind::Int;
    value.intValue = static_cast<int64_t>(parsed);
    return value;
  }
  case Kind::Float: {
    std::string digits = text(node).str();
    llvm::erase(digits, '_');
    if (StringRef(digits).ends_with_insensitive("j"))
      return std::nullopt;
    value.kind = PyValue::Kind::Float;
    value.floatValue = strtod(digits.c_str(), nullptr);
    return value;
  }
  case Kind::String:
    return evaluateString(node);
  case Kind::ConcatenatedString: {
    std::optional<PyValue> joined;
    bool ok = true;
    forEachChild(node, [&](TSNode child, TSFieldId) {
      if (!ok || grammar.kindOf(child) != Kind::String)
        return;
      std::optional<PyValue> piece = evaluateString(child);
      if (!piece || (joined && joined->kind != piece->kind)) {
        ok = false;
        return;
      }
      if (!joined)
        joined = std::move(piece);
      else
        joined->text += piece->text;
    });
    return ok ? joined : std::nullopt;
  }
  case Kind::UnaryOperator: {
    std::optional<PyValue> operand =
        evaluate(field(node, grammar.argument), depth + 1);
    StringRef op = text(field(node, grammar.operatorField));
    if (!operand || (op != "-" && op != "+"))
      return std::nullopt;
    if (op == "+")
      return operand;
    if (operand->kind == PyValue::Kind::Int)
      operand->intValue = -operand->intValue;
    else if (operand->kind == PyValue::Kind::Float)
      operand->floatValue = -operand->floatValue;
    else
      return std::nullopt;
    return operand;
  }
  case Kind::ParenthesizedExpression:
    return evaluate(ts_node_named_child(node, 0), depth + 1);
  case Kind::Tuple:
  case Kind::List:
  case Kind::Set:
  case Kind::Dictionary: {
    Kind kind = grammar.kindOf(node);
    value.kind = kind == Kind::Tuple  ? PyValue::Kind::Tuple
                 : kind == Kind::List ? PyValue::Kind::List
                 : kind == Kind::Set  ? PyValue::Kind::Set
                                      : PyValue::Kind::Dict;
    bool ok = true;
    forEachChild(node, [&](TSNode child, TSFieldId) {
      if (!ok || !ts_node_is_named(child) ||
          grammar.kindOf(child) == Kind::Comment)
        return;
      if (value.kind == PyValue::Kind::Dict) {
        if (grammar.kindOf(child) != Kind::Pair) {
          ok = false;
          return;
        }
        std::optional<PyValue> key =
            evaluate(field(child, grammar.key), depth + 1);
        std::optional<PyValue> item =
            evaluate(field(child, grammar.value), depth + 1);
        if (!key || !item) {
          ok = false;
          return;
        }
        value.elements.push_back(std::move(*key));
        value.elements.push_back(std::move(*item));
        return;
      }
      std::optional<PyValue> element = evaluate(child, depth + 1);
      if (!element) {
        // A non-literal element keeps its place as Unknown: parametrize can
        // still give it an `argname<index>` id.
        if (kind == Kind::Tuple || kind == Kind::List) {
          value.elements.emplace_back();
          return;
        }
        ok = false;
        return;
      }
      value.elements.push_back(std::move(*element));
    });
    if (!ok)
      return std::nullopt;
    return value;
  }
  case Kind::Identifier:
  case Kind::Attribute: {
    std::string dotted = getDottedName(node);
    if (dotted.empty())
      return std::nullopt;
    value.kind = PyValue::Kind::Name;
    value.text = std::move(dotted);
    return value;
  }
  case Kind::Call: {
    value.kind = PyValue::Kind::Call;
    value.text = getDottedName(field(node, grammar.function));
    TSNode arguments = field(node, grammar.arguments);
    if (grammar.kindOf(arguments) != Kind::ArgumentList)
      return value.text.empty() ? std::nullopt : std::optional(value);
    bool ok = true;
    forEachChild(arguments, [&](TSNode child, TSFieldId) {
      if (!ok || !ts_node_is_named(child) ||
          grammar.kindOf(child) == Kind::Comment)
        return;
      if (grammar.kindOf(child) == Kind::KeywordArgument) {
        std::optional<PyValue> argument =
            evaluate(field(child, grammar.value), depth + 1);
        value.keywords.emplace_back(text(field(child, grammar.name)).str(),
                                    argument ? std::move(*argument)
                                             : PyValue());
        return;
      }
      std::optional<PyValue> argument = evaluate(child, depth + 1);
      value.elements.push_back(argument ? std::move(*argument) : PyValue());
    });
    return value;
  }
  default:
    return std::nullopt;
  }
}
