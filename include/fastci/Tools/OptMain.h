//===- OptMain.h - The fastci-opt driver as a library ----------*- C++ -*-===//
//
// fastci-opt's whole behaviour lives here, as mlir-opt's lives in
// MlirOptMain, so that out-of-tree tools can build their own driver with
// extra passes registered before the command line is parsed.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_TOOLS_OPTMAIN_H
#define FASTCI_TOOLS_OPTMAIN_H

namespace fastci {

/// Runs fastci-opt on \p argv. Returns the process exit code: 0 on success,
/// 1 when an input or a pass failed, 2 on a usage error.
int fastciOptMain(int argc, char **argv);

} // namespace fastci

#endif // FASTCI_TOOLS_OPTMAIN_H
