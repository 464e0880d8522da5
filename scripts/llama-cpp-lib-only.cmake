# Included by CMake at the end of llama.cpp's own project() call when scripts/install.sh builds llama-cpp-python
# (-DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>). llama-cpp-python's CMakeLists forces LLAMA_BUILD_COMMON=ON
# before it adds vendor/llama.cpp, so a -D on the command line cannot turn it off; this runs after that and before
# llama.cpp reads the option. libllama-common (arg parsing, chat templates, an HTTP client: ≈ 30 C++ files plus
# cpp-httplib) is built only for llama.cpp's tools and is never loaded by the Python package, which loads libllama
# and libggml* through ctypes.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)
