//===- PytestInternal.h - What Pytest*.cpp share -----------------*- C++
//-*-===//
//
// Private to lib/Python: the helpers the three parts of the pytest rules
// share. Pytest.cpp holds values, ids and class headers, PytestFacts.cpp
// the facts one file contributes, PytestCollect.cpp the collectors.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_LIB_PYTHON_PYTESTINTERNAL_H
#define FASTCI_LIB_PYTHON_PYTESTINTERNAL_H

#include "fastci/Python/Pytest.h"
#include "llvm/ADT/StringMap.h"
#include <optional>
#include <string>
#include <vector>

namespace fastci::python::detail {

/// The marker name of a decorator (`slow` for `@pytest.mark.slow(...)`),
/// or "" when it is not a pytest mark.
llvm::StringRef getMarkerName(const PyValue &decorator);

/// parametrize's argnames ("a, b" or a sequence of strings), or nothing.
std::optional<std::vector<std::string>> getArgnames(const PyValue &value);

/// The offset just past the string literal starting at \p i of \p text.
size_t skipString(llvm::StringRef text, size_t i);

/// The `__test__` assignment in a class body's text: 1 False, 2 True, 0
/// none.
uint8_t findTestAttribute(llvm::StringRef body);

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
getModuleBindings(const FileSummary &summary);

/// The symbol of \p entity of the module \p moduleName.
std::string symbolOf(llvm::StringRef moduleName, const EntitySummary &entity);

/// Records the pytest facts of one file in \p summary (PytestFacts.cpp).
void buildPytestFacts(llvm::StringRef moduleName, llvm::StringRef source,
                      FileSummary &summary,
                      llvm::ArrayRef<std::vector<PyValue>> decorators,
                      llvm::ArrayRef<PyValue> moduleMarks,
                      const ImportTimeEffects &effects,
                      const PytestConfig &config);

} // namespace fastci::python::detail

#endif // FASTCI_LIB_PYTHON_PYTESTINTERNAL_H
