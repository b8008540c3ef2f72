# Warning flags for kiln's own targets (third-party headers come in as SYSTEM and are exempt).
function(kiln_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wnon-virtual-dtor)
  if(KILN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wshadow=local)
    # GCC 12 reports these in correct code after aggressive inlining (known false positives,
    # e.g. GCC bugs 105651, 106199, 107138); keep them visible but not fatal.
    target_compile_options(${target} PRIVATE
      -Wno-error=maybe-uninitialized -Wno-error=stringop-overflow
      -Wno-error=array-bounds -Wno-error=restrict)
  elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wshadow-uncaptured-local)
  endif()
endfunction()
