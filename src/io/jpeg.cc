// JPEG through libjpeg. libjpeg reports errors by calling error_exit, whose default ends the
// process; ours longjmps back to the decoding function, which frees libjpeg's state and throws.
// Warnings (corrupt data, a premature end of file) are treated as errors too: libjpeg would
// otherwise fill the missing part with gray and call it success. Between setjmp and any
// longjmp only C objects and objects declared before setjmp are alive, so no C++ destructor is
// skipped.

#include "io/jpeg.h"

#include <jpeglib.h>

#include <algorithm>
#include <climits>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace kiln::io::jpeg_codec {

namespace {

struct ErrorManager {
  jpeg_error_mgr mgr;  // First member: libjpeg's pointer to it is a pointer to this.
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void OnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void OnMessage(j_common_ptr cinfo, int level) {
  if (level < 0) OnError(cinfo);  // A warning: the data is damaged.
}

void InitErrors(ErrorManager& err) {
  jpeg_std_error(&err.mgr);
  err.mgr.error_exit = OnError;
  err.mgr.emit_message = OnMessage;
  err.message[0] = '\0';
}

/// The most decoded samples a JPEG byte can stand for (see DecodeJpeg).
constexpr uint64_t kMaxJpegRatio = 2048;

}  // namespace

bool IsJpeg(const std::string& bytes) {
  return bytes.size() >= 3 && static_cast<uint8_t>(bytes[0]) == 0xFF &&
         static_cast<uint8_t>(bytes[1]) == 0xD8 && static_cast<uint8_t>(bytes[2]) == 0xFF;
}

Tensor DecodeJpeg(const std::string& path, const std::string& bytes) {
  std::vector<uint8_t> pixels;
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  InitErrors(err);
  cinfo.err = &err.mgr;
  // Set by the code after setjmp and read after a longjmp: volatile, as C requires.
  volatile bool created = false;
  volatile int bad_channels = 0;
  volatile bool too_large = false;
  if (setjmp(err.jump) != 0) {
    if (created) jpeg_destroy_decompress(&cinfo);
    kiln::detail::Throw("ReadImage {}: damaged JPEG: {}", path, err.message);
  }
  jpeg_create_decompress(&cinfo);
  created = true;
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  // Every 8x8 block of every component costs at least one bit of coded data, so a file of n
  // bytes holds at most about 64 · 8 · n samples per component (more with subsampled chroma):
  // a header claiming more than kMaxJpegRatio samples per byte is refused before the pixels
  // (or libjpeg's own buffers, bounded alike) are allocated.
  const uint64_t samples = static_cast<uint64_t>(cinfo.image_width) * cinfo.image_height *
                           static_cast<uint64_t>(std::max(cinfo.num_components, 1));
  const uint64_t limit = static_cast<uint64_t>(bytes.size()) * kMaxJpegRatio + (1u << 16);
  cinfo.mem->max_memory_to_use = static_cast<long>(std::min<uint64_t>(4 * limit + (64u << 20), LONG_MAX));
  if (samples > limit) {
    too_large = true;
  } else if (cinfo.num_components != 1 && cinfo.num_components != 3) {
    bad_channels = cinfo.num_components;
  } else {
    cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    const size_t stride =
        static_cast<size_t>(cinfo.output_width) * static_cast<size_t>(cinfo.output_components);
    pixels.resize(stride * cinfo.output_height);
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = pixels.data() + stride * cinfo.output_scanline;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
  }
  const int64_t h = cinfo.output_height, w = cinfo.output_width, c = cinfo.output_components;
  const uint64_t declared_w = cinfo.image_width, declared_h = cinfo.image_height;
  jpeg_destroy_decompress(&cinfo);
  if (too_large)
    kiln::detail::Throw("ReadImage {}: a {}-byte JPEG cannot hold the {}x{} pixels its header declares", path,
                        bytes.size(), declared_w, declared_h);
  if (bad_channels != 0)
    kiln::detail::Throw("ReadImage {}: JPEG with {} components (CMYK?) is not supported: 1 or 3", path,
                        static_cast<int>(bad_channels));
  return Tensor::FromFlat(Shape(DType::Uint8, {h, w, c}), pixels);
}

std::string EncodeJpeg(const std::string& path, const std::vector<uint8_t>& pixels, int64_t h, int64_t w,
                       int64_t c, int quality) {
  if (c != 1 && c != 3) kiln::detail::Throw("WriteImage {}: JPEG takes 1 or 3 channels, not {}", path, c);
  if (h > 65500 || w > 65500) kiln::detail::Throw("WriteImage {}: {}x{} is too large for JPEG", path, h, w);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_compress_struct cinfo;
  ErrorManager err;
  InitErrors(err);
  cinfo.err = &err.mgr;
  volatile bool created = false;
  if (setjmp(err.jump) != 0) {
    if (created) jpeg_destroy_compress(&cinfo);
    std::free(out);
    kiln::detail::Throw("WriteImage {}: JPEG encoding failed: {}", path, err.message);
  }
  jpeg_create_compress(&cinfo);
  created = true;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = static_cast<int>(c);
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(w * c);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto* row = const_cast<JSAMPROW>(pixels.data() + stride * cinfo.next_scanline);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string result(reinterpret_cast<const char*>(out), size);
  std::free(out);
  return result;
}

}  // namespace kiln::io::jpeg_codec
