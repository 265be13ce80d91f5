# add_fastci_plugin(<name> <sources...>)
#
# Builds a FastCI pass plugin: a shared object `<name>.so` that
# `fastci-opt --load-pass-plugin=<name>.so` loads. It links libFastCI
# (FastCI::FastCI), which holds the one copy of LLVM Support in the process,
# so the plugin's passes resolve FastCI and LLVM symbols from the host and
# share its option registry. Used by FastCI's own build (passes/examples) and,
# installed beside FastCIConfig.cmake, by plugins built out of tree after
# `find_package(FastCI)`. docs/WritingAPass.md shows both.
function(add_fastci_plugin name)
  if(NOT ARGN)
    message(FATAL_ERROR "add_fastci_plugin(${name}) lists no sources")
  endif()
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE FastCI::FastCI)
  # `<name>.so`, not `lib<name>.so`: the name users pass to the loader.
  set_target_properties(${name} PROPERTIES PREFIX "")
endfunction()
