//===- fastci-opt.cpp - Run FastCI passes over the IR ---------------------===//
//
// The command-line entry point: everything is in fastciOptMain so that other
// drivers can reuse it.
//
//===----------------------------------------------------------------------===//
#include "fastci/Tools/OptMain.h"

int main(int argc, char **argv) { return fastci::fastciOptMain(argc, argv); }
