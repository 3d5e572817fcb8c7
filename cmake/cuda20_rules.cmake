# CMake 3.25 does not know that nvcc 13 accepts -std=c++20 for CUDA sources;
# this override (CMAKE_USER_MAKE_RULES_OVERRIDE_CUDA) tells it.
set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
