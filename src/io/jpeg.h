#pragma once
// JPEG decoding and encoding with libjpeg (internal to io/image.cc).

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::io::jpeg_codec {

/// True when `bytes` start with a JPEG start-of-image marker.
bool IsJpeg(const std::string& bytes);
/// Decodes a JPEG held in memory as (Uint8)[H, W, C], C = 1 (grayscale) or 3 (RGB). Damage,
/// truncation included, is a kiln::Error naming `path`.
Tensor DecodeJpeg(const std::string& path, const std::string& bytes);
/// Encodes `pixels` (h * w * c bytes, c = 1 or 3) as a JPEG of `quality` (1..100).
std::string EncodeJpeg(const std::string& path, const std::vector<uint8_t>& pixels, int64_t h, int64_t w,
                       int64_t c, int quality);

}  // namespace kiln::io::jpeg_codec
