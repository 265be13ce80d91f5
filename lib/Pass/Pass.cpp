//===- Pass.cpp - The base class of every FastCI pass ---------------------===//
//
// Out-of-line pieces of Pass: statistics registration and the textual form
// of one pass, which --dump-pass-pipeline and reproducers rely on.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

Pass::~Pass() = default;

Pass::Statistic::Statistic(Pass *owner, const char *name,
                           const char *description)
    : name(name), description(description) {
  owner->statistics.push_back(this);
}

void Pass::printAsTextualPipeline(llvm::raw_ostream &os) const {
  os << getArgument();
  options.print(os);
}
