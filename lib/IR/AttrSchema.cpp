//===- AttrSchema.cpp - Declared attributes and their value kinds ---------===//
//
// A process-wide table of declared attributes, filled at registration time
// (before any pipeline runs) and read by the verifier after every pass, so
// lookups take a shared lock only.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/AttrSchema.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"
#include <mutex>
#include <shared_mutex>

using namespace fastci;

namespace {
struct Registry {
  std::shared_mutex mutex;
  std::vector<AttrDecl> decls;
  /// The positions in `decls` of each name's declarations: the verifier
  /// looks up every attribute of every node, so this is not a scan.
  llvm::StringMap<llvm::SmallVector<unsigned, 2>> byName;
};
Registry &getRegistry() {
  static Registry registry;
  return registry;
}
} // namespace

bool fastci::isOfKind(const Attribute &value, AttrValueKind kind) {
  auto allElements = [&](auto predicate) {
    return value.isList() && llvm::all_of(value.getList(), predicate);
  };
  switch (kind) {
  case AttrValueKind::Bool:
    return value.isBool();
  case AttrValueKind::Int:
    return value.isInt();
  case AttrValueKind::Number:
    return value.isNumber();
  case AttrValueKind::String:
    return value.isString();
  case AttrValueKind::StringList:
    return allElements([](const Attribute &e) { return e.isString(); });
  case AttrValueKind::SymbolList:
    return allElements([](const Attribute &e) { return e.isSymbol(); });
  case AttrValueKind::IntList:
    return allElements([](const Attribute &e) { return e.isInt(); });
  case AttrValueKind::NameList:
    return allElements(
        [](const Attribute &e) { return e.isSymbol() || e.isString(); });
  case AttrValueKind::Dict:
    return value.isDict();
  case AttrValueKind::Any:
    return true;
  }
  llvm_unreachable("unknown attribute value kind");
}

void fastci::registerAttrDecls(llvm::ArrayRef<AttrDecl> decls) {
  Registry &registry = getRegistry();
  std::unique_lock lock(registry.mutex);
  for (const AttrDecl &decl : decls) {
    llvm::erase_if(registry.decls, [&](const AttrDecl &old) {
      return old.name == decl.name && (old.hosts & decl.hosts);
    });
    registry.decls.push_back(decl);
  }
  registry.byName.clear();
  for (auto [index, decl] : llvm::enumerate(registry.decls))
    registry.byName[decl.name].push_back(index);
}

std::optional<AttrDecl> fastci::lookupAttrDecl(AttrHost host,
                                               llvm::StringRef name) {
  Registry &registry = getRegistry();
  std::shared_lock lock(registry.mutex);
  auto it = registry.byName.find(name);
  if (it == registry.byName.end())
    return std::nullopt;
  for (unsigned index : it->second)
    if (registry.decls[index].hosts & unsigned(host))
      return registry.decls[index];
  return std::nullopt;
}

std::vector<AttrDecl> fastci::getAttrDecls() {
  std::vector<AttrDecl> decls;
  {
    Registry &registry = getRegistry();
    std::shared_lock lock(registry.mutex);
    decls = registry.decls;
  }
  llvm::sort(decls, [](const AttrDecl &a, const AttrDecl &b) {
    return std::make_pair(a.name, a.hosts) < std::make_pair(b.name, b.hosts);
  });
  return decls;
}

void fastci::printAttrTable(llvm::raw_ostream &os) {
  os << "| Attribute | On | Value | Written by | Read by |\n"
     << "|---|---|---|---|---|\n";
  for (const AttrDecl &decl : getAttrDecls()) {
    os << "| `" << decl.name << "` | ";
    llvm::ListSeparator separator(", ");
    for (const EnumName<AttrHost> &host : kAttrHostNames)
      if (decl.hosts & unsigned(host.value))
        os << separator << host.name;
    os << " | " << stringifyAttrValueKind(decl.kind) << " | " << decl.writer
       << " | " << decl.readers << " |\n";
  }
}
