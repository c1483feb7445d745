# ddp_add_library(NAME DIR DEPS...): a static library from every *.cc in DIR (and *.cu when
# CUDA is enabled). The source tree is its include root in the build only (the installed
# package's is its include prefix: cmake/Install.cmake). Files named *_cuda.cc / *.cu are CUDA-only. Sources are globbed with
# CONFIGURE_DEPENDS so new files join without editing CMake.
function(ddp_add_library name dir)
  file(GLOB _cc CONFIGURE_DEPENDS ${dir}/*.cc)
  list(FILTER _cc EXCLUDE REGEX "(_main|_cuda)\\.cc$")
  if(DDP_CUDA_ENABLED)
    file(GLOB _cu CONFIGURE_DEPENDS ${dir}/*.cu ${dir}/*_cuda.cc)
    list(APPEND _cc ${_cu})
  endif()
  if(NOT _cc)
    # Nothing here yet: an interface library keeps dependants linking.
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
    target_link_libraries(${name} INTERFACE ${ARGN})
    return()
  endif()
  add_library(${name} STATIC ${_cc})
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  target_link_libraries(${name} PUBLIC ${ARGN})
  if(DDP_CUDA_ENABLED)
    target_compile_definitions(${name} PUBLIC DDP_WITH_CUDA=1)
    set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()
