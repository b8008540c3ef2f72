# Doc examples: every C++ block of the documentation that is a complete program is built and run by
# the test suite, so a renamed function breaks the build, not the reader.
#
# A block is a doc example when it is fenced as ```cpp (the fence at the start of a line) and its
# first line is `// example: NAME` (NAME: letters, digits and underscores, unique over all the
# files). Lines right after it may say how the test runs the program:
#
#   // doc-test: compile-only        built, not run (training runs and other slow programs)
#   // doc-test: args --steps=3      arguments for the run (shell-style words; may repeat)
#   // doc-test: expect ^loss [0-9]  an extended regex some output line must match (may repeat)
#
# Each example NAME becomes <build>/tests/doc_examples/NAME.cc (with #line directives, so compiler
# errors point at the markdown file), an executable doc_NAME linked to kiln::kiln and built with
# kiln's warnings, and, unless compile-only, a ctest `doc.NAME` (labels unit and doc) that runs it
# in its own folder through tests/docs/run_example.sh. The target doc_examples builds them all.
# Editing a markdown file re-runs the configure step; a new file under a scanned folder is picked
# up at the next build.

# Reads `md_file` and sets, in the caller's scope: <prefix>_NAMES (the examples in file order) and,
# for each NAME, <prefix>_<NAME>_LINE (line of its `// example:` marker), _CODE (the program),
# _RUN (TRUE unless compile-only), _ARGS (a list) and _EXPECTS (the regexes, one per line). A malformed marker is a fatal
# error naming the file and line. Works in script mode too (cmake -P), for the scanner's tests.
function(kiln_doc_examples_scan md_file prefix)
  file(READ "${md_file}" rest)
  string(REPLACE "\r\n" "\n" rest "${rest}")
  # With a newline in front, every fence follows a newline, and the line of any character is the
  # number of newlines before it.
  set(rest "\n${rest}")
  set(open "\n```cpp\n")
  string(LENGTH "${open}" open_len)
  set(lines 0)  # newlines before `rest` (the part not yet scanned)
  set(names "")
  while(TRUE)
    string(FIND "${rest}" "${open}" pos)
    if(pos EQUAL -1)
      break()
    endif()
    math(EXPR body_start "${pos} + ${open_len}")
    string(SUBSTRING "${rest}" 0 ${body_start} before)
    kiln_doc_examples_count_newlines("${before}" n)
    math(EXPR first_line "${lines} + ${n}")
    string(SUBSTRING "${rest}" ${body_start} -1 rest)
    string(FIND "${rest}" "\n```" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${md_file}:${first_line}: a ```cpp block is not closed")
    endif()
    string(SUBSTRING "${rest}" 0 ${close} body)
    kiln_doc_examples_count_newlines("${body}" n)
    math(EXPR lines "${first_line} + ${n} + 1")
    math(EXPR close "${close} + 1")
    string(SUBSTRING "${rest}" ${close} -1 rest)  # from the closing fence on
    set(body "${body}\n")

    if(NOT body MATCHES "^// example:")
      continue()  # a fragment, not a program
    endif()
    if(NOT body MATCHES "^// example: ([A-Za-z0-9_]+)\n")
      message(FATAL_ERROR "${md_file}:${first_line}: expected `// example: NAME`, NAME made of letters, "
                          "digits and underscores")
    endif()
    set(name "${CMAKE_MATCH_1}")
    if(name IN_LIST names)
      message(FATAL_ERROR "${md_file}:${first_line}: doc example '${name}' is defined twice in this file "
                          "(first at line ${${prefix}_${name}_LINE})")
    endif()
    list(APPEND names "${name}")
    set(${prefix}_${name}_LINE ${first_line})
    set(run TRUE)
    set(args "")
    set(expects "")
    # The `// doc-test:` lines right after the marker.
    string(FIND "${body}" "\n" eol)
    math(EXPR eol "${eol} + 1")
    string(SUBSTRING "${body}" ${eol} -1 after)
    set(line ${first_line})
    while(after MATCHES "^// doc-test:([^\n]*)\n")
      math(EXPR line "${line} + 1")
      string(STRIP "${CMAKE_MATCH_1}" directive)
      string(LENGTH "${CMAKE_MATCH_0}" len)
      string(SUBSTRING "${after}" ${len} -1 after)
      if(directive STREQUAL "compile-only")
        set(run FALSE)
      elseif(directive MATCHES "^args (.+)$")
        separate_arguments(words UNIX_COMMAND "${CMAKE_MATCH_1}")
        list(APPEND args ${words})
      elseif(directive MATCHES "^expect (.+)$")
        string(APPEND expects "${CMAKE_MATCH_1}\n")  # lines, not a list: regexes may hold ; and [
      else()
        message(FATAL_ERROR "${md_file}:${line}: unknown `// doc-test: ${directive}` (expected "
                            "compile-only, args WORDS... or expect REGEX)")
      endif()
    endwhile()
    set(${prefix}_${name}_LINE ${first_line} PARENT_SCOPE)
    set(${prefix}_${name}_CODE "${body}" PARENT_SCOPE)
    set(${prefix}_${name}_RUN ${run} PARENT_SCOPE)
    set(${prefix}_${name}_ARGS "${args}" PARENT_SCOPE)
    set(${prefix}_${name}_EXPECTS "${expects}" PARENT_SCOPE)
  endwhile()
  set(${prefix}_NAMES "${names}" PARENT_SCOPE)
