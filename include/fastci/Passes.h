//===- Passes.h - Registration of every built-in pass -----------*- C++ -*-===//
//
// The one place that knows all built-in passes, as MLIR's InitAllPasses.h.
// Tools call registerAllPasses() before parsing their command line so that
// passes appear as flags, in --help and in --list-passes. Each pass folder
// under passes/ contributes one registration function, listed in
// passes/Passes.def.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASSES_H
#define FASTCI_PASSES_H

namespace fastci {

/// Registers every built-in pass and pipeline. Safe to call more than once.
void registerAllPasses();

} // namespace fastci

#endif // FASTCI_PASSES_H
