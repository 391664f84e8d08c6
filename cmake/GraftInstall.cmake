# Installs graft as a CMake package:
#
#   find_package(graft REQUIRED)
#   target_link_libraries(app PRIVATE graft::graft)
#
# graft::graft is everything (support, ir, interp, rewrite, serialize, dsl,
# vulkan_runtime, vulkan and, when built, the compiler facade); graft::ir etc. are the
# individual libraries (docs/architecture.md, "Layering"). The
# libraries are static, so their private dependencies (yaml-cpp, PEGTL, zlib,
# Vulkan, glslang, ...) are found again by graftConfig.cmake.
include(CMakePackageConfigHelpers)

set(GRAFT_INSTALL_LIBS graft_support graft_ir graft_interp graft_rewrite graft_serialize graft_dsl
                       graft_vulkan_runtime graft_vulkan graft_glslang)
if(TARGET graft_compiler)
  list(APPEND GRAFT_INSTALL_LIBS graft_compiler)
endif()

add_library(graft_all INTERFACE)
target_link_libraries(graft_all INTERFACE ${GRAFT_INSTALL_LIBS})
set_target_properties(graft_all PROPERTIES EXPORT_NAME graft)
foreach(lib IN LISTS GRAFT_INSTALL_LIBS)
  string(REGEX REPLACE "^graft_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
endforeach()

install(TARGETS ${GRAFT_INSTALL_LIBS} graft_all EXPORT graftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS graft RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir engine serialize dsl backends/vulkan/runtime backends/vulkan compiler)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${dir}/include)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()

set(GRAFT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/graft)
install(EXPORT graftTargets NAMESPACE graft:: DESTINATION ${GRAFT_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/graftConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/graftConfig.cmake
                              INSTALL_DESTINATION ${GRAFT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/graftConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/graftConfig.cmake ${PROJECT_BINARY_DIR}/graftConfigVersion.cmake
        DESTINATION ${GRAFT_CMAKE_DIR})
