# The engine as an installed CMake package (docs/EXTENDING.md):
#   cmake --install build --prefix P
# installs the public headers under P/include/ddp/ (the same relative paths as in the source
# tree: #include <ddp/worker/model/module.h>), the engine's static libraries under
# P/lib/ddp-engine/, and P/lib/cmake/DdpEngine/ (DdpEngineConfig.cmake, whose
# find_dependency calls find what the libraries link: Gloo, OpenBLAS, yaml-cpp, cpp-httplib,
# zlib, nlohmann_json, threads, and CUDA and NCCL in a CUDA build), so that another project's
#   find_package(DdpEngine CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE DdpEngine::engine)
# works. Only ddp-worker's side is installed (not the controller, ddpctl or the tests).
include(CMakePackageConfigHelpers)

# The version: one source, worker/control/engine_version.h.
file(STRINGS ${PROJECT_SOURCE_DIR}/worker/control/engine_version.h _ddp_version_lines
     REGEX "^#define DDP_ENGINE_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX MATCH "DDP_ENGINE_VERSION_${_part} ([0-9]+)" _m "${_ddp_version_lines}")
  set(_ddp_v_${_part} ${CMAKE_MATCH_1})
endforeach()
set(DDP_ENGINE_VERSION "${_ddp_v_MAJOR}.${_ddp_v_MINOR}.${_ddp_v_PATCH}")

# Note [Public headers]
# What a trainer of one's own includes, and everything those include (each compiles alone
# against the installed prefix: tests/package/check_headers.sh). Keep this closure small: a
# header added here commits the engine to it (docs/EXTENDING.md lists them).
set(DDP_PUBLIC_HEADERS
  common/status.h common/dtype.h
  kernels/layer_ops.h
  worker/core/parameter.h
  worker/model/batch.h worker/model/trainable_model.h worker/model/layer.h worker/model/module.h
  worker/model/linear.h worker/model/conv2d.h worker/model/max_pool2d.h
  worker/model/activation_layer.h worker/model/sequential.h worker/model/model_options.h
  worker/data/dataset.h worker/data/mapped_features.h common/datafiles/npy_file.h
  worker/control/engine_version.h worker/control/run_worker.h)
foreach(_h ${DDP_PUBLIC_HEADERS})
  get_filename_component(_dir ${_h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${_h} DESTINATION include/ddp/${_dir} COMPONENT engine)
endforeach()

# The engine's libraries: every ddp_* library in the link closure of ddp_worker_all (what ddp-worker
# links), found here so that a library added to the worker joins the package by itself.
set(_ddp_engine_libs)
set(_ddp_queue ddp_worker_all)
while(_ddp_queue)
  list(POP_FRONT _ddp_queue _t)
  foreach(_prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(_deps ${_t} ${_prop})
    foreach(_d IN LISTS _deps)
      if(_d MATCHES "^ddp_" AND TARGET ${_d} AND NOT _d IN_LIST _ddp_engine_libs)
        list(APPEND _ddp_engine_libs ${_d})
        list(APPEND _ddp_queue ${_d})
      endif()
    endforeach()
  endforeach()
endwhile()
add_library(ddp_engine INTERFACE)
target_link_libraries(ddp_engine INTERFACE ${_ddp_engine_libs})
target_include_directories(ddp_engine INTERFACE $<INSTALL_INTERFACE:include> $<INSTALL_INTERFACE:include/ddp>)
set_target_properties(ddp_engine PROPERTIES EXPORT_NAME engine)
install(TARGETS ddp_engine ${_ddp_engine_libs} EXPORT DdpEngineTargets
        ARCHIVE DESTINATION lib/ddp-engine COMPONENT engine
        LIBRARY DESTINATION lib/ddp-engine COMPONENT engine)
install(EXPORT DdpEngineTargets NAMESPACE DdpEngine:: DESTINATION lib/cmake/DdpEngine COMPONENT engine)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/DdpEngineConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/DdpEngineConfig.cmake
                              INSTALL_DESTINATION lib/cmake/DdpEngine)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/DdpEngineConfigVersion.cmake
                                 VERSION ${DDP_ENGINE_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/DdpEngineConfig.cmake ${CMAKE_BINARY_DIR}/package/DdpEngineConfigVersion.cmake
        DESTINATION lib/cmake/DdpEngine COMPONENT engine)
