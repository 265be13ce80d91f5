//===- Attributes.cpp - Open, typed attributes on IR nodes ----------------===//
//
// Construction, access and .fir printing of attribute values. Floats print
// with enough digits to parse back to the same double, and strings escape
// every byte that is not printable ASCII, so that printing is lossless.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Attributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace fastci;

Attribute Attribute::getBool(bool value) {
  Attribute attr;
  attr.storage = value;
  return attr;
}

Attribute Attribute::getInt(int64_t value) {
  Attribute attr;
  attr.storage = value;
  return attr;
}

Attribute Attribute::getFloat(double value) {
  Attribute attr;
  attr.storage = value;
  return attr;
}

Attribute Attribute::getString(llvm::StringRef value) {
  Attribute attr;
  attr.storage = value.str();
  return attr;
}

Attribute Attribute::getSymbol(llvm::StringRef name) {
  Attribute attr;
  attr.storage = SymbolRefValue{name.str()};
  return attr;
}

Attribute Attribute::getList(std::vector<Attribute> elements) {
  Attribute attr;
  attr.storage =
      std::make_shared<const std::vector<Attribute>>(std::move(elements));
  return attr;
}

Attribute Attribute::getStringList(llvm::ArrayRef<std::string> elements) {
  std::vector<Attribute> list;
  list.reserve(elements.size());
  for (const std::string &element : elements)
    list.push_back(getString(element));
  return getList(std::move(list));
}

Attribute Attribute::takeStringList(std::vector<std::string> elements) {
  std::vector<Attribute> list(elements.size());
  for (auto [attr, element] : llvm::zip(list, elements))
    attr.storage = std::move(element);
  return getList(std::move(list));
}

Attribute Attribute::getDict(AttrDict dict) {
  Attribute attr;
  attr.storage = std::make_shared<const AttrDict>(std::move(dict));
  return attr;
}

bool Attribute::getBool() const { return std::get<bool>(storage); }
int64_t Attribute::getInt() const { return std::get<int64_t>(storage); }

double Attribute::getNumber() const {
  if (isInt())
    return static_cast<double>(getInt());
  return std::get<double>(storage);
}

llvm::StringRef Attribute::getString() const {
  return std::get<std::string>(storage);
}

llvm::StringRef Attribute::getSymbolName() const {
  return std::get<SymbolRefValue>(storage).name;
}

llvm::ArrayRef<Attribute> Attribute::getList() const {
  return *std::get<ListStorage>(storage);
}

const AttrDict &Attribute::getDict() const {
  return *std::get<DictStorage>(storage);
}

std::optional<int64_t> Attribute::asInt() const {
  if (isInt())
    return getInt();
  return std::nullopt;
}

std::optional<double> Attribute::asNumber() const {
  if (isNumber())
    return getNumber();
  return std::nullopt;
}

std::optional<llvm::StringRef> Attribute::asString() const {
  if (isString())
    return getString();
  return std::nullopt;
}

namespace fastci {
bool operator==(const Attribute &lhs, const Attribute &rhs) {
  if (lhs.getKind() != rhs.getKind())
    return false;
  switch (lhs.getKind()) {
  case Attribute::Kind::List:
    return lhs.getList() == rhs.getList();
  case Attribute::Kind::Dict:
    return lhs.getDict() == rhs.getDict();
  case Attribute::Kind::Float:
    // Bitwise, so that NaN == NaN and printing round trips compare equal.
    return std::memcmp(&std::get<double>(lhs.storage),
                       &std::get<double>(rhs.storage), sizeof(double)) == 0;
  default:
    return lhs.storage == rhs.storage;
  }
}
} // namespace fastci

void fastci::printEscapedString(llvm::raw_ostream &os, llvm::StringRef value) {
  os << '"';
  for (unsigned char c : value) {
    switch (c) {
    case '"':
      os << "\\\"";
      break;
    case '\\':
      os << "\\\\";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\t':
      os << "\\t";
      break;
    default:
      if (c >= 0x20 && c < 0x7f)
        os << c;
      else
        os << "\\x" << llvm::hexdigit(c >> 4, /*LowerCase=*/true)
           << llvm::hexdigit(c & 15, /*LowerCase=*/true);
    }
  }
  os << '"';
}

void fastci::printSymbolRef(llvm::raw_ostream &os, llvm::StringRef name) {
  os << '@';
  printEscapedString(os, name);
}

