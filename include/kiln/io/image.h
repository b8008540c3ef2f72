#pragma once
/// Images: PNG reading and writing (8-bit gray, gray+alpha, RGB, RGBA; PNG reading also takes
/// palette images and 16-bit samples, reduced to 8 bits).
///
///   Tensor img = io::ReadImage("cat.png");           // (Uint8)[H, W, C]
///   io::WriteImage("out.png", rgb.Reshape({h, w, 3}));  // Uint8, or floats in [0, 1]

#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::io {

/// Reads a PNG file as (Uint8)[H, W, C], C in {1, 2, 3, 4}. A damaged or unsupported file
/// (interlaced, bad CRC, truncated) is a kiln::Error naming it.
Tensor ReadImage(const std::string& path);
/// Writes [H, W, C] (C in {1, 3, 4}; or [H, W] as gray) as PNG, atomically: Uint8 as is, or
/// Float32/Float64 values in [0, 1], clamped and rounded to 0..255.
void WriteImage(const std::string& path, const Tensor& image);
/// Stacks images of equal shape into a batch [N, H, W, C] of `dtype` (Uint8, or floats scaled to
/// [0, 1]).
Tensor ImagesToTensor(const std::vector<Tensor>& images, DType dtype);

}  // namespace kiln::io
