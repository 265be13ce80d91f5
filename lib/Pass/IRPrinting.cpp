//===- IRPrinting.cpp - --print-ir-before/after instrumentation -----------===//
//
// Dumps the module around passes, with MLIR's header lines. To keep dumps of
// long pipelines readable, --print-ir-after-change fingerprints the printed
// IR before the pass (SHA-1 of the text, streamed, so no copy of a large
// module is kept) and prints after it only if the fingerprint moved.
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"
#include "fastci/IR/Printer.h"
#include "llvm/Support/raw_sha1_ostream.h"

using namespace fastci;

namespace {
class IRPrinter : public PassInstrumentation {
public:
  IRPrinter(IRPrintingConfig config, llvm::raw_ostream &os)
      : config(std::move(config)), os(os) {}

  void runBeforePass(Pass *pass, Module &module) override {
    if (config.afterOnlyIfChanged && shouldPrintAfter(pass))
      fingerprints[pass] = fingerprint(module);
    if (config.beforePasses.contains(pass->getArgument()))
      print("IR Dump Before " + pass->getArgument().str(), module);
  }

  void runAfterPass(Pass *pass, Module &module) override {
    if (!shouldPrintAfter(pass))
      return;
    if (config.afterOnlyIfChanged) {
      auto it = fingerprints.find(pass);
      bool unchanged =
          it != fingerprints.end() && it->second == fingerprint(module);
      fingerprints.erase(pass);
      if (unchanged)
        return;
    }
    print("IR Dump After " + pass->getArgument().str(), module);
  }

  void runAfterPassFailed(Pass *pass, Module &module) override {
    fingerprints.erase(pass);
    if (config.afterFailure)
      print("IR Dump After " + pass->getArgument().str() + " Failed", module);
  }

private:
  bool shouldPrintAfter(Pass *pass) const {
    return config.afterAll || config.afterPasses.contains(pass->getArgument());
  }

  static std::string fingerprint(const Module &module) {
    llvm::raw_sha1_ostream hash;
    printModuleText(module, hash);
    auto digest = hash.sha1();
    return std::string(digest.begin(), digest.end());
  }

  void print(const std::string &title, const Module &module) {
    os << "// -----// " << title << " //----- //\n";
    printModuleText(module, os);
    os << '\n';
    os.flush();
  }

  IRPrintingConfig config;
  llvm::raw_ostream &os;
  llvm::DenseMap<const Pass *, std::string> fingerprints;
};
} // namespace

std::unique_ptr<PassInstrumentation>
detail::createIRPrinterInstrumentation(IRPrintingConfig config,
                                       llvm::raw_ostream &os) {
  return std::make_unique<IRPrinter>(std::move(config), os);
}
