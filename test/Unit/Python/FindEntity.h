//===- FindEntity.h - Look up an analyzed entity in unit tests --*- C++ -*-===//
//
// Shared by the analyzer's unit tests: the entity of a FileSummary with a
// given qualname.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_TEST_UNIT_PYTHON_FINDENTITY_H
#define FASTCI_TEST_UNIT_PYTHON_FINDENTITY_H

#include "fastci/Python/FileSummary.h"
#include "llvm/ADT/StringRef.h"

/// The entity of \p summary whose qualname is \p qualname, or null.
inline const fastci::python::EntitySummary *
find(const fastci::python::FileSummary &summary, llvm::StringRef qualname) {
  for (const fastci::python::EntitySummary &entity : summary.entities)
    if (entity.qualname == qualname)
      return &entity;
  return nullptr;
}

#endif // FASTCI_TEST_UNIT_PYTHON_FINDENTITY_H
