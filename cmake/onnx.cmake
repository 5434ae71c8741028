# onnx.cmake - the ONNX model decoder of src/graph/onnx.c: C code that
# protoc-c generates from Debian's onnx.proto (libonnx-dev) into the build
# directory, compiled into rltune_objects and linked with libprotobuf-c.
# Included by CMakeLists.txt right after rltune_objects is created; appends
# to RLTUNE_LINK_DEPS and RLTUNE_PC_REQUIRES. scripts/install-deps.sh
# installs protobuf-c-compiler, libprotobuf-c-dev and libonnx-dev.

find_program(PROTOC_C_EXECUTABLE protoc-c)
if(NOT PROTOC_C_EXECUTABLE)
  message(FATAL_ERROR "protoc-c not found: scripts/install-deps.sh installs protobuf-c-compiler")
endif()
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)

# Debian's libonnx-dev puts the schema next to ONNX's C++ headers.
find_file(RLTUNE_ONNX_PROTO onnx.proto PATHS /usr/include/onnx /usr/local/include/onnx NO_DEFAULT_PATH)
if(NOT RLTUNE_ONNX_PROTO)
  message(FATAL_ERROR "onnx.proto not found (expected /usr/include/onnx/onnx.proto): "
                      "scripts/install-deps.sh installs libonnx-dev")
endif()
get_filename_component(RLTUNE_ONNX_PROTO_DIR ${RLTUNE_ONNX_PROTO} DIRECTORY)

set(RLTUNE_ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/generated/onnx)
file(MAKE_DIRECTORY ${RLTUNE_ONNX_GEN_DIR})
add_custom_command(
  OUTPUT ${RLTUNE_ONNX_GEN_DIR}/onnx.pb-c.c ${RLTUNE_ONNX_GEN_DIR}/onnx.pb-c.h
  COMMAND ${PROTOC_C_EXECUTABLE} --c_out=${RLTUNE_ONNX_GEN_DIR} --proto_path=${RLTUNE_ONNX_PROTO_DIR}
          ${RLTUNE_ONNX_PROTO}
  DEPENDS ${RLTUNE_ONNX_PROTO}
  COMMENT "protoc-c: generating the ONNX decoder from ${RLTUNE_ONNX_PROTO}"
  VERBATIM)

target_sources(rltune_objects PRIVATE ${RLTUNE_ONNX_GEN_DIR}/onnx.pb-c.c)
# The generated code is not ours to warn about: its warnings (unused
# parameters, missing initializers in newer protoc-c versions) never fail the
# build, while our own code keeps -Werror.
set_source_files_properties(${RLTUNE_ONNX_GEN_DIR}/onnx.pb-c.c PROPERTIES
  GENERATED TRUE
  COMPILE_OPTIONS "-Wno-error;-Wno-unused-parameter;-Wno-missing-field-initializers")
# PUBLIC: the tests build ONNX models with the generated structs
# (tests/common/onnx_build.h).
target_include_directories(rltune_objects PUBLIC ${RLTUNE_ONNX_GEN_DIR})

list(APPEND RLTUNE_LINK_DEPS PkgConfig::PROTOBUF_C)
list(APPEND RLTUNE_PC_REQUIRES libprotobuf-c)
