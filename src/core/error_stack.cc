// Symbolisation of the stacks kiln::Error captures: function names from the dynamic linker's
// tables (dladdr) or the ELF symbol table, file:line and inlined calls from DWARF debug information
// (libdw) when the code was built with -g.

#include <cxxabi.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/core/error.h"

namespace kiln {

namespace {

// What is known about one frame.
struct Frame {
  uintptr_t pc = 0;    // The return address as captured.
  std::string name;    // Demangled function name; empty when unknown.
  std::string file;    // Source file; empty without debug information.
  int line = 0;        // Source line, with `file`.
  std::string object;  // Path of the executable or shared library holding the code.
  uintptr_t base = 0;  // Where that object is loaded.
};

std::string Demangle(const char* symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(symbol, nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(symbol);
}

// dwfl_standard_find_debuginfo ends by asking debuginfod servers over the network when the
// DEBUGINFOD_URLS environment variable is set (some distributions set it for every login shell).
// Printing an error must not wait on the network, so in that case only the local, build-id-indexed
// debug files (/usr/lib/debug/.build-id, where distribution -dbg packages put them) are looked at.
int FindLocalDebuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                       const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                       char** debuginfo_file_name) {
  static const bool debuginfod_configured = [] {
    const char* urls = std::getenv("DEBUGINFOD_URLS");
    return urls != nullptr && urls[0] != '\0';
  }();
  if (debuginfod_configured) {
    return dwfl_build_id_find_debuginfo(module, userdata, module_name, base, file_name, debuglink_file,
                                        debuglink_crc, debuginfo_file_name);
  }
  return dwfl_standard_find_debuginfo(module, userdata, module_name, base, file_name, debuglink_file,
                                      debuglink_crc, debuginfo_file_name);
}

using DwflPtr = std::unique_ptr<Dwfl, decltype(&dwfl_end)>;

// A libdwfl session over the modules loaded in this process right now. A fresh one per stack keeps
// it in step with libraries loaded (or unloaded) since the last one. Null if /proc is unreadable.
DwflPtr OpenSelf() {
  static const Dwfl_Callbacks callbacks = {
      .find_elf = dwfl_linux_proc_find_elf,
      .find_debuginfo = FindLocalDebuginfo,
      .section_address = nullptr,
      .debuginfo_path = nullptr,
  };
  DwflPtr dwfl(dwfl_begin(&callbacks), &dwfl_end);
  if (!dwfl) return {nullptr, &dwfl_end};
  dwfl_report_begin(dwfl.get());
  const int failed = dwfl_linux_proc_report(dwfl.get(), getpid());
  if (dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0 || failed != 0) return {nullptr, &dwfl_end};
  return dwfl;
}

// The function a DWARF subprogram or inlined-subroutine entry stands for, fully qualified. The
// linkage name, demangled, says it all, but GCC omits it for some inlined instances (templates of
// local lambdas, say); then the bare name is qualified with the scopes around its declaration.
std::string DieFunctionName(Dwarf_Die* die) {
  Dwarf_Attribute attribute;
  for (int name : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (const char* linkage = dwarf_formstring(dwarf_attr_integrate(die, name, &attribute))) {
      return Demangle(linkage);
    }
  }
  const char* bare = dwarf_diename(die);
  if (bare == nullptr) return "";
  // From the inlined instance to its abstract instance, and from there to the declaration, which
  // sits inside its namespaces and classes.
  Dwarf_Die declaration = *die, next;
  for (int reference : {DW_AT_abstract_origin, DW_AT_specification}) {
    Dwarf_Attribute* link = dwarf_attr(&declaration, reference, &attribute);
    if (link != nullptr && dwarf_formref_die(link, &next) != nullptr) declaration = next;
  }
  std::string qualified = bare;
  Dwarf_Die* scopes = nullptr;
  const int num_scopes = dwarf_getscopes_die(&declaration, &scopes);
  for (int i = 1; i < num_scopes; ++i) {  // scopes[0] is the declaration itself.
    const int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
        tag != DW_TAG_union_type) {
      continue;
    }
    const char* scope = dwarf_diename(&scopes[i]);
    qualified.insert(0, std::string(scope != nullptr          ? scope
                                    : tag == DW_TAG_namespace ? "(anonymous namespace)"
                                                              : "{anonymous}") +
                            "::");
  }
  std::free(scopes);
  return qualified;
}

// The compilation unit (with debug information) holding `address`, and in `bias` what to subtract
// from addresses to get DWARF ones. libdw 0.188 looks units up only in .debug_aranges, which clang
// does not emit by default: failing that, each unit is asked whether it covers the address.
Dwarf_Die* UnitAt(Dwfl_Module* module, Dwarf_Addr address, Dwarf_Addr* bias, Dwarf_Die* storage) {
  if (Dwarf_Die* unit = dwfl_module_addrdie(module, address, bias)) return unit;
  Dwarf* dwarf = dwfl_module_getdwarf(module, bias);
  if (dwarf == nullptr) return nullptr;
  Dwarf_CU* cu = nullptr;
  while (dwarf_get_units(dwarf, cu, &cu, nullptr, nullptr, storage, nullptr) == 0) {
    if (dwarf_haspc(storage, address - *bias) > 0) return storage;
  }
  return nullptr;
}

// The entries of the functions around `pc`, innermost first, as nested in the compiled code: an
// inlined instance inside its caller (inlined itself, maybe), inside the real function. Only the
// innermost is taken from dwarf_getscopes, which goes on from an inlined instance to its abstract
// definition rather than its caller; dwarf_getscopes_die gives that one's enclosing entries.
int FunctionScopes(Dwarf_Die* unit, Dwarf_Addr pc, Dwarf_Die** chain) {
  Dwarf_Die* scopes = nullptr;
  const int num_scopes = dwarf_getscopes(unit, pc, &scopes);
  int count = 0;
  for (int i = 0; i < num_scopes; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) {
      count = dwarf_getscopes_die(&scopes[i], chain);
      break;
    }
  }
  std::free(scopes);
  return count;
}

