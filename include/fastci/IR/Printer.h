//===- Printer.h - Writing modules as .fir, JSON or bytecode ----*- C++ -*-===//
//
// Deterministic writers for the three spellings of a Module. Printing is a
// pure function of the module's contents: the same module always prints the
// same bytes, and parsing what was printed prints it again identically.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_IR_PRINTER_H
#define FASTCI_IR_PRINTER_H

#include "fastci/IR/Parser.h"

namespace llvm {
class raw_ostream;
}

namespace fastci {

/// Prints \p module as .fir text.
void printModuleText(const Module &module, llvm::raw_ostream &os);

/// Prints \p module as JSON (pretty-printed, stable key order).
void printModuleJSON(const Module &module, llvm::raw_ostream &os);

/// Writes \p module in the compact binary form.
void writeModuleBytecode(const Module &module, llvm::raw_ostream &os);

/// Writes \p module in \p format.
void writeModule(const Module &module, ModuleFormat format,
                 llvm::raw_ostream &os);

} // namespace fastci

#endif // FASTCI_IR_PRINTER_H
