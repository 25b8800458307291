# A LibTorch used from its folder, without its CMake package (HEADLAB_LIBTORCH_DIR): the headers in
# include/ and include/torch/csrc/api/include, the libraries in lib/. A pip torch's torch/ folder is
# one (python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))'); so is an unpacked
# LibTorch archive. TorchConfig.cmake does the same and more, but a CUDA one also looks for the CUDA
# toolkit that built it, which a machine with only the driver and a newer nvcc may not match.
# Sets TORCH_LIBRARIES and Torch_VERSION, and HEADLAB_LIBTORCH_CUDA when lib/ has libtorch_cuda.so.
find_package(Threads REQUIRED)
set(_dir "${HEADLAB_LIBTORCH_DIR}")
if(NOT EXISTS "${_dir}/include/torch/csrc/api/include/torch/torch.h")
  message(FATAL_ERROR "HEADLAB_LIBTORCH_DIR=${_dir} holds no LibTorch: include/torch/csrc/api/include/torch/torch.h is missing")
endif()
foreach(_lib torch torch_cpu c10)
  if(NOT EXISTS "${_dir}/lib/lib${_lib}.so")
    message(FATAL_ERROR "HEADLAB_LIBTORCH_DIR=${_dir}: lib/lib${_lib}.so is missing")
  endif()
endforeach()
file(STRINGS "${_dir}/include/torch/csrc/api/include/torch/version.h" _version REGEX "#define TORCH_VERSION \"")
string(REGEX REPLACE ".*\"(.*)\".*" "\\1" Torch_VERSION "${_version}")

add_library(headlab_libtorch INTERFACE)
target_include_directories(headlab_libtorch SYSTEM INTERFACE "${_dir}/include" "${_dir}/include/torch/csrc/api/include")
# The C++ ABI the LibTorch was built with: pip wheels from torch 2.7 on and Debian's use the C++11 ABI
# (python3 -c 'import torch; print(torch._C._GLIBCXX_USE_CXX11_ABI)'); older wheels the pre-C++11 one.
option(HEADLAB_LIBTORCH_CXX11_ABI "The LibTorch folder was built with the C++11 ABI" ON)
if(HEADLAB_LIBTORCH_CXX11_ABI)
  target_compile_definitions(headlab_libtorch INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
else()
  target_compile_definitions(headlab_libtorch INTERFACE _GLIBCXX_USE_CXX11_ABI=0)
endif()
set(_libs "${_dir}/lib/libtorch.so" "${_dir}/lib/libtorch_cpu.so" "${_dir}/lib/libc10.so")
if(EXISTS "${_dir}/lib/libtorch_cuda.so")
  set(HEADLAB_LIBTORCH_CUDA ON)
  # Nothing of ours calls into these: without --no-as-needed the linker drops them and the
  # process starts without CUDA.
  list(APPEND _libs "-Wl,--no-as-needed" "${_dir}/lib/libtorch_cuda.so" "${_dir}/lib/libc10_cuda.so" "-Wl,--as-needed")
endif()
target_link_libraries(headlab_libtorch INTERFACE ${_libs} Threads::Threads)
target_link_options(headlab_libtorch INTERFACE "-Wl,-rpath,${_dir}/lib")
set(TORCH_LIBRARIES headlab_libtorch)
