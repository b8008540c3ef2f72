// libkiln_sentencepiece.so: SentencePiece's processor behind a C interface (see
// sentencepiece_module.h for why it is a module of its own).

#include "tokenizers/sentencepiece_module.h"

#include <sentencepiece_processor.h>

#include <exception>
#include <string>
#include <vector>

namespace {

using Processor = sentencepiece::SentencePieceProcessor;

void Send(KilnSpmBytes out, void* ctx, const std::string& s) { out(ctx, s.data(), s.size()); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* kiln_spm_load(const char* path, KilnSpmBytes error, void* ctx) {
  try {
    auto* p = new Processor();
    const auto status = p->Load(path);
    if (!status.ok()) {
      Send(error, ctx, status.ToString());
      delete p;
      return nullptr;
    }
    return p;
  } catch (const std::exception& e) {
    Send(error, ctx, e.what());
    return nullptr;
  }
}

__attribute__((visibility("default"))) void kiln_spm_free(void* processor) {
  delete static_cast<Processor*>(processor);
}

__attribute__((visibility("default"))) int kiln_spm_encode(const void* processor, const char* text,
                                                           size_t size, KilnSpmId emit, void* ctx,
                                                           KilnSpmBytes error, void* error_ctx) {
  try {
    std::vector<int> ids;
    const auto status = static_cast<const Processor*>(processor)->Encode(std::string_view(text, size), &ids);
    if (!status.ok()) {
      Send(error, error_ctx, status.ToString());
      return -1;
    }
    for (const int id : ids) emit(ctx, id);
    return 0;
  } catch (const std::exception& e) {
    Send(error, error_ctx, e.what());
    return -1;
  }
}

__attribute__((visibility("default"))) int kiln_spm_decode(const void* processor, const int32_t* ids,
                                                           size_t n, KilnSpmBytes out, void* ctx) {
  try {
    const std::vector<int> v(ids, ids + n);
    std::string text;
    const auto status = static_cast<const Processor*>(processor)->Decode(v, &text);
    if (!status.ok()) {
      Send(out, ctx, status.ToString());
      return -1;
    }
    Send(out, ctx, text);
    return 0;
  } catch (const std::exception& e) {
    Send(out, ctx, e.what());
    return -1;
  }
}

__attribute__((visibility("default"))) int32_t kiln_spm_size(const void* processor) {
  return static_cast<const Processor*>(processor)->GetPieceSize();
}

__attribute__((visibility("default"))) void kiln_spm_piece(const void* processor, int32_t id,
                                                           KilnSpmBytes out, void* ctx) {
  Send(out, ctx, static_cast<const Processor*>(processor)->IdToPiece(id));
}

__attribute__((visibility("default"))) int kiln_spm_is_control(const void* processor, int32_t id) {
  return static_cast<const Processor*>(processor)->IsControl(id) ? 1 : 0;
}

__attribute__((visibility("default"))) int32_t kiln_spm_special(const void* processor, int which) {
  const auto* p = static_cast<const Processor*>(processor);
  switch (which) {
    case 0:
      return p->bos_id();
    case 1:
      return p->eos_id();
    case 2:
      return p->pad_id();
    default:
      return p->unk_id();
  }
}
}