endfunction()

# Sets `out` to the number of newlines in `text`.
function(kiln_doc_examples_count_newlines text out)
  string(LENGTH "${text}" with)
  string(REPLACE "\n" "" without "${text}")
  string(LENGTH "${without}" less)
  math(EXPR n "${with} - ${less}")
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# Scans the markdown `files` in order, as kiln_doc_examples_scan does one, and sets in the caller's
# scope <prefix>_NAMES (all examples) and, for each NAME, <prefix>_<NAME>_FILE besides the
# variables above. Two examples with one NAME, in one file or in two, are a fatal error naming both
# places.
function(kiln_doc_examples_collect prefix)
  set(all "")
  foreach(md IN LISTS ARGN)
    kiln_doc_examples_scan("${md}" one)
    foreach(name IN LISTS one_NAMES)
      if(name IN_LIST all)
        message(FATAL_ERROR "doc example '${name}' is defined twice: ${${prefix}_${name}_FILE}:"
                            "${${prefix}_${name}_LINE} and ${md}:${one_${name}_LINE}")
      endif()
      list(APPEND all "${name}")
      set(${prefix}_${name}_FILE "${md}")
      set(${prefix}_${name}_LINE "${one_${name}_LINE}")
      set(${prefix}_${name}_FILE "${md}" PARENT_SCOPE)
      foreach(field LINE CODE RUN ARGS EXPECTS)
        set(${prefix}_${name}_${field} "${one_${name}_${field}}" PARENT_SCOPE)
      endforeach()
    endforeach()
  endforeach()
  set(${prefix}_NAMES "${all}" PARENT_SCOPE)
endfunction()

# kiln_add_doc_examples(FILES file.md... DIRS folder...): the doc examples of the given markdown
# files and of every *.md in the folders, as described at the top.
function(kiln_add_doc_examples)
  cmake_parse_arguments(ARG "" "" "FILES;DIRS" ${ARGN})
  set(files ${ARG_FILES})
  foreach(dir IN LISTS ARG_DIRS)
    file(GLOB found CONFIGURE_DEPENDS "${dir}/*.md")
    list(SORT found)
    list(APPEND files ${found})
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${files})
  kiln_doc_examples_collect(doc ${files})

  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/doc_examples")
  file(MAKE_DIRECTORY "${out_dir}")
  set(run "${PROJECT_SOURCE_DIR}/tests/docs/run_example.sh")
  add_custom_target(doc_examples)  # builds them all: cmake --build <dir> --target doc_examples
  if(KILN_PRECOMPILED_HEADERS)
    # One precompiled <kiln/kiln.h> for all of them, built with their flags (tests/CMakeLists.txt's
    # option). An example must still include kiln itself (checked below), as a reader's copy would.
    add_library(kiln_doc_pch OBJECT "${PROJECT_SOURCE_DIR}/tests/pch.cc")
    target_link_libraries(kiln_doc_pch PRIVATE kiln::kiln)
    kiln_set_warnings(kiln_doc_pch)
    target_precompile_headers(kiln_doc_pch PRIVATE <kiln/kiln.h>)
  endif()
  foreach(name IN LISTS doc_NAMES)
    # The program, its lines mapped back to the markdown file for compiler messages.
    set(source "${out_dir}/${name}.cc")
    set(code "#line ${doc_${name}_LINE} \"${doc_${name}_FILE}\"\n${doc_${name}_CODE}")
    set(old "")
    if(EXISTS "${source}")
      file(READ "${source}" old)
    endif()
    if(NOT old STREQUAL code)
      file(WRITE "${source}" "${code}")  # only when changed: no needless rebuilds
    endif()
    if(NOT doc_${name}_CODE MATCHES "\n#include [<\"]kiln/")
      message(FATAL_ERROR "${doc_${name}_FILE}:${doc_${name}_LINE}: doc example '${name}' includes no kiln "
                          "header (it must build as a reader would copy it)")
    endif()
    add_executable(doc_${name} "${source}")
    target_link_libraries(doc_${name} PRIVATE kiln::kiln)
    kiln_set_warnings(doc_${name})
    if(KILN_PRECOMPILED_HEADERS)
      target_precompile_headers(doc_${name} REUSE_FROM kiln_doc_pch)
    endif()
    add_dependencies(doc_examples doc_${name})

    if(doc_${name}_RUN)
      set(run_dir "${out_dir}/${name}.run")
      file(MAKE_DIRECTORY "${run_dir}")
      file(WRITE "${out_dir}/${name}.expect" "${doc_${name}_EXPECTS}")
      add_test(NAME doc.${name}
        COMMAND ${run} "${out_dir}/${name}.expect" $<TARGET_FILE:doc_${name}> ${doc_${name}_ARGS}
        WORKING_DIRECTORY "${run_dir}")
      set_tests_properties(doc.${name} PROPERTIES LABELS "unit;doc" TIMEOUT 300)
    endif()
  endforeach()
  list(LENGTH doc_NAMES count)
  message(STATUS "kiln: ${count} doc examples")
endfunction()
