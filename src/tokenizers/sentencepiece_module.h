#pragma once
// Internal: the C interface of libkiln_sentencepiece.so, the module that holds the SentencePiece
// library. Debian's libsentencepiece carries its own copy of protobuf (3.14) and exports its
// symbols, which clash with the system protobuf (3.21) that kiln's ONNX code links: loaded in
// one namespace, the library aborts while loading. The module is therefore loaded with dlmopen
// into a link-map namespace of its own, and only plain C types and callbacks cross over (each
// namespace has its own C++ runtime and heap).

#include <cstddef>
#include <cstdint>

extern "C" {

/// Receives bytes (a message, a piece, decoded text).
typedef void (*KilnSpmBytes)(void* ctx, const char* data, size_t size);
/// Receives one id.
typedef void (*KilnSpmId)(void* ctx, int32_t id);

/// A SentencePieceProcessor loaded from `path`, or null with the library's message sent to `error`.
void* kiln_spm_load(const char* path, KilnSpmBytes error, void* ctx);
void kiln_spm_free(void* processor);
/// Sends the ids of `text` to `emit`; 0 on success, else the message goes to `error`.
int kiln_spm_encode(const void* processor, const char* text, size_t size, KilnSpmId emit, void* ctx,
                    KilnSpmBytes error, void* error_ctx);
/// Sends the text of `ids` to `out`; 0 on success, else the message goes to `out` and -1.
int kiln_spm_decode(const void* processor, const int32_t* ids, size_t n, KilnSpmBytes out, void* ctx);
/// The number of pieces.
int32_t kiln_spm_size(const void* processor);
/// Sends piece `id` to `out`.
void kiln_spm_piece(const void* processor, int32_t id, KilnSpmBytes out, void* ctx);
/// 1 if piece `id` is a control symbol (<s>, </s>), else 0.
int kiln_spm_is_control(const void* processor, int32_t id);
/// The id of BOS (which 0), EOS (1), PAD (2) or UNK (3); -1 when the model has none.
int32_t kiln_spm_special(const void* processor, int which);
}
