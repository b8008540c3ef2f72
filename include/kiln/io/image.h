#pragma once
/// @file
/// Images: PNG and JPEG reading and writing (8-bit gray, gray+alpha, RGB, RGBA; PNG reading also
/// takes palette images and 16-bit samples, reduced to 8 bits; JPEG is gray or RGB).
///
///   Tensor img = io::ReadImage("cat.jpg");           // (Uint8)[H, W, C]
///   io::WriteImage("out.png", rgb.Reshape({h, w, 3}));  // Uint8, or floats in [0, 1]

#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::io {

/// Reads a PNG or JPEG file (told apart by content) as (Uint8)[H, W, C]: C in {1, 2, 3, 4} for
/// PNG, 1 or 3 for JPEG. A damaged, truncated or unsupported file (interlaced PNG, CMYK JPEG) is
/// a kiln::Error naming it.
Tensor ReadImage(const std::string& path);
/// Writes [H, W, C] (C in {1, 3, 4}; or [H, W] as gray) atomically, as JPEG of `jpeg_quality`
/// (1..100; C in {1, 3}) when the name ends in .jpg or .jpeg, else as PNG: Uint8 as is, or
/// Float32/Float64 values in [0, 1], clamped and rounded to 0..255.
void WriteImage(const std::string& path, const Tensor& image, int jpeg_quality = 95);
/// Stacks images of equal shape into a batch [N, H, W, C] of `dtype` (Uint8, or floats scaled to
/// [0, 1]).
Tensor ImagesToTensor(const std::vector<Tensor>& images, DType dtype);

}  // namespace kiln::io
