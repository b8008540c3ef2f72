// A tour of kiln's tensors: creation, shapes and dtypes, printing, flat access, half precision
// and packed types, backends and shared buffers, .npy/.npz files, serialization and errors.
//
//   tensors_tour [output-directory]      (default: the current directory)

#include <kiln/kiln.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace kiln;

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : ".";
  std::filesystem::create_directories(dir);
  std::cout << "kiln " << Version() << "\n\n";

  // Tensors from C++ values; the dtype follows the C++ type.
  Tensor ids = Tensor::FromValue(std::vector<int64_t>{10, 20, 30});
  Tensor image = Tensor::FromValue(std::vector<std::vector<float>>{{0.5f, 1}, {1.5f, 2}});
  Tensor mask = Tensor::FromValue(std::vector<bool>{true, false, true});
  std::cout << "ids   " << ids.shape() << " = " << ids << "\n";
  std::cout << "image " << image.shape() << " = " << image << "\n";
  std::cout << "mask  " << mask.shape() << " = " << mask << "\n";
  std::cout << "pi    " << Tensor::FromScalar(3.14159) << "\n";

  // Long axes are elided when printed.
  std::vector<int32_t> counting(20);
  for (int32_t i = 0; i < 20; ++i) counting[i] = i * i;
  Tensor squares = Tensor::FromValue(counting);
  std::cout << "squares " << squares << "\n";

  // Flat access holds the tensor locked while the callback runs.
  double total = 0;
  squares.ConstFlatData<int32_t>([&](std::span<const int32_t> flat) {
    for (int32_t v : flat) total += v;
  });
  std::cout << "sum of squares 0..19 = " << total << "\n";
  image.MutableFlatData<float>([](std::span<float> flat) {
    for (float& v : flat) v *= 2;
  });
  std::cout << "image doubled " << image << "\n";

  // Reshape shares the data; Clone copies it.
  Tensor grid = squares.Reshape({4, -1});
  Tensor copy = grid.Clone();
  std::cout << "grid " << grid.shape() << " = " << grid << "\n";

  // Half precision rounds to nearest even; packed types store several values per byte.
  Tensor halves = Tensor::FromValue(std::vector<float16>{float16(0.1f), float16(65504.0f), float16(1e-8f)});
  Tensor brain = Tensor::FromValue(std::vector<bfloat16>{bfloat16(0.1f), bfloat16(3.0e38f)});
  std::cout << "float16  " << halves << "\n";
  std::cout << "bfloat16 " << brain << "\n";
  Tensor nibbles = Tensor::FromBytes(Shape(DType::Int4, {4}), std::vector<uint8_t>{0x21, 0xF8});
  std::cout << "int4 " << nibbles << " in " << nibbles.shape().ByteSize() << " bytes\n";

  // Backends: the default one, selected by KILN_BACKEND, and its shared buffers.
  compute::BackendPtr backend = compute::New();
  std::cout << "\nbackend: " << backend->Description() << "\n";
  Tensor shared = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {256, 256}));
  std::cout << "shared tensor " << shared.shape() << ": shared with the backend = " << shared.IsShared()
            << ", live buffer bytes = " << backend->MemoryStats().live_bytes << "\n";
  shared.FinalizeAll();
  std::cout << "after FinalizeAll: Ok = " << shared.Ok()
            << ", live buffer bytes = " << backend->MemoryStats().live_bytes << "\n";

  // NumPy files and kiln's own serialization.
  const std::string npy = (dir / "tour_image.npy").string();
  const std::string npz = (dir / "tour_arrays.npz").string();
  io::WriteNpy(npy, image);
  io::WriteNpz(npz, {{"ids", ids}, {"image", image}, {"halves", halves}}, /*compress=*/true);
  std::cout << "\nread back " << npy << ": " << io::ReadNpy(npy) << "\n";
  for (const auto& [name, tensor] : io::ReadNpz(npz))
    std::cout << "  " << npz << "[" << name << "] = " << tensor << "\n";
  std::stringstream stream;
  copy.Serialize(stream);
  std::cout << "serialized " << copy.shape() << " in " << stream.str().size()
            << " bytes; deserialized equal: " << Tensor::Deserialize(stream).Equal(copy) << "\n";

  // Mistakes are kiln::Errors whose first line says what was wrong.
  auto first_line = [](const kiln::Error& e) { return e.message(); };
  try {
    Tensor::FromValue(std::vector<std::vector<float>>{{1, 2}, {3}});
  } catch (const kiln::Error& e) {
    std::cout << "\nerror: " << first_line(e) << "\n";
  }
  try {
    image.ToVector<double>();
  } catch (const kiln::Error& e) {
    std::cout << "error: " << first_line(e) << "\n";
  }
  try {
    std::stringstream garbage("definitely not a tensor");
    Tensor::Deserialize(garbage);
  } catch (const kiln::Error& e) {
    std::cout << "error: " << first_line(e) << "\n";
  }
  std::cout << "\ntensors_tour: done\n";
  return 0;
}
