//===- Attributes.h - Open, typed attributes on IR nodes --------*- C++ -*-===//
//
// Every IR node carries an attribute dictionary so that passes and plugins can
// record results (`selected`, `pruned_by`, `risk`, `lowered`, ...) without
// touching the core types. Attributes are immutable values: string, int,
// float, bool, list, dict or a reference to a symbol of the module. Lists and
// dicts share their storage, so copying an attribute is cheap.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_IR_ATTRIBUTES_H
#define FASTCI_IR_ATTRIBUTES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fastci {

class AttrDict;

/// The deepest nesting of lists and dictionaries any reader accepts. Printing
/// and comparison recurse, so bounding the depth at input keeps every later
/// traversal safe from stack exhaustion.
inline constexpr unsigned kMaxAttrNesting = 256;

/// A reference to a symbol of the module (printed `@"name"`); kept distinct
/// from a plain string so the verifier can check that it resolves.
struct SymbolRefValue {
  /// The referenced symbol.
  std::string name;
  friend bool operator==(const SymbolRefValue &,
                         const SymbolRefValue &) = default;
};

/// An immutable attribute value.
class Attribute {
public:
  /// The type of the value held.
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    Float,
    String,
    Symbol,
    List,
    Dict
  };

  /// The absent value (printed `unit`); what lookups of missing keys return.
  Attribute() = default;
  /// A boolean (`true`/`false`).
  static Attribute getBool(bool value);
  /// A signed 64-bit integer.
  static Attribute getInt(int64_t value);
  /// A double; printed so that it parses back to the same bits.
  static Attribute getFloat(double value);
  /// A string (any bytes; printed with escapes).
  static Attribute getString(llvm::StringRef value);
  /// A reference to the symbol \p name.
  static Attribute getSymbol(llvm::StringRef name);
  /// A list of attributes (`[a, b]`).
  static Attribute getList(std::vector<Attribute> elements);
  /// A list of strings, the most common list.
  static Attribute getStringList(llvm::ArrayRef<std::string> elements);
  /// The same, taking the strings over instead of copying them (building a
  /// large module copies millions of them otherwise).
  static Attribute takeStringList(std::vector<std::string> elements);
  /// A dictionary (`{k = v}`).
  static Attribute getDict(AttrDict dict);

  /// The kind of value held.
  Kind getKind() const { return static_cast<Kind>(storage.index()); }
  /// True unless this is the absent value.
  explicit operator bool() const { return getKind() != Kind::None; }

  bool isBool() const { return getKind() == Kind::Bool; }
  bool isInt() const { return getKind() == Kind::Int; }
  bool isFloat() const { return getKind() == Kind::Float; }
  /// True for ints and floats.
  bool isNumber() const { return isInt() || isFloat(); }
  bool isString() const { return getKind() == Kind::String; }
  bool isSymbol() const { return getKind() == Kind::Symbol; }
  bool isList() const { return getKind() == Kind::List; }
  bool isDict() const { return getKind() == Kind::Dict; }

  /// The value of a Bool attribute (asserts the kind).
  bool getBool() const;
  /// The value of an Int attribute (asserts the kind).
  int64_t getInt() const;
  /// The value of a Float or Int attribute, as a double.
  double getNumber() const;
  /// The value of a String attribute (asserts the kind).
  llvm::StringRef getString() const;
  /// The name of a Symbol attribute (asserts the kind).
  llvm::StringRef getSymbolName() const;
  /// The elements of a List attribute (asserts the kind).
  llvm::ArrayRef<Attribute> getList() const;
  /// The dictionary of a Dict attribute (asserts the kind).
  const AttrDict &getDict() const;

  /// The int value, if this is an Int.
  std::optional<int64_t> asInt() const;
  /// The numeric value, if this is an Int or a Float.
  std::optional<double> asNumber() const;
  /// The string value, if this is a String.
  std::optional<llvm::StringRef> asString() const;

  /// Prints the value in .fir syntax.
  void print(llvm::raw_ostream &os) const;
  /// The value in .fir syntax.
  std::string str() const;

  friend bool operator==(const Attribute &lhs, const Attribute &rhs);
  friend bool operator!=(const Attribute &lhs, const Attribute &rhs) {
    return !(lhs == rhs);
  }

private:
  using ListStorage = std::shared_ptr<const std::vector<Attribute>>;
  using DictStorage = std::shared_ptr<const AttrDict>;
  std::variant<std::monostate, bool, int64_t, double, std::string,
               SymbolRefValue, ListStorage, DictStorage>
      storage;
};

/// A key and its value.
using NamedAttribute = std::pair<std::string, Attribute>;

/// A dictionary of attributes kept sorted by key, so that printing and
/// comparison never depend on insertion or hash order.
class AttrDict {
public:
  AttrDict() = default;
  /// Builds a dictionary from pairs; later duplicates replace earlier ones.
  AttrDict(std::initializer_list<NamedAttribute> attrs);

  /// The value of \p key, or the absent Attribute.
  Attribute get(llvm::StringRef key) const;
  /// The value of \p key, or nullptr.
  const Attribute *lookup(llvm::StringRef key) const;
  /// True if \p key is present.
  bool contains(llvm::StringRef key) const { return lookup(key) != nullptr; }
  /// Sets \p key to \p value, replacing any previous value.
  void set(llvm::StringRef key, Attribute value);
  /// Removes \p key; returns true if it was present.
  bool erase(llvm::StringRef key);
  /// Removes every key.
  void clear() { attrs.clear(); }

  /// Number of keys.
  size_t size() const { return attrs.size(); }
  /// True if there are no keys.
  bool empty() const { return attrs.empty(); }
  /// Iteration in key order.
  auto begin() const { return attrs.begin(); }
  auto end() const { return attrs.end(); }

  /// Prints `{k = v, ...}` in key order.
  void print(llvm::raw_ostream &os) const;

  friend bool operator==(const AttrDict &lhs, const AttrDict &rhs) {
    return lhs.attrs == rhs.attrs;
  }

private:
  std::vector<NamedAttribute> attrs;
};

/// Prints \p value as a .fir string literal with escapes.
void printEscapedString(llvm::raw_ostream &os, llvm::StringRef value);
/// Prints \p name as a .fir symbol reference `@"name"`.
void printSymbolRef(llvm::raw_ostream &os, llvm::StringRef name);
/// Prints \p key bare when it is an identifier, quoted otherwise.
void printAttrKey(llvm::raw_ostream &os, llvm::StringRef key);
/// Prints \p value as the shortest .fir float literal that parses back to the
/// same double (`12.0`, `1e-07`, `nan`, `-inf`); it never reads as an int.
void printFloat(llvm::raw_ostream &os, double value);

/// The string \p key of \p attrs, if it is one. The view points into
/// \p attrs itself (AttrDict::get returns a copy that a view would outlive).
inline std::optional<llvm::StringRef> lookupString(const AttrDict &attrs,
                                                   llvm::StringRef key) {
  const Attribute *attr = attrs.lookup(key);
  return attr ? attr->asString() : std::nullopt;
}

} // namespace fastci

#endif // FASTCI_IR_ATTRIBUTES_H
