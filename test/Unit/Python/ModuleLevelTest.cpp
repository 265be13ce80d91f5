//===- ModuleLevelTest.cpp - Unit tests of module-level classification ----===//
//
// Checks which module- and class-level statements classifyModuleLevel()
// calls definitions (and the names they bind) and which effects, that it
// fails safe on what it cannot parse or find.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/ModuleLevel.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

ModuleLevelEdit classify(llvm::StringRef source,
                         std::vector<uint32_t> lines = {},
                         llvm::StringRef scope = "") {
  if (lines.empty())
    for (uint32_t line = 1, n = source.count('\n') + 1; line <= n; ++line)
      lines.push_back(line);
  ModuleLevelEdit edit;
  classifyModuleLevel(source, scope, lines, edit);
  edit.finish();
  return edit;
}

using Names = std::vector<std::string>;

TEST(ModuleLevelTest, BindingsAreDefinitions) {
  ModuleLevelEdit edit = classify("X = 1\n"
                                  "a, (b, c) = f()\n"
                                  "d: int = 2\n"
                                  "e: str\n"
                                  "g += 1\n"
                                  "import os.path, numpy as np\n"
                                  "from .m import y as z, w\n"
                                  "from pkg import *\n"
                                  "del X\n"
                                  "\"\"\"doc\"\"\"\n");
  EXPECT_FALSE(edit.effect) << edit.effectStatement;
  EXPECT_EQ(edit.defines, (Names{"*", "X", "a", "b", "c", "d", "e", "g", "np",
                                 "os", "w", "z"}));
  // Sorted and unique once finish()ed, like the names.
  EXPECT_EQ(edit.imports,
            (Names{".m", ".m.w", ".m.y", "numpy", "os.path", "pkg"}));
}

TEST(ModuleLevelTest, GuardedImportsAreDefinitions) {
  ModuleLevelEdit edit = classify("if is_torch_available():\n"
                                  "    import torch\n"
                                  "else:\n"
                                  "    torch = None\n"
                                  "try:\n"
                                  "    import yaml\n"
                                  "except ImportError as error:\n"
                                  "    yaml = None\n");
  EXPECT_FALSE(edit.effect) << edit.effectStatement;
  EXPECT_EQ(edit.defines, (Names{"error", "torch", "yaml"}));
}

TEST(ModuleLevelTest, CallsAndMutationsAreEffects) {
  for (llvm::StringRef source :
       {"torch.manual_seed(0)\n", "os.environ['X'] = '1'\n",
        "torch.backends.cudnn.benchmark = True\n", "REGISTRY[k] = v\n",
        "assert x\n", "for k in KEYS:\n    TABLE.update(k)\n",
        "if x:\n    register(A)\n", "@register\ndef f():\n    pass\n",
        "x = (\n"}) {
    ModuleLevelEdit edit = classify(source);
    EXPECT_TRUE(edit.effect) << source.str();
    EXPECT_FALSE(edit.effectStatement.empty()) << source.str();
  }
  EXPECT_EQ(classify("x = 1\nprint(x)\n").effectStatement, "line 2: print(x)");
}

TEST(ModuleLevelTest, OnlyChangedStatementsCount) {
  ModuleLevelEdit edit = classify("print('a')\n"
                                  "X = (1,\n"
                                  "     2)\n",
                                  {3});
  EXPECT_FALSE(edit.effect);
  EXPECT_EQ(edit.defines, Names{"X"});
}

TEST(ModuleLevelTest, ClassBodies) {
  llvm::StringRef source = "class A:\n"
                           "    x = 1\n"
                           "    class B:\n"
                           "        y = 2\n"
                           "        register(y)\n"
                           "@dataclass\n"
                           "class C:\n"
                           "    z: int = 0\n";
  EXPECT_EQ(classify(source, {2}, "A").defines, Names{"x"});
  EXPECT_EQ(classify(source, {4}, "A.B").defines, Names{"y"});
  EXPECT_TRUE(classify(source, {5}, "A.B").effect);
  ModuleLevelEdit header = classify(source, {6, 7}, "C");
  EXPECT_FALSE(header.effect) << header.effectStatement;
  EXPECT_EQ(header.defines, Names{"C"});
  ModuleLevelEdit missing = classify(source, {2}, "Nope");
  EXPECT_TRUE(missing.effect);
  EXPECT_EQ(missing.effectStatement, "class 'Nope' not found");
}

TEST(ModuleLevelTest, PureDecorators) {
  for (llvm::StringRef name :
       {"property", "staticmethod", "functools.lru_cache", "pytest.fixture",
        "pytest.mark.parametrize", "torch.no_grad", "dataclasses.dataclass",
        "x.setter", "abc.abstractmethod"})
    EXPECT_TRUE(isPureDecorator(name)) << name.str();
  for (llvm::StringRef name :
       {"register", "app.route", "torch.jit.script", "MODELS.register_module"})
    EXPECT_FALSE(isPureDecorator(name)) << name.str();
}

} // namespace