/// True if \p key can be printed without quotes: [A-Za-z_][A-Za-z0-9_.-]*.
static bool isBareKey(llvm::StringRef key) {
  if (key.empty() || !(llvm::isAlpha(key[0]) || key[0] == '_'))
    return false;
  return llvm::all_of(key, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
  });
}

void fastci::printAttrKey(llvm::raw_ostream &os, llvm::StringRef key) {
  // Keywords would read as values, so they are quoted too.
  if (isBareKey(key) && key != "true" && key != "false" && key != "unit" &&
      key != "inf" && key != "nan")
    os << key;
  else
    printEscapedString(os, key);
}

void fastci::printFloat(llvm::raw_ostream &os, double value) {
  if (std::isnan(value)) {
    os << "nan";
    return;
  }
  if (std::isinf(value)) {
    os << (value < 0 ? "-inf" : "inf");
    return;
  }
  // Shortest representation that round trips, in positional notation for
  // everyday magnitudes (`50.0`, not `5e+01`) and scientific beyond them.
  char buffer[48];
  int precision = 1;
  for (; precision < 17; ++precision) {
    snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  int exponent =
      value == 0 ? 0
                 : static_cast<int>(std::floor(std::log10(std::fabs(value))));
  if (exponent >= -5 && exponent < 17) {
    int decimals = std::max(0, precision - 1 - exponent);
    snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
    // log10 can be off by one at powers of ten; never lose exactness.
    if (std::strtod(buffer, nullptr) != value)
      snprintf(buffer, sizeof(buffer), "%.17g", value);
  } else {
    snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
  }
  llvm::StringRef text(buffer);
  os << text;
  if (text.find_first_of(".eE") == llvm::StringRef::npos)
    os << ".0";
}

void Attribute::print(llvm::raw_ostream &os) const {
  switch (getKind()) {
  case Kind::None:
    os << "unit";
    return;
  case Kind::Bool:
    os << (getBool() ? "true" : "false");
    return;
  case Kind::Int:
    os << getInt();
    return;
  case Kind::Float:
    printFloat(os, std::get<double>(storage));
    return;
  case Kind::String:
    printEscapedString(os, getString());
    return;
  case Kind::Symbol:
    printSymbolRef(os, getSymbolName());
    return;
  case Kind::List: {
    os << '[';
    llvm::interleave(
        getList(), os, [&](const Attribute &element) { element.print(os); },
        ", ");
    os << ']';
    return;
  }
  case Kind::Dict:
    getDict().print(os);
    return;
  }
}

std::string Attribute::str() const {
  std::string result;
  llvm::raw_string_ostream os(result);
  print(os);
  return result;
}

AttrDict::AttrDict(std::initializer_list<NamedAttribute> init) {
  for (const NamedAttribute &attr : init)
    set(attr.first, attr.second);
}

/// Position of \p key in the sorted vector, or where it would be inserted.
static auto findKey(const std::vector<NamedAttribute> &attrs,
                    llvm::StringRef key) {
  return std::lower_bound(attrs.begin(), attrs.end(), key,
                          [](const NamedAttribute &attr, llvm::StringRef key) {
                            return llvm::StringRef(attr.first) < key;
                          });
}

const Attribute *AttrDict::lookup(llvm::StringRef key) const {
  auto it = findKey(attrs, key);
  if (it == attrs.end() || it->first != key)
    return nullptr;
  return &it->second;
}

Attribute AttrDict::get(llvm::StringRef key) const {
  if (const Attribute *attr = lookup(key))
    return *attr;
  return Attribute();
}

void AttrDict::set(llvm::StringRef key, Attribute value) {
  auto it = findKey(attrs, key);
  if (it != attrs.end() && it->first == key) {
    attrs[it - attrs.begin()].second = std::move(value);
    return;
  }
  attrs.insert(it, NamedAttribute(key.str(), std::move(value)));
}

bool AttrDict::erase(llvm::StringRef key) {
  auto it = findKey(attrs, key);
  if (it == attrs.end() || it->first != key)
    return false;
  attrs.erase(it);
  return true;
}

void AttrDict::print(llvm::raw_ostream &os) const {
  os << '{';
  llvm::interleave(
      attrs, os,
      [&](const NamedAttribute &attr) {
        printAttrKey(os, attr.first);
        os << " = ";
        attr.second.print(os);
      },
      ", ");
  os << '}';
}
