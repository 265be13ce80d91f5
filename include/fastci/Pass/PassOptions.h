//===- PassOptions.h - Typed options of passes and pipelines ----*- C++ -*-===//
//
// A pass declares its options as members, in the style of MLIR:
//
//   Option<int> runners{*this, "runners", llvm::cl::desc("CI runners"),
//                       llvm::cl::init(4)};
//   ListOption<std::string> files{*this, "files", llvm::cl::desc("...")};
//
// The llvm::cl modifiers (desc, value_desc, init, list_init, values) are only
// used as a familiar spelling; parsing is FastCI's own, so that a bad value is
// reported at its exact position in the pipeline text rather than through
// llvm::cl's global error stream. Supported value types are integers,
// floating point, bool, std::string and enums (with llvm::cl::values).
//
// Syntax, shared by `--pass-pipeline` and `--<pass>=<options>`: options are
// `key=value` separated by commas (or spaces); a value is bare text, a quoted
// string ("..." with \" and \\ escapes, or '...'), or a braced group. List
// values are braced, `files={a.py,b.py}`; a single element may be bare.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_PASSOPTIONS_H
#define FASTCI_PASS_PASSOPTIONS_H

#include "fastci/Support/EnumNames.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/raw_ostream.h"
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace fastci {

class DiagnosticEngine;
class PassOptions;

/// One lexed option value: its text with quotes and escapes removed, and
/// where it starts in the pipeline text.
struct OptionValueToken {
  std::string text;
  llvm::SMLoc loc;
};

/// Why a value did not parse: which token, and what was expected there.
struct OptionValueError {
  size_t index = 0;
  std::string expected;
};

namespace detail {
/// Helpers shared by every value type; defined in PassOptions.cpp.
bool parseInteger(llvm::StringRef text, int64_t min, int64_t max,
                  int64_t &result);
bool parseUnsigned(llvm::StringRef text, uint64_t max, uint64_t &result);
bool parseFloat(llvm::StringRef text, double &result);
bool parseBool(llvm::StringRef text, bool &result);
void printFloat(llvm::raw_ostream &os, double value);
/// Prints \p value bare when the pipeline lexer reads it back unchanged,
/// double-quoted with escapes otherwise.
void printOptionString(llvm::raw_ostream &os, llvm::StringRef value);
/// The closest of \p candidates to \p name within a small edit distance.
std::vector<std::string>
findCloseMatches(llvm::StringRef name,
                 llvm::ArrayRef<llvm::StringRef> candidates);
/// ` did you mean 'a' or 'b'?` for \p matches, or "".
std::string formatDidYouMean(llvm::ArrayRef<std::string> matches);
} // namespace detail

/// Converts option values of type \p T from and to their text; enums carry
/// the table of names given with llvm::cl::values.
template <typename T> class OptionValueParser {
  static_assert(std::is_integral_v<T> || std::is_floating_point_v<T> ||
                    std::is_enum_v<T> || std::is_same_v<T, std::string>,
                "pass options are integers, floats, bools, strings or enums");

public:
  /// A name an enum option accepts.
  struct Literal {
    std::string name;
    T value;
    std::string description;
  };

  /// Called by llvm::cl::values(...) to add an accepted enum name.
  template <typename V>
  void addLiteralOption(llvm::StringRef name, const V &value,
                        llvm::StringRef description) {
    static_assert(std::is_enum_v<T>, "llvm::cl::values needs an enum option");
    literals.push_back({name.str(), static_cast<T>(value), description.str()});
  }

  /// The names an enum option accepts, in declaration order.
  llvm::ArrayRef<Literal> getLiterals() const { return literals; }

  /// Parses \p text into \p result; on failure sets \p expected to what the
  /// value should have looked like ("an integer", "one of 'a', 'b'").
  bool parse(llvm::StringRef text, T &result, std::string &expected) const {
    if constexpr (std::is_same_v<T, bool>) {
      expected = "'true' or 'false'";
      return detail::parseBool(text, result);
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      expected = "an integer in [" +
                 std::to_string(std::numeric_limits<T>::min()) + ", " +
                 std::to_string(std::numeric_limits<T>::max()) + "]";
      int64_t value;
      if (!detail::parseInteger(text, std::numeric_limits<T>::min(),
                                std::numeric_limits<T>::max(), value))
        return false;
      result = static_cast<T>(value);
      return true;
    } else if constexpr (std::is_integral_v<T>) {
      expected = "a non-negative integer up to " +
                 std::to_string(std::numeric_limits<T>::max());
      uint64_t value;
      if (!detail::parseUnsigned(text, std::numeric_limits<T>::max(), value))
        return false;
      result = static_cast<T>(value);
      return true;
    } else if constexpr (std::is_floating_point_v<T>) {
      expected = "a number";
      double value;
      if (!detail::parseFloat(text, value))
        return false;
      result = static_cast<T>(value);
      return true;
    } else if constexpr (std::is_enum_v<T>) {
      for (const Literal &literal : literals) {
        if (literal.name == text) {
          result = literal.value;
          return true;
        }
      }
      expected = "one of ";
      for (const auto &[index, literal] : llvm::enumerate(literals))
        expected += (index ? ", '" : "'") + literal.name + "'";
      return false;
    } else {
      result = text.str();
      return true;
    }
  }

  /// Prints \p value so that parse() reads it back.
  void print(llvm::raw_ostream &os, const T &value) const {
    if constexpr (std::is_same_v<T, bool>) {
      os << (value ? "true" : "false");
    } else if constexpr (std::is_integral_v<T>) {
      os << value;
    } else if constexpr (std::is_floating_point_v<T>) {
      detail::printFloat(os, value);
    } else if constexpr (std::is_enum_v<T>) {
      for (const Literal &literal : literals)
        if (literal.value == value)
          return detail::printOptionString(os, literal.name);
      os << static_cast<int64_t>(value);
    } else {
      detail::printOptionString(os, value);
    }
  }

  /// The `<...>` shown in help: `<int>`, `<number>`, `<a|b>`.
  std::string getTypeDescription() const {
    if constexpr (std::is_same_v<T, bool>)
      return "bool";
    else if constexpr (std::is_integral_v<T>)
      return std::is_signed_v<T> ? "int" : "uint";
    else if constexpr (std::is_floating_point_v<T>)
      return "number";
    else if constexpr (std::is_enum_v<T>) {
      std::string names;
      for (const auto &[index, literal] : llvm::enumerate(literals))
        names += (index ? "|" : "") + literal.name;
      return names;
    } else
      return "string";
  }

private:
  std::vector<Literal> literals;
};

/// The type-independent part of an option: its name, help and parse state.
class OptionBase {
public:
  OptionBase(const OptionBase &) = delete;
  OptionBase &operator=(const OptionBase &) = delete;
  virtual ~OptionBase();

  /// The key written in pipelines (`runners`).
  llvm::StringRef getArgument() const { return argument; }
  /// One-line help.
  llvm::StringRef getDescription() const { return description; }
  /// What the value looks like in help: `<int>`, `<string>,...`.
  virtual std::string getValueDescription() const = 0;
  /// True for list options, whose braced values are split into elements.
  virtual bool isList() const { return false; }
  /// True when a bare `key` (no `=value`) means `key=true`.
  virtual bool isFlag() const { return false; }

  /// Parses \p values (exactly one for scalars, the elements for lists) and
  /// stores the result; on failure, says which value was bad and why. The
  /// caller reports it, since only it knows the owner and the position.
  virtual LogicalResult parse(llvm::ArrayRef<OptionValueToken> values,
                              OptionValueError &error) = 0;
  /// Prints the current value in pipeline syntax (lists braced).
  virtual void printValue(llvm::raw_ostream &os) const = 0;
  /// Prints the default value, or nothing when there is none.
  virtual void printDefault(llvm::raw_ostream &os) const = 0;

  /// True once a pipeline gave this option a value.
  bool hasValue() const { return explicitlySet; }
  /// Where the value was written in the pipeline text; invalid by default.
  llvm::SMLoc getLoc() const { return loc; }
  /// Records that the value was given at \p valueLoc.
  void markSet(llvm::SMLoc valueLoc) {
    explicitlySet = true;
    loc = valueLoc;
  }

protected:
  OptionBase(PassOptions &owner, llvm::StringRef argument);

  void applyModifier(const llvm::cl::desc &modifier) {
    description = modifier.Desc.str();
  }

private:
  std::string argument;
  std::string description;
  bool explicitlySet = false;
  llvm::SMLoc loc;
};

/// The options of one pass or pipeline, in declaration order.
class PassOptions {
public:
  PassOptions() = default;
  /// Virtual: pipeline registrations own their options subclass through a
  /// std::unique_ptr<PassOptions>.
  virtual ~PassOptions() = default;
  PassOptions(const PassOptions &) = delete;
  PassOptions &operator=(const PassOptions &) = delete;

  /// A scalar option: `key=value`.
  template <typename T> class Option : public OptionBase {
  public:
    /// Declares the option `argument` of \p owner; \p modifiers are
    /// llvm::cl::desc, llvm::cl::init and (for enums) llvm::cl::values.
    template <typename... Modifiers>
    Option(PassOptions &owner, llvm::StringRef argument,
           const Modifiers &...modifiers)
        : OptionBase(owner, argument) {
      (applyModifier(modifiers), ...);
    }

    /// The current value.
    const T &getValue() const { return value; }
    operator const T &() const { return value; }
    /// Sets the value, as a pipeline would.
    Option &operator=(const T &newValue) {
      value = newValue;
      return *this;
    }
    /// The parser, for llvm::cl::values.
    OptionValueParser<T> &getParser() { return parser; }

    std::string getValueDescription() const override {
      return "<" + parser.getTypeDescription() + ">";
    }
    bool isFlag() const override { return std::is_same_v<T, bool>; }
    LogicalResult parse(llvm::ArrayRef<OptionValueToken> values,
                        OptionValueError &error) override {
      T parsed{};
      if (!parser.parse(values.front().text, parsed, error.expected))
        return failure();
      value = std::move(parsed);
      return success();
    }
    void printValue(llvm::raw_ostream &os) const override {
      parser.print(os, value);
    }
    void printDefault(llvm::raw_ostream &os) const override {
      if (defaultValue)
        parser.print(os, *defaultValue);
    }

  private:
    using OptionBase::applyModifier;
    template <typename U>
    void applyModifier(const llvm::cl::initializer<U> &init) {
      value = T(init.Init);
      defaultValue = value;
    }
    void applyModifier(const llvm::cl::ValuesClass &values) {
      values.apply(*this);
    }
    template <typename E> void applyModifier(const EnumValues<E> &values) {
      for (const EnumName<E> &entry : values.table)
        parser.addLiteralOption(entry.name, entry.value, entry.description);
    }

    OptionValueParser<T> parser;
    T value{};
    std::optional<T> defaultValue;
  };

  /// A list option: `key={a,b}` (or `key=a` for one element).
  template <typename T> class ListOption : public OptionBase {
  public:
    /// Declares the list option `argument` of \p owner; \p modifiers are
    /// llvm::cl::desc, llvm::cl::list_init and (for enums) llvm::cl::values.
    template <typename... Modifiers>
    ListOption(PassOptions &owner, llvm::StringRef argument,
               const Modifiers &...modifiers)
        : OptionBase(owner, argument) {
      (applyModifier(modifiers), ...);
    }

    /// The elements.
    llvm::ArrayRef<T> getValue() const { return values; }
    operator llvm::ArrayRef<T>() const { return values; }
    auto begin() const { return values.begin(); }
    auto end() const { return values.end(); }
    size_t size() const { return values.size(); }
    bool empty() const { return values.empty(); }
    /// Replaces the elements, as a pipeline would.
    ListOption &operator=(llvm::ArrayRef<T> newValues) {
      values.assign(newValues.begin(), newValues.end());
      return *this;
    }
    /// The parser, for llvm::cl::values.
    OptionValueParser<T> &getParser() { return parser; }

    std::string getValueDescription() const override {
      return "<" + parser.getTypeDescription() + ">,...";
    }
    bool isList() const override { return true; }
    LogicalResult parse(llvm::ArrayRef<OptionValueToken> tokens,
                        OptionValueError &error) override {
      std::vector<T> parsed(tokens.size());
      for (size_t index = 0; index != tokens.size(); ++index) {
        if (!parser.parse(tokens[index].text, parsed[index], error.expected)) {
          error.index = index;
          return failure();
        }
      }
      values = std::move(parsed);
      return success();
    }
    void printValue(llvm::raw_ostream &os) const override { print(os, values); }
    void printDefault(llvm::raw_ostream &os) const override {
      print(os, defaultValues);
    }

  private:
    using OptionBase::applyModifier;
    template <typename U>
    void applyModifier(const llvm::cl::list_initializer<U> &init) {
      values.assign(init.Inits.begin(), init.Inits.end());
      defaultValues = values;
    }
    void applyModifier(const llvm::cl::ValuesClass &literals) {
      literals.apply(*this);
    }
    void print(llvm::raw_ostream &os, llvm::ArrayRef<T> elements) const {
      os << '{';
      llvm::interleave(
          elements, os, [&](const T &element) { parser.print(os, element); },
          ",");
      os << '}';
    }

    OptionValueParser<T> parser;
    std::vector<T> values;
    std::vector<T> defaultValues;
  };

  /// Every option, in declaration order.
  llvm::ArrayRef<OptionBase *> getOptions() const { return options; }
  /// The option named \p argument, or null.
  OptionBase *lookup(llvm::StringRef argument) const;

  /// Parses `key=value,...` (optionally braced) from \p text, reporting
  /// errors through \p diag in a buffer named \p bufferName.
  LogicalResult parseFromString(llvm::StringRef text, DiagnosticEngine &diag,
                                llvm::StringRef bufferName = "<options>");

  /// Prints `{key=value,...}` with every option, or nothing if there are none.
  void print(llvm::raw_ostream &os) const;
  /// Prints one help line per option, indented by \p indent.
  void printHelp(llvm::raw_ostream &os, unsigned indent) const;

  /// Checks the values together once they are parsed (options that
  /// contradict each other), reporting through \p diag at \p loc (where
  /// the owner is named) or at an option's own getLoc(). Named pipelines
  /// call it before they are built, since a builder cannot fail; passes
  /// check their options in Pass::initialize instead.
  virtual LogicalResult verify(DiagnosticEngine & /*diag*/,
                               llvm::SMLoc /*loc*/) const {
    return success();
  }

private:
  friend class OptionBase;
  std::vector<OptionBase *> options;
};

} // namespace fastci

#endif // FASTCI_PASS_PASSOPTIONS_H
