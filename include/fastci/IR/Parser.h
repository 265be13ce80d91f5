//===- Parser.h - Reading modules from .fir, JSON or bytecode ---*- C++ -*-===//
//
// Entry points that turn a buffer into a Module. Every reader reports
// problems through the DiagnosticEngine at the exact position in the buffer
// and returns null on error; none of them asserts, throws or loops forever on
// malformed input. The grammar of .fir is in docs/IR.md.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_IR_PARSER_H
#define FASTCI_IR_PARSER_H

#include "fastci/IR/Module.h"
#include "fastci/Support/Diagnostics.h"
#include <memory>

namespace fastci {

/// The on-disk spellings of a Module.
enum class ModuleFormat { Text, JSON, Bytecode };

/// Guesses the format of \p buffer: the bytecode magic, else JSON when the
/// first non-space byte is `{`, else text.
ModuleFormat detectModuleFormat(llvm::StringRef buffer);

/// Parses buffer \p bufferId of \p diag's SourceMgr in whatever format it is.
std::unique_ptr<Module> parseModule(unsigned bufferId, DiagnosticEngine &diag);

/// Parses buffer \p bufferId as .fir text.
std::unique_ptr<Module> parseModuleText(unsigned bufferId,
                                        DiagnosticEngine &diag);

/// Parses \p text, which must lie within a buffer of \p diag's SourceMgr,
/// as .fir text. This is how one chunk of a `--split-input-file` input is
/// parsed: diagnostics keep the line numbers of the whole file.
std::unique_ptr<Module> parseModuleText(llvm::StringRef text,
                                        DiagnosticEngine &diag);

/// Parses buffer \p bufferId as the JSON form of a module.
std::unique_ptr<Module> parseModuleJSON(unsigned bufferId,
                                        DiagnosticEngine &diag);

/// Parses buffer \p bufferId as the binary form of a module.
std::unique_ptr<Module> parseModuleBytecode(unsigned bufferId,
                                            DiagnosticEngine &diag);

/// Reads \p path ("-" for stdin) into \p diag's SourceMgr and parses it;
/// a file that cannot be read is reported as an error.
std::unique_ptr<Module> parseModuleFile(llvm::StringRef path,
                                        DiagnosticEngine &diag);

} // namespace fastci

#endif // FASTCI_IR_PARSER_H
