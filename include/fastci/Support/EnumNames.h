//===- EnumNames.h - One spelling table per enum ----------------*- C++ -*-===//
//
// An enum whose values appear in text (pass options, IR attributes, plans)
// lists its spellings once, as a table of EnumName entries beside the enum.
// stringify<Enum>/symbolize<Enum> (the MLIR names) are written on top of the
// table with stringifyEnum/symbolizeEnum, and a pass option accepts exactly
// the table's names with `enumValues(table)` instead of a second list of
// llvm::cl::values, so a new enumerator cannot be spelled one way in the
// option and another in the attribute it ends up in.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SUPPORT_ENUMNAMES_H
#define FASTCI_SUPPORT_ENUMNAMES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"
#include <optional>
#include <string>

namespace fastci {

/// The spelling of one enumerator, with a one-line description for help.
template <typename E> struct EnumName {
  E value;
  llvm::StringLiteral name;
  llvm::StringLiteral description;
};

/// The name of \p value in \p table.
template <typename E>
llvm::StringRef stringifyEnum(llvm::ArrayRef<EnumName<E>> table, E value) {
  for (const EnumName<E> &entry : table)
    if (entry.value == value)
      return entry.name;
  llvm_unreachable("enumerator missing from its name table");
}

/// The enumerator \p table spells \p name, if any.
template <typename E>
std::optional<E> symbolizeEnum(llvm::ArrayRef<EnumName<E>> table,
                               llvm::StringRef name) {
  for (const EnumName<E> &entry : table)
    if (entry.name == name)
      return entry.value;
  return std::nullopt;
}

/// `a, b, c`: every name of \p table, for messages.
template <typename E>
std::string listEnumNames(llvm::ArrayRef<EnumName<E>> table) {
  std::string names;
  for (const EnumName<E> &entry : table)
    names += (names.empty() ? "" : ", ") + entry.name.str();
  return names;
}

/// A pass option modifier: the option accepts the names of a table.
template <typename E> struct EnumValues { llvm::ArrayRef<EnumName<E>> table; };
/// `enumValues(kFooNames)`, for Option<Foo>.
template <typename E>
EnumValues<E> enumValues(llvm::ArrayRef<EnumName<E>> table) {
  return {table};
}
template <typename E, size_t N>
EnumValues<E> enumValues(const EnumName<E> (&table)[N]) {
  return {llvm::ArrayRef<EnumName<E>>(table)};
}

} // namespace fastci

#endif // FASTCI_SUPPORT_ENUMNAMES_H
