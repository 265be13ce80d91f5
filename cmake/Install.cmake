# Install rules and the CMake package of FastCI: `cmake --install build
# --prefix P` puts fastci-opt in P/bin, libFastCI.so in P/lib, the public
# headers in P/include/fastci and FastCIConfig.cmake (targets FastCI::FastCI
# and FastCI::fastci-opt, function add_fastci_plugin) in P/lib/cmake/FastCI,
# so out-of-tree pass plugins build with find_package(FastCI). `cpack -G DEB`
# in the build directory packs the same files as a .deb.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FASTCI_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/FastCI)

# Installed binaries find libFastCI.so beside them; TBB comes from the system.
set_target_properties(fastci-opt PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS FastCI fastci-opt EXPORT FastCITargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/fastci
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(EXPORT FastCITargets NAMESPACE FastCI::
  DESTINATION ${FASTCI_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/FastCIConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/FastCIConfig.cmake
  INSTALL_DESTINATION ${FASTCI_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/FastCIConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_BINARY_DIR}/cmake/FastCIConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/FastCIConfigVersion.cmake
  ${CMAKE_SOURCE_DIR}/cmake/FastCIPlugin.cmake
  DESTINATION ${FASTCI_INSTALL_CMAKEDIR})

# A .deb of the same files (`cpack -G DEB` in the build directory).
set(CPACK_PACKAGE_NAME fastci)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "FastCI maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "FastCI: fastci-opt, libFastCI and the CMake package for pass plugins")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "llvm-19-dev, libtbb-dev, libzstd-dev")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
