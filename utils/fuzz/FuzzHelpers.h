//===- FuzzHelpers.h - Shared setup of the fuzz targets ---------*- C++ -*-===//
//
// Every FastCI reader takes its input as a buffer of a DiagnosticEngine's
// SourceMgr, so every fuzz target does the same thing: copy libFuzzer's bytes
// into a named MemoryBuffer that owns them (and ends in a NUL, as buffers
// read from files do), hand it to one reader, and print whatever diagnostics
// come out. Printing matters: a
// diagnostic quotes its source line with a caret, and that code sees the
// same hostile bytes as the reader. Output goes to llvm::nulls() so that a
// run's speed is not bounded by the terminal.
//
//===----------------------------------------------------------------------===//

#ifndef FASTCI_UTILS_FUZZ_FUZZHELPERS_H
#define FASTCI_UTILS_FUZZ_FUZZHELPERS_H

#include "fastci/IR/Parser.h"
#include "fastci/IR/Printer.h"
#include "fastci/IR/Verifier.h"
#include "fastci/Support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

namespace fastci::fuzz {

/// The bytes libFuzzer passes, as a StringRef.
inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

/// Registers a copy of \p data in \p diag's SourceMgr as `fuzz-input` and
/// returns its buffer id. The copy, unlike libFuzzer's array, is what every
/// real caller passes: a MemoryBuffer that owns its bytes.
inline unsigned addFuzzBuffer(DiagnosticEngine &diag, const uint8_t *data,
                              size_t size) {
  return diag.addBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(asText(data, size), "fuzz-input"));
}

/// What every IR reader's target does with a module it accepted: verify it
/// and, when valid, write it in every format. A reader that accepts what the
/// verifier or a writer cannot handle has a bug of the same kind as a crash.
inline void checkModule(std::unique_ptr<Module> module,
                        DiagnosticEngine &diag) {
  if (!module || failed(verifyModule(*module, diag)))
    return;
  for (ModuleFormat format :
       {ModuleFormat::Text, ModuleFormat::JSON, ModuleFormat::Bytecode})
    writeModule(*module, format, llvm::nulls());
}

} // namespace fastci::fuzz

#endif // FASTCI_UTILS_FUZZ_FUZZHELPERS_H
