// kvlayout._core: the extension module under the Python package. It adds no logic of its own: the
// commands are the CLI's (cli/dispatch.hpp, run in-process with their output captured), names resolve
// through the specs catalog, and kernels are compiled and loaded by the native stage. The Python layer
// (python/kvlayout) turns their JSON into typed objects and their errors into exceptions.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "cli/dispatch.hpp"
#include "kernel.hpp"
#include "native/kernel_library.hpp"
#include "spec/catalog.hpp"
#include "spec/error.hpp"

#ifndef KVLAYOUT_VERSION
#define KVLAYOUT_VERSION "0"
#endif

namespace nb = nanobind;
using namespace kvlayout;

namespace {

// Raises kvlayout.errors.<name>(*args) (the Python classes carry the fields as attributes).
template <typename... Args>
void raise_python(const char* name, Args&&... args) {
  nb::object cls = nb::module_::import_("kvlayout.errors").attr(name);
  nb::object exc = cls(std::forward<Args>(args)...);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const python::ArgumentError& e) {
    raise_python("ArgumentError", e.what(), e.file, e.path, e.found, e.expected);
  } catch (const spec::SpecError& e) {
    raise_python("SpecError", e.what(), e.file, e.path, e.found, e.expected);
  } catch (const python::KernelFailure& e) {
    raise_python("KernelError", e.what(), e.code, e.meaning);
  } catch (const native::CompileError& e) {
    raise_python("CompileError", e.what());
  }
}

nb::tuple run(const std::vector<std::string>& args) {
  cli::CapturedRun r;
  {
    nb::gil_scoped_release unlocked;
    r = cli::run_captured(args);
  }
  nb::object error = nb::none();
  if (r.error) error = nb::make_tuple(r.error->what(), r.error->file, r.error->path, r.error->found, r.error->expected);
  return nb::make_tuple(r.exit_code, r.out, r.err, error, r.internal_error);
}

int main_(const std::vector<std::string>& args) {
  nb::gil_scoped_release unlocked;
  return cli::run(args);
}

native::CompileOptions compile_options(const std::string& language, const std::string& compiler,
                                       const std::vector<std::string>& flags) {
  native::CompileOptions o;
  if (language == "cuda") o.language = native::Language::Cuda;
  else if (language != "cpu") throw spec::SpecError("", "device", "\"" + language + "\"", "cpu or cuda");
  o.compiler = compiler;
  o.flags = flags;
  o.jobs = 1;
  return o;
}

std::unique_ptr<python::Kernel> compile_kernel(const std::string& source, const std::string& directory,
                                               const std::string& abi_json, const std::string& language,
                                               const std::string& compiler, const std::vector<std::string>& flags) {
  python::KernelSignature signature = python::parse_signature(abi_json);
  std::unique_ptr<native::KernelLibrary> library;
  {
    nb::gil_scoped_release unlocked;
    library = std::make_unique<native::KernelLibrary>(std::vector<std::string>{source}, directory,
                                                      compile_options(language, compiler, flags));
  }
  return std::make_unique<python::Kernel>(std::move(library), std::move(signature));
}

std::unique_ptr<python::Kernel> load_kernel(const std::string& shared_object, const std::string& abi_json) {
  python::KernelSignature signature = python::parse_signature(abi_json);
  return std::make_unique<python::Kernel>(native::KernelLibrary::load({shared_object}), std::move(signature));
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "kvlayout's native core: the CLI's commands in-process, spec lookup, kernel compilation.";
  nb::register_exception_translator(translate);

  m.def("run", &run, nb::arg("args"),
        "Runs `kvlayout ARGS...` in this process: (exit_code, stdout, stderr, spec_error, internal_error), "
        "spec_error being (message, file, path, found, expected) or None.");
  m.def("main", &main_, nb::arg("args"), "Runs `kvlayout ARGS...` with output on this process's stdout/stderr.");
  m.def("version", [] { return std::string(KVLAYOUT_VERSION); }, "The tool version the module was built as.");
  m.def("source_specs_dir", [] { return std::string(KVLAYOUT_SOURCE_SPECS_DIR); },
        "The specs/ directory of the source tree the module was built from.");
  m.def("find_layout", [](const std::string& specs, const std::string& name) {
        return spec::Catalog(specs).find_layout(name).string();
      }, nb::arg("specs"), nb::arg("name_or_path"), "The file of a layout name (or path) under a specs directory.");
  m.def("find_cache", [](const std::string& specs, const std::string& name) {
        return spec::Catalog(specs).find_cache(name).string();
      }, nb::arg("specs"), nb::arg("name_or_path"), "The file of a cache-shape name (or path) under a specs directory.");

  nb::class_<python::Kernel>(m, "Kernel", "A compiled, loaded relayout kernel with the ABI it checks calls against.")
      .def("__call__", &python::Kernel::call, nb::arg("src"), nb::arg("dst"), nb::arg("src_tables"), nb::arg("dst_tables"),
           nb::arg("num_tokens"), nb::arg("threads"),
           "Checks the arrays against the ABI, then runs the kernel with the GIL released.")
      .def("time_bare", &python::Kernel::time_bare, nb::arg("src"), nb::arg("dst"), nb::arg("src_tables"),
           nb::arg("dst_tables"), nb::arg("num_tokens"), nb::arg("threads"), nb::arg("repetitions"),
           "Seconds per bare C call, `repetitions` calls after one argument check (for overhead measurements).")
      .def_prop_ro("files", &python::Kernel::files, "The shared object(s) the kernel was loaded from.")
      .def_prop_ro("function", [](const python::Kernel& k) { return k.signature().function; })
      .def_prop_ro("max_tokens", [](const python::Kernel& k) { return k.signature().max_tokens; });

  m.def("compile_kernel", &compile_kernel, nb::arg("source"), nb::arg("directory"), nb::arg("abi_json"),
        nb::arg("device"), nb::arg("compiler"), nb::arg("flags"),
        "Compiles an emitted kernel into DIRECTORY/kernels0.so with the system compiler (nvcc for cuda) and loads it.");
  m.def("load_kernel", &load_kernel, nb::arg("shared_object"), nb::arg("abi_json"), "Loads a kernel compiled before.");
}
