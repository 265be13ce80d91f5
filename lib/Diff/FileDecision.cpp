//===- FileDecision.cpp - Spellings of the change policy's decisions ------===//
//
// One table gives each decision its attribute spelling, both ways.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/FileDecision.h"

using namespace fastci;

llvm::StringRef fastci::stringifyFileDecision(FileDecision decision) {
  switch (decision) {
  case FileDecision::Python:
    return "python";
  case FileDecision::All:
    return "all";
  case FileDecision::Tests:
    return "tests";
  case FileDecision::Reads:
    return "reads";
  case FileDecision::Modules:
    return "modules";
  case FileDecision::Ignore:
    return "ignore";
  }
  return "all";
}

std::optional<FileDecision>
fastci::symbolizeFileDecision(llvm::StringRef text) {
  for (FileDecision decision :
       {FileDecision::Python, FileDecision::All, FileDecision::Tests,
        FileDecision::Reads, FileDecision::Modules, FileDecision::Ignore})
    if (stringifyFileDecision(decision) == text)
      return decision;
  return std::nullopt;
}
