# Tests of cmake/KilnDocExamples.cmake's scanner, in script mode:
#   cmake -DKILN_SOURCE_DIR=<repo> -P tests/docs/scanner_test.cmake
# A good page gives its examples with their lines and directives; a duplicate name (in one file or
# in two), an unknown directive and an unclosed block are configure errors naming the place.
cmake_minimum_required(VERSION 3.25)
include("${KILN_SOURCE_DIR}/cmake/KilnDocExamples.cmake")
set(dir "${KILN_SOURCE_DIR}/tests/docs")
set(failures 0)

function(expect_equal what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(SEND_ERROR "${what}: got '${got}', want '${want}'")
  endif()
endfunction()

kiln_doc_examples_collect(d "${dir}/good.md")
expect_equal("names" "${d_NAMES}" "first;second")
expect_equal("first: line" "${d_first_LINE}" "10")
expect_equal("first: file" "${d_first_FILE}" "${dir}/good.md")
expect_equal("first: run" "${d_first_RUN}" "TRUE")
expect_equal("first: args" "${d_first_ARGS}" "--steps=3;two words")
expect_equal("first: expects" "${d_first_EXPECTS}" "^loss [0-9]+$\n^done; ok \\[$\n")
string(FIND "${d_first_CODE}" "int main() { return 0; }\n" at)
if(at EQUAL -1)
  message(SEND_ERROR "first: code lacks its main: '${d_first_CODE}'")
endif()
expect_equal("second: line" "${d_second_LINE}" "24")
expect_equal("second: run" "${d_second_RUN}" "FALSE")
expect_equal("second: args" "${d_second_ARGS}" "")
string(REGEX MATCH "^// example: second\n// doc-test: compile-only\n#include <cstdio>\n" head "${d_second_CODE}")
if(head STREQUAL "")
  message(SEND_ERROR "second: code starts wrongly: '${d_second_CODE}'")
endif()

# Each of these must fail with a message holding the given text.
function(expect_failure files want)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/kiln_doc_scanner_case.cmake")
  file(WRITE "${script}" "cmake_minimum_required(VERSION 3.25)\n"
                         "include(\"${KILN_SOURCE_DIR}/cmake/KilnDocExamples.cmake\")\n"
                         "kiln_doc_examples_collect(x ${files})\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -P "${script}" RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  file(REMOVE "${script}")
  if(rc EQUAL 0)
    message(SEND_ERROR "scanning ${files} succeeded; expected an error containing '${want}'")
  else()
    string(REPLACE "\n" " " err "${err}")
    string(REGEX REPLACE " +" " " err "${err}")
    string(FIND "${err}" "${want}" at)
    if(at EQUAL -1)
      message(SEND_ERROR "scanning ${files}: error '${err}' does not contain '${want}'")
    endif()
  endif()
endfunction()

expect_failure("${dir}/duplicate_a.md ${dir}/duplicate_b.md"
               "doc example 'twice' is defined twice: ${dir}/duplicate_a.md:2 and ${dir}/duplicate_b.md:2")
expect_failure("${dir}/duplicate_a.md ${dir}/duplicate_a.md" "doc example 'twice' is defined twice")
expect_failure("${dir}/bad_directive.md" "bad_directive.md:5: unknown `// doc-test: sometimes`")
expect_failure("${dir}/unclosed.md" "unclosed.md:2: a ```cpp block is not closed")
message(STATUS "doc example scanner: checks done")
