// FromSentencePiece: SentencePiece .model files through the SentencePiece library, loaded as
// libkiln_sentencepiece.so into a link-map namespace of its own (sentencepiece_module.h says why).

#include "tokenizers/sentencepiece.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "core/check.h"
#include "io/read_file.h"
#include "kiln/tokenizers/tokenizer.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/sentencepiece_module.h"

namespace kiln::tokenizers {

namespace {

constexpr char kModuleName[] = "libkiln_sentencepiece.so";

struct Module {
  decltype(&kiln_spm_load) load = nullptr;
  decltype(&kiln_spm_free) free = nullptr;
  decltype(&kiln_spm_encode) encode = nullptr;
  decltype(&kiln_spm_decode) decode = nullptr;
  decltype(&kiln_spm_size) size = nullptr;
  decltype(&kiln_spm_piece) piece = nullptr;
  decltype(&kiln_spm_is_control) is_control = nullptr;
  decltype(&kiln_spm_special) special = nullptr;
  std::string error;  // why the module could not be loaded
};

/// The module beside the library that holds this code (libkiln.so's folder, built or
/// installed), else by name through the dynamic linker's search path.
std::string ModulePath() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ModulePath), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    const auto beside = std::filesystem::path(info.dli_fname).parent_path() / kModuleName;
    if (std::filesystem::exists(beside, ec)) return beside.string();
  }
  return kModuleName;
}

const Module& TheModule() {
  static Module m;
  static std::once_flag once;
  std::call_once(once, [] {
    // A namespace of its own: namespaces are few (glibc has 16), so the module is loaded once.
    void* h = dlmopen(LM_ID_NEWLM, ModulePath().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      m.error = e != nullptr ? e : "dlmopen failed";
      return;
    }
    const auto sym = [&](const char* name) {
      void* s = dlsym(h, name);
      if (s == nullptr && m.error.empty()) m.error = std::string(kModuleName) + " has no " + name;
      return s;
    };
    m.load = reinterpret_cast<decltype(m.load)>(sym("kiln_spm_load"));
    m.free = reinterpret_cast<decltype(m.free)>(sym("kiln_spm_free"));
    m.encode = reinterpret_cast<decltype(m.encode)>(sym("kiln_spm_encode"));
    m.decode = reinterpret_cast<decltype(m.decode)>(sym("kiln_spm_decode"));
    m.size = reinterpret_cast<decltype(m.size)>(sym("kiln_spm_size"));
    m.piece = reinterpret_cast<decltype(m.piece)>(sym("kiln_spm_piece"));
    m.is_control = reinterpret_cast<decltype(m.is_control)>(sym("kiln_spm_is_control"));
    m.special = reinterpret_cast<decltype(m.special)>(sym("kiln_spm_special"));
  });
  return m;
}

void AppendBytes(void* ctx, const char* data, size_t size) {
  static_cast<std::string*>(ctx)->append(data, size);
}
void AppendId(void* ctx, int32_t id) { static_cast<std::vector<int32_t>*>(ctx)->push_back(id); }

}  // namespace

SentencePieceModel::SentencePieceModel(const std::string& path) : path_(path) {
  io::CheckRegularFile(path, "FromSentencePiece");
  const Module& m = TheModule();
  if (!m.error.empty())
    detail::Throw("FromSentencePiece {}: cannot load the SentencePiece module {}: {}", path, kModuleName,
                  m.error);
  std::string error;
  processor_ = m.load(path.c_str(), AppendBytes, &error);
  if (processor_ == nullptr)
    detail::Throw("FromSentencePiece {}: the SentencePiece library refuses it: {}", path, error);
  const int32_t n = m.size(processor_);
  pieces_.resize(static_cast<size_t>(n));
  control_.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    m.piece(processor_, id, AppendBytes, &pieces_[id]);
    control_[id] = m.is_control(processor_, id) != 0;
    ids_.emplace(pieces_[id], id);
  }
}

SentencePieceModel::~SentencePieceModel() {
  if (processor_ != nullptr) TheModule().free(processor_);
}

void SentencePieceModel::Encode(std::string_view text, std::vector<int32_t>& ids) const {
  std::string error;
  if (TheModule().encode(processor_, text.data(), text.size(), AppendId, &ids, AppendBytes, &error) != 0)
    detail::Throw("Tokenizer::Encode ({}): the SentencePiece library failed: {}", path_, error);
}

std::string SentencePieceModel::Decode(const std::vector<int32_t>& ids) const {
  std::string out;
  if (TheModule().decode(processor_, ids.data(), ids.size(), AppendBytes, &out) != 0)
    detail::Throw("Tokenizer::Decode ({}): the SentencePiece library failed: {}", path_, out);
  return out;
}

std::optional<int32_t> SentencePieceModel::PieceToId(std::string_view piece) const {
  const auto it = ids_.find(std::string(piece));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> SentencePieceModel::Special(int which) const {
  const int32_t id = TheModule().special(processor_, which);
  if (id < 0 || id >= Size()) return std::nullopt;
  return id;
}

Tokenizer FromSentencePiece(const std::string& model_path) {
  auto m = std::make_shared<Tokenizer::Impl>();
  m->sentencepiece = std::make_shared<const SentencePieceModel>(model_path);
  m->bos = m->sentencepiece->Special(0);
  m->eos = m->sentencepiece->Special(1);
  m->pad = m->sentencepiece->Special(2);
  m->unk = m->sentencepiece->Special(3);
  m->IndexAddedTokens();
  return Tokenizer(std::move(m));
}

}  // namespace kiln::tokenizers