// Appends `frame` (at `address`, in `module`) with its file:line, preceded by the functions
// inlined at that address, when the module has debug information.
void AppendWithSource(Dwfl_Module* module, uintptr_t address, Frame frame, std::vector<Frame>& out) {
  Dwarf_Addr bias = 0;
  Dwarf_Die unit_storage;
  Dwarf_Die* unit = UnitAt(module, address, &bias, &unit_storage);
  if (unit == nullptr) {
    out.push_back(std::move(frame));
    return;
  }
  // The line of the innermost code at the address, inlined or not.
  std::string file;
  int line = 0;
  if (Dwarf_Line* source = dwarf_getsrc_die(unit, address - bias)) {
    const char* name = dwarf_linesrc(source, nullptr, nullptr);
    if (name != nullptr && dwarf_lineno(source, &line) == 0) file = name;
  }
  // Each inlined instance in the chain says where in its caller it was inlined.
  Dwarf_Die* scopes = nullptr;
  const int num_scopes = FunctionScopes(unit, address - bias, &scopes);
  for (int i = 0; i < num_scopes; ++i) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    Frame inlined = frame;
    inlined.name = DieFunctionName(&scopes[i]);
    inlined.file = std::exchange(file, std::string());
    inlined.line = std::exchange(line, 0);
    out.push_back(std::move(inlined));
    Dwarf_Attribute attribute;
    Dwarf_Word call_file = 0, call_line = 0;
    Dwarf_Files* files = nullptr;
    size_t num_files = 0;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attribute), &call_line) == 0 &&
        dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attribute), &call_file) == 0 &&
        dwarf_getsrcfiles(unit, &files, &num_files) == 0 && call_file < num_files) {
      if (const char* name = dwarf_filesrc(files, call_file, nullptr, nullptr)) file = name;
      line = static_cast<int>(call_line);
    }
  }
  std::free(scopes);
  if (!file.empty() && line > 0) {
    frame.file = std::move(file);
    frame.line = line;
  }
  out.push_back(std::move(frame));
}

// Appends the frames of one return address, innermost first: the functions inlined there (the
// compiler merged them into their caller, so backtrace() cannot see them), then the function
// that actually made the call.
void Describe(Dwfl* dwfl, void* return_address, std::vector<Frame>& out) {
  Frame frame;
  frame.pc = reinterpret_cast<uintptr_t>(return_address);
  // A return address points after the call instruction, possibly into the next line or even the
  // next function (after a call that never returns); one byte back is inside the call itself.
  const uintptr_t address = frame.pc - 1;
  Dl_info info{};
  if (frame.pc != 0 && dladdr(reinterpret_cast<void*>(address), &info) != 0) {
    if (info.dli_fname != nullptr) frame.object = info.dli_fname;
    frame.base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    if (info.dli_sname != nullptr) frame.name = Demangle(info.dli_sname);
  }
  Dwfl_Module* module = frame.pc != 0 && dwfl != nullptr ? dwfl_addrmodule(dwfl, address) : nullptr;
  if (module == nullptr) {
    out.push_back(std::move(frame));
    return;
  }
  if (frame.object.empty()) {
    Dwarf_Addr start = 0;
    if (const char* name =
            dwfl_module_info(module, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr)) {
      frame.object = name;
      frame.base = start;
    }
  }
  // dladdr sees only exported (dynamic) symbols; the full ELF symbol table also names static
  // functions and everything in executables not linked with -rdynamic.
  if (frame.name.empty()) {
    if (const char* symbol = dwfl_module_addrname(module, address)) frame.name = Demangle(symbol);
  }
  AppendWithSource(module, address, std::move(frame), out);
}

