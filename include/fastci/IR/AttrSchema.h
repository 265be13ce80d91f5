//===- AttrSchema.h - Declared attributes and their value kinds -*- C++ -*-===//
//
// The attribute dictionaries of the IR are open, but the names passes
// exchange are a contract: each area declares the names it writes in
// include/fastci/<Area>/<Area>Attrs.h, and registers here, once, on which
// nodes each may appear, which kind of value it holds, which pass writes it
// and which read it (passes/DeclaredAttrs.cpp for the built-in areas; a
// plugin may register its own). The verifier then rejects a declared
// attribute with a value of the wrong kind, and `fastci-opt
// --list-attributes` prints the table docs/IR.md carries. Undeclared names
// stay free for experiments and plugins.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_IR_ATTRSCHEMA_H
#define FASTCI_IR_ATTRSCHEMA_H

#include "fastci/IR/Attributes.h"
#include "fastci/Support/EnumNames.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace fastci {

/// The kinds of IR node an attribute dictionary belongs to (a bit set).
enum class AttrHost : uint8_t {
  Module = 1,
  Entity = 2,
  Test = 4,
  Evidence = 8,
  Change = 16,
  ChangedFile = 32,
};

/// Hosts \p a and \p b.
constexpr unsigned operator|(AttrHost a, AttrHost b) {
  return unsigned(a) | unsigned(b);
}
/// Hosts \p a and \p b.
constexpr unsigned operator|(unsigned a, AttrHost b) { return a | unsigned(b); }

/// What a declared attribute's value must be.
enum class AttrValueKind : uint8_t {
  Bool,
  Int,
  /// An int or a float.
  Number,
  String,
  /// A list of strings.
  StringList,
  /// A list of symbol references.
  SymbolList,
  /// A list of ints.
  IntList,
  /// A list of symbol references or strings (names of tests or entities).
  NameList,
  Dict,
  /// Not checked here: its reader validates it (and reports bad values with
  /// its own message).
  Any,
};

/// One declared attribute.
struct AttrDecl {
  /// The name, a constant of the writer's <Area>Attrs.h.
  llvm::StringRef name;
  /// The AttrHost bits it may appear on.
  unsigned hosts;
  AttrValueKind kind;
  /// The pass (or producer) that writes it.
  llvm::StringRef writer;
  /// Who reads it, for the docs table.
  llvm::StringRef readers;
};

/// The spellings of AttrValueKind, as the verifier and the docs table say
/// them.
inline constexpr EnumName<AttrValueKind> kAttrValueKindNames[] = {
    {AttrValueKind::Bool, "bool", ""},
    {AttrValueKind::Int, "int", ""},
    {AttrValueKind::Number, "number", "an int or a float"},
    {AttrValueKind::String, "string", ""},
    {AttrValueKind::StringList, "string list", ""},
    {AttrValueKind::SymbolList, "symbol list", ""},
    {AttrValueKind::IntList, "int list", ""},
    {AttrValueKind::NameList, "list of names", "symbols or strings"},
    {AttrValueKind::Dict, "dict", ""},
    {AttrValueKind::Any, "any (checked by its reader)", ""},
};
/// `bool`, `int`, `number`, `string`, `string list`, ...
inline llvm::StringRef stringifyAttrValueKind(AttrValueKind kind) {
  return stringifyEnum<AttrValueKind>(kAttrValueKindNames, kind);
}

/// The spellings of AttrHost, in the order the docs table lists hosts.
inline constexpr EnumName<AttrHost> kAttrHostNames[] = {
    {AttrHost::Module, "module", ""},
    {AttrHost::Entity, "entity", ""},
    {AttrHost::Test, "test", ""},
    {AttrHost::Evidence, "evidence", "an evidence record"},
    {AttrHost::Change, "change", ""},
    {AttrHost::ChangedFile, "changed file", ""},
};
/// `module`, `entity`, `test`, `evidence`, `change`, `changed file`.
inline llvm::StringRef stringifyAttrHost(AttrHost host) {
  return stringifyEnum<AttrHost>(kAttrHostNames, host);
}
/// True when \p value is of \p kind.
bool isOfKind(const Attribute &value, AttrValueKind kind);

/// Declares \p decls (names already declared for an overlapping host are
/// replaced, so registering twice is harmless). Thread-safe.
void registerAttrDecls(llvm::ArrayRef<AttrDecl> decls);
/// The declaration of \p name on \p host, if any.
std::optional<AttrDecl> lookupAttrDecl(AttrHost host, llvm::StringRef name);
/// Every declaration, sorted by name then hosts.
std::vector<AttrDecl> getAttrDecls();
/// Prints the declarations as the Markdown table of docs/IR.md.
void printAttrTable(llvm::raw_ostream &os);

} // namespace fastci

#endif // FASTCI_IR_ATTRSCHEMA_H