// Where kiln itself is loaded, when it is a shared library of its own (CMake defines
// kiln_EXPORTS when compiling a shared `kiln`). In a static build kiln shares its object with the
// program, so the object cannot tell kiln's frames apart and only names are used.
uintptr_t KilnBase() {
#ifdef kiln_EXPORTS
  static const char marker = 0;
  static const uintptr_t base = [] {
    Dl_info info{};
    return dladdr(&marker, &info) != 0 ? reinterpret_cast<uintptr_t>(info.dli_fbase) : uintptr_t{0};
  }();
  return base;
#else
  return 0;
#endif
}

// The qualified function name in a demangled one: function templates come with their return type
// first ("void kiln::detail::Throw<int>(...)", "kiln::Tensor Make<int>()"), which must not be
// taken for the function's namespace. The name starts after the last space outside brackets
// before the parameter list.
std::string_view QualifiedName(std::string_view name) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (depth == 0) {
      if (name.substr(i).starts_with("operator")) break;  // "operator<<", "operator()"...
      if (c == ' ') start = i + 1;
      const bool nested =
          name.substr(0, i).ends_with("decltype") || name.substr(i).starts_with("(anonymous namespace)");
      if (c == '(' && !nested) break;  // The parameter list.
    }
    if (c == '<' || c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == '>' || c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return name.substr(start);
}

bool InKiln(const Frame& frame) {
  if (frame.base != 0 && frame.base == KilnBase()) return true;
  // Kiln templates and inline functions compiled into user code, and all of kiln in static builds.
  return QualifiedName(frame.name).starts_with("kiln::");
}

// The C runtime frames that call main (seen only when main itself could not be named) or start a
// thread's function.
bool IsStartup(const Frame& frame) {
  const std::string_view name = frame.name;
  return name == "_start" || name.starts_with("__libc_start") || name == "start_thread" || name == "clone" ||
         name == "__clone" || name == "__clone3";
}

std::string Format(const Frame& frame) {
  std::string where = !frame.name.empty()    ? frame.name
                      : frame.object.empty() ? fmt::format("[{:#x}]", frame.pc)
                                             : fmt::format("[{}+{:#x}]", frame.object, frame.pc - frame.base);
  if (frame.file.empty()) return fmt::format("  at {}", where);
  return fmt::format("  at {} ({}:{})", where, frame.file, frame.line);
}

}  // namespace

std::string Error::SymbolizeFrames(const std::vector<void*>& frames) {
  std::vector<Frame> described;
  described.reserve(frames.size());
  {
    // elfutils does not promise that separate Dwfl sessions may run concurrently (its
    // thread-safety is a build option), and printing errors is rare: one stack at a time.
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    DwflPtr dwfl = OpenSelf();
    for (void* address : frames) Describe(dwfl.get(), address, described);
  }

  // Nothing below main (or a thread's start routine) is of interest: C runtime start-up.
  size_t end = described.size();
  for (size_t i = 0; i < described.size(); ++i) {
    if (described[i].name == "main") {
      end = i + 1;
      break;
    }
  }
  while (end > 0 && IsStartup(described[end - 1])) --end;

  // Drop kiln's own frames, so that the stack starts at the user's call into kiln; but a stack
  // that is all kiln (an error inside a kiln thread, say) is shown whole rather than not at all.
  std::vector<const Frame*> shown;
  for (size_t i = 0; i < end; ++i) {
    if (!InKiln(described[i])) shown.push_back(&described[i]);
  }
  if (shown.empty()) {
    for (size_t i = 0; i < end; ++i) shown.push_back(&described[i]);
  }

  std::string text;
  for (const Frame* frame : shown) {
    if (!text.empty()) text += '\n';
    text += Format(*frame);
  }
  return text;
}

}  // namespace kiln
